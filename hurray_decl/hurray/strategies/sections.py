"""The optional sections after the buffer table (DIGEST § 5.9-5.12): shard, statistics,
extension type and composite member, each with its valid strategy and its mutants."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from hurray_decl.hurray.strategies.mutants import Value, drawn, field_mutant, header_field, mutant, reserved_field
from hurray_decl.hurray.strategies.patching import assembled, patched
from hurray_decl.hurray.strategies.tensor import SECTIONS, WITH_DATA, layouts_in, shardable, tensor_descriptors
from hurray_decl.hurray.strategies.values import other_than
from hurray_decl.hurray.tables.codes import MemberRole, Statistic
from hurray_decl.hurray.tables.element_types import BY_TAG
from hurray_decl.hurray.tables.storage import packing
from hurray_decl.hurray.tables.tags import PRIVATE_TAGS
from hurray_decl.hurray.tensor import (
    CompositeMember,
    ExtensionType,
    Shard,
    Statistics,
    TensorDescriptor,
    write_tensor_descriptor,
)
from hurray_decl.hurray.tensor.common import DYNAMIC
from hurray_decl.hurray.tensor.layouts import LAYOUTS
from hurray_decl.hurray.tensor.sections import MASK_DEFINED

ROLES = st.sampled_from(MemberRole.codes())
BYTE = st.integers(0, 255)
NOT_BOOLEAN = st.integers(2, 255)

# ================================================================ valid sections


@st.composite
def shards(draw: st.DrawFn, shape: tuple[int, ...]) -> Shard:
    offsets = tuple(draw(st.integers(0, 5)) for _ in shape)
    return Shard(parent_shape=tuple(n + o + draw(st.integers(0, 3)) for n, o in zip(shape, offsets)),
                 shard_offset=offsets)


@st.composite
def statistics(draw: st.DrawFn, nnz: int | None = None, mask: int | None = None) -> Statistics:
    computed = draw(st.integers(0, MASK_DEFINED)) if mask is None else mask
    finite = st.floats(allow_nan=False, width=64)
    n, m = sorted(draw(st.lists(st.integers(0, 255), min_size=2, max_size=2)))
    return Statistics(
        computed_mask=computed,
        nnz=nnz if nnz is not None and computed & Statistic.NNZ_VALID else draw(st.integers(0, 2**64 - 1)),
        sparsity_ratio=draw(finite), value_min=draw(finite), value_max=draw(finite), value_abs_max=draw(finite),
        value_mean=draw(finite), value_stddev=draw(st.floats(min_value=0.0, allow_nan=False)),
        nm_n=n, nm_m=m, has_nan=draw(st.integers(0, 1)), has_inf=draw(st.integers(0, 1)))


@st.composite
def extension_types(draw: st.DrawFn, width: int | None = None) -> ExtensionType:
    width = draw(st.sampled_from([1, 2, 4, 8, 16, 24])) if width is None else width
    is_float = draw(st.integers(0, 1)) if width >= 8 else 0
    return ExtensionType(bit_width=width, packing_factor=packing(width).elements, is_float=is_float,
                         is_signed=0 if is_float else draw(st.integers(0, 1)), sign_bits=is_float,
                         exponent_bits=draw(st.integers(0, 8)) * is_float,
                         mantissa_bits=draw(st.integers(0, 8)) * is_float,
                         exponent_bias=draw(st.integers(0, 2**32 - 1)) * is_float,
                         has_nan=draw(st.integers(0, 1)), has_inf=draw(st.integers(0, 1)))


def composite_members() -> st.SearchStrategy[CompositeMember]:
    return ROLES.map(lambda role: CompositeMember(member_role=role))


SECTIONS.update(shard=shards, statistics=statistics, extension_type=extension_types,
                composite_member=composite_members)

# ================================================================ shard

_SHARDED = tuple(k for k in layouts_in("dense", "sparse") if shardable(k))


def _sharded_base() -> st.SearchStrategy[Any]:
    return tensor_descriptors(layout=_SHARDED, shard=True).filter(lambda d: d.rank > 0)


@mutant("HT-SEC-04")
@st.composite
def _shard_outside(draw: st.DrawFn) -> bytes:
    d = draw(_sharded_base())
    k = draw(st.integers(0, d.rank - 1))
    beyond = draw(st.integers(d.shard.parent_shape[k] - d.shape[k] + 1, 2**64 - 1))
    return patched(write_tensor_descriptor(d), f"shard.shard_offset[{k}]", beyond)


@mutant("HT-SEC-05")
def _shard_dynamic() -> st.SearchStrategy[bytes]:
    return field_mutant(_sharded_base(), lambda draw, d: f"shard.parent_shape[{draw(st.integers(0, d.rank - 1))}]",
                        lambda draw, d: DYNAMIC)


def _shard_refused(row: Any) -> Callable[[], st.SearchStrategy[bytes]]:
    @st.composite
    def build(draw: st.DrawFn) -> bytes:  # a whole section added: no field of a valid one can do it
        d = draw(tensor_descriptors(layout=row.name))
        return assembled(d.replace(shard=draw(shards(d.shape))))
    return build


for _row in LAYOUTS:
    if _row.shard_code is not None:
        mutant(_row.shard_code)(_shard_refused(_row))

# ================================================================ statistics


def stats_of(d: TensorDescriptor) -> Statistics:
    """The statistics section of a descriptor drawn with one."""
    if d.statistics is None:
        raise ValueError("a descriptor with statistics was drawn, not one without")
    return d.statistics


def ext_of(d: TensorDescriptor) -> ExtensionType:
    """The extension type section of a descriptor drawn with a private type."""
    if d.extension_type is None:
        raise ValueError("a descriptor of a private type was drawn, not a public one")
    return d.extension_type


def _stats_field(field: str, value: Value, need: int = 0) -> st.SearchStrategy[bytes]:
    base = tensor_descriptors(statistics=True).filter(lambda d: stats_of(d).computed_mask & need == need)
    return field_mutant(base, f"statistics.{field}", value)


@mutant("HT-SEC-08")
@st.composite
def _stats_flag_byte(draw: st.DrawFn) -> bytes:
    field = draw(st.sampled_from(["has_nan", "has_inf"]))
    return draw(_stats_field(field, drawn(NOT_BOOLEAN), need=Statistic.NAN_INF_VALID))


@mutant("HT-SEC-09")
def _stats_mask() -> st.SearchStrategy[bytes]:
    reserved = st.integers(0, 2**32 - 1).map(lambda v: v & ~MASK_DEFINED).filter(bool)
    return _stats_field("computed_mask", lambda draw, d: stats_of(d).computed_mask | draw(reserved))


@mutant("HT-SEC-10")
def _stats_reserved() -> st.SearchStrategy[bytes]:
    return reserved_field(tensor_descriptors(statistics=True), "statistics.reserved")


@mutant("HT-SEC-11")
def _stats_reserved2() -> st.SearchStrategy[bytes]:
    return reserved_field(tensor_descriptors(statistics=True), "statistics.reserved2")


@mutant("HT-SEC-14")
def _stats_stddev() -> st.SearchStrategy[bytes]:
    bad = st.one_of(st.floats(max_value=-1e-300, allow_nan=False), st.just(math.nan))
    return _stats_field("value_stddev", drawn(bad), need=Statistic.VALUE_STATS_VALID)


@mutant("HT-SEC-15")
def _stats_nm() -> st.SearchStrategy[bytes]:
    base = tensor_descriptors(statistics=True).filter(
        lambda d: stats_of(d).computed_mask & Statistic.NM_SPARSITY_VALID and stats_of(d).nm_m < 255)
    return field_mutant(base, "statistics.nm_n", lambda draw, d: draw(st.integers(stats_of(d).nm_m + 1, 255)))


@mutant("HT-SEC-16")
def _stats_nnz() -> st.SearchStrategy[bytes]:
    base = tensor_descriptors(layout=layouts_in("sparse"), statistics=True).filter(
        lambda d: stats_of(d).computed_mask & Statistic.NNZ_VALID)
    return field_mutant(base, "statistics.nnz", lambda draw, d: draw(other_than(st.integers(0, 2**64 - 1),
                                                                                 _nnz(d))))


def _nnz(d: TensorDescriptor) -> int:
    layout = d.layout
    nnz = layout.stored_entries()
    if nnz is None:
        raise ValueError(f"a sparse layout was drawn, not {type(layout).__name__}")
    return nnz

# ================================================================ extension type


@mutant("HT-SEC-19")
def _private_type_no_section() -> st.SearchStrategy[bytes]:
    return header_field("type_tag", st.sampled_from(PRIVATE_TAGS), tensor_descriptors(private_type=False))


_PRIVATE_TYPED = tensor_descriptors(layout=WITH_DATA, private_type=True, quantized=False)


@mutant("HT-SEC-20")
def _section_public_type() -> st.SearchStrategy[bytes]:
    return header_field("type_tag", st.sampled_from(sorted(BY_TAG)), _PRIVATE_TYPED)


def _ext_field(field: str, value: Value, keep: Callable[[ExtensionType], bool] = lambda e: True
               ) -> st.SearchStrategy[bytes]:
    return field_mutant(_PRIVATE_TYPED.filter(lambda d: keep(ext_of(d))), f"extension_type.{field}", value)


def _whole_bytes(e: ExtensionType) -> bool:
    return e.bit_width >= 8


def _integer(e: ExtensionType) -> bool:
    return e.is_float == 0


@mutant("HT-SEC-21")
@st.composite
def _ext_boolean(draw: st.DrawFn) -> bytes:
    field = draw(st.sampled_from(["is_float", "is_signed", "has_nan", "has_inf"]))
    return draw(_ext_field(field, drawn(NOT_BOOLEAN), _whole_bytes if field == "is_float" else lambda e: True))


@mutant("HT-SEC-22")
def _ext_width_zero() -> st.SearchStrategy[bytes]:
    return _ext_field("bit_width", lambda draw, d: 0)


@mutant("HT-SEC-23")
def _ext_packing_wide() -> st.SearchStrategy[bytes]:
    return _ext_field("packing_factor", drawn(other_than(BYTE, 1)), _whole_bytes)


@mutant("HT-SEC-24")
def _ext_width_odd() -> st.SearchStrategy[bytes]:
    return _ext_field("bit_width", drawn(st.sampled_from([3, 5, 6, 7])))


@mutant("HT-SEC-25")
def _ext_packing_narrow() -> st.SearchStrategy[bytes]:
    return _ext_field("packing_factor",
                      drawn(lambda d: other_than(BYTE, packing(ext_of(d).bit_width).elements)),
                      lambda e: not _whole_bytes(e))


@mutant("HT-SEC-26")
def _ext_float_signed() -> st.SearchStrategy[bytes]:
    return _ext_field("is_signed", lambda draw, d: 1, lambda e: e.is_float == 1)


@mutant("HT-SEC-27")
def _ext_sign_bits() -> st.SearchStrategy[bytes]:
    return _ext_field("sign_bits", drawn(st.integers(2, 255)))


def _ext_integer(field: str, values: st.SearchStrategy[int]) -> st.SearchStrategy[bytes]:
    return _ext_field(field, drawn(values), _integer)


@mutant("HT-SEC-28")
def _ext_int_sign() -> st.SearchStrategy[bytes]:
    return _ext_integer("sign_bits", st.just(1))


@mutant("HT-SEC-29")
def _ext_int_exponent() -> st.SearchStrategy[bytes]:
    return _ext_integer("exponent_bits", st.integers(1, 255))


@mutant("HT-SEC-30")
def _ext_int_mantissa() -> st.SearchStrategy[bytes]:
    return _ext_integer("mantissa_bits", st.integers(1, 255))


@mutant("HT-SEC-31")
def _ext_int_bias() -> st.SearchStrategy[bytes]:
    return _ext_integer("exponent_bias", st.integers(1, 2**32 - 1))


@mutant("HT-SEC-32")
def _ext_reserved() -> st.SearchStrategy[bytes]:
    return reserved_field(_PRIVATE_TYPED, "extension_type.reserved")


@mutant("HT-SEC-33")
def _ext_reserved2() -> st.SearchStrategy[bytes]:
    return reserved_field(_PRIVATE_TYPED, "extension_type.reserved2")

# ================================================================ composite member


_MEMBERS = tensor_descriptors(layout=WITH_DATA, composite_member=True)


@mutant("HT-SEC-36")
def _member_role() -> st.SearchStrategy[bytes]:
    return field_mutant(_MEMBERS, "composite_member.member_role", drawn(other_than(BYTE, *MemberRole.codes())))


@mutant("HT-SEC-37")
def _member_reserved() -> st.SearchStrategy[bytes]:
    return reserved_field(_MEMBERS, "composite_member.reserved")


@mutant("HT-SEC-38")
@st.composite
def _head_member(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout=layouts_in("virtual")))  # a whole section added to a head
    return assembled(d.replace(composite_member=draw(composite_members())))

