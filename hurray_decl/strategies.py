"""Hypothesis strategies for Hurray descriptors: valid ones, their buffers, and rule-labelled
mutants (needs the ``hypothesis`` package).

Valid descriptors
    ``quantization_descriptors(scheme)`` draws quantization descriptor models of one scheme (all
    built-in schemes when ``scheme`` is None); ``quantization_payloads`` their encodings,
    optionally followed by writer padding. ``tensor_descriptors(...)`` draws whole tensor
    descriptors: every public layout, the five schemes, each optional section, and buffer tables
    whose sizes, placement and parameter buffers are consistent. ``buffers_for(descriptor)``
    draws buffer contents that also satisfy the rules that read data (scales finite and
    non-zero, zero points in range, zeroed padding, sparse and block-table invariants).

Mutants
    ``invalid_tensor_descriptors(rule=None)`` draws ``(bytes, rule_id)``: a valid descriptor,
    encoded, then changed in the field that ``rule_id`` governs so that a reader must refuse it
    with that rule. There is one generator per *reader rule* of the HQ-*, HT-* and HE-* areas
    (role ``reader`` or ``both``, needs without ``data``); :data:`MUTANTS` holds them, keyed by
    rule ID. ``invalid_buffers(rule=None)`` draws ``(descriptor bytes, buffers, rule_id)`` for
    the data rules (:data:`DATA_MUTANTS`): a valid descriptor whose buffer contents, drawn by
    ``buffers_for`` and then changed in one value, break the rule (parameter values, sparse and
    block-table invariants, padding bits, float8_e8m0 data). ``validate_buffers`` refuses them.

    Rules of role ``writer`` or ``codec`` are never mutant targets (a reader cannot refuse them).
    The reader rules without a generator are listed in :data:`NOT_REFUSABLE` with the reason:
    acceptance rules (they say what is *accepted*), wire-layout rules whose breach only shows as
    another rule (a short section is HT-HDR-08/HQ-HDR-04, a long one HT-HDR-09 or writer
    padding), and rules that this reader has no way to break from bytes. Data rules without a
    generator are in :data:`DATA_NOT_GENERATED`.

Every flag is drawn next to the field it gates and each mutant changes one field of a drawn
valid descriptor, so shrinking stays local: a failing case shrinks to a small descriptor with
the smallest offending value. Where changing the field necessarily disturbs a later check too
(a CSF tensor of rank 2 cannot keep the 2 x 3 + 1 buffers of rank 3), the rule the mutant is
labelled with is the one a reader meets first in the order of DIGEST Appendix A.

Valid descriptors never use a private layout (no reader knows one without an agreement made
out of band); ``tensor_descriptors(private_layout_id=ID)`` adds them for an ID the caller has
registered. Private element types and private device tags (accepted, HD-23) are drawn.
"""

from __future__ import annotations

import math
import struct
from typing import Any, Callable, Iterable, Sequence

from hypothesis import assume
from hypothesis import strategies as st

from .element_types import BY_NAME, BY_TAG
from .engine import SCHEMES, encode_quantization, scheme as scheme_row
from .rules import all_rules
from .schemes.mxfp import MXFP
from .schemes.nf4 import NF4
from .schemes.per_block_affine import SCALE_TYPES, PerBlockAffine
from .schemes.per_channel_affine import PerChannelAffine
from .schemes.per_tensor_affine import PerTensorAffine
from .schemes.quantization import Descriptor
from .storage import byte_size

__all__ = [
    "quantization_descriptors", "quantization_payloads", "float32s", "tensor_descriptors", "buffers_for",
    "invalid_tensor_descriptors", "invalid_buffers", "reader_rules", "data_rules", "MUTANTS", "DATA_MUTANTS",
    "NOT_REFUSABLE", "DATA_NOT_GENERATED", "LAYOUT_KINDS", "SCHEME_NAMES",
]

_indices = st.integers(min_value=0, max_value=254)
_axes = st.integers(min_value=0, max_value=63)


def float32s(*, nonzero: bool = True) -> st.SearchStrategy[float]:
    """Finite float32 values (exactly representable), optionally non-zero."""
    values = st.floats(width=32, allow_nan=False, allow_infinity=False)
    return values.filter(lambda v: v != 0.0) if nonzero else values


def _powers_of_two(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(min_value=low.bit_length() - 1, max_value=high.bit_length() - 1).map(lambda e: 1 << e)


@st.composite
def _affine_indices(draw: st.DrawFn) -> dict:
    symmetric = draw(st.booleans())
    return {
        "symmetric": symmetric,
        "scale_buffer_index": draw(_indices),
        "zero_point_buffer_index": None if symmetric else draw(_indices),
    }


@st.composite
def _per_tensor(draw: st.DrawFn) -> PerTensorAffine:
    return PerTensorAffine(
        scale=draw(float32s()),
        zero_point=draw(st.integers(min_value=-(1 << 31), max_value=(1 << 31) - 1)),
    )


@st.composite
def _per_channel(draw: st.DrawFn) -> PerChannelAffine:
    return PerChannelAffine(axis=draw(_axes), **draw(_affine_indices()))


@st.composite
def _per_block(draw: st.DrawFn) -> PerBlockAffine:
    return PerBlockAffine(
        axis=draw(_axes),
        block_size=draw(_powers_of_two(2, 1 << 31)),
        scale_type_tag=draw(st.sampled_from(sorted(SCALE_TYPES))),
        **draw(_affine_indices()),
    )


@st.composite
def _nf4(draw: st.DrawFn) -> NF4:
    return NF4(axis=draw(_axes), block_size=draw(_powers_of_two(8, 1 << 31)),
               scale_buffer_index=draw(_indices))


@st.composite
def _mxfp(draw: st.DrawFn) -> MXFP:
    return MXFP(axis=draw(_axes), block_size=draw(_powers_of_two(16, 2048)),
                scale_buffer_index=draw(_indices))


BUILDERS: dict[str, Callable[[], st.SearchStrategy[Descriptor]]] = {
    "per_tensor_affine": _per_tensor,
    "per_channel_affine": _per_channel,
    "per_block_affine": _per_block,
    "nf4": _nf4,
    "mxfp": _mxfp,
}
"""One strategy per built-in scheme, keyed by the registry row's name."""


def quantization_descriptors(scheme: int | str | None = None) -> st.SearchStrategy[Descriptor]:
    """Valid descriptor models of ``scheme`` (a tag or a name), or of every built-in scheme."""
    if scheme is None:
        return st.one_of([BUILDERS[row.name]() for row in SCHEMES if row.name in BUILDERS])
    return BUILDERS[scheme_row(scheme).name]()


@st.composite
def quantization_payloads(draw: st.DrawFn, scheme: int | str | None = None, *, padding: bool = True) -> bytes:
    """Encoded valid descriptors, followed (when ``padding``) by 0-16 bytes of writer padding."""
    descriptor = draw(quantization_descriptors(scheme))
    tail = draw(st.binary(max_size=16)) if padding else b""
    return encode_quantization(descriptor) + tail


# ================================================================ valid tensor descriptors

from .tensor import (  # noqa: E402  (after the quantization strategies, which need nothing of these)
    COO,
    CSC,
    CSF,
    CSR,
    BlockPaged,
    BufferHandle,
    ColumnMajor,
    CompositeHead,
    CompositeMember,
    ExtensionType,
    Hilbert,
    Morton,
    PrivateLayout,
    RowMajor,
    Shard,
    Statistics,
    Strided,
    TensorDescriptor,
    Tiled,
    write_tensor_descriptor,
)
from .tensor.buffers import DEVICE_CLASSES, DEVICES, HANDLE  # noqa: E402
from .tensor.common import DYNAMIC  # noqa: E402

SCHEME_NAMES = ("per_tensor_affine", "per_channel_affine", "per_block_affine", "nf4", "mxfp")
STORAGE: dict[str, tuple[str, ...]] = {name: scheme_row(name).storage_types for name in SCHEME_NAMES}
"""Each scheme's storage types, from the registry rows."""

LAYOUT_KINDS = ("row_major", "column_major", "strided", "tiled", "morton", "hilbert", "coo", "csr", "csc", "csf",
                "block_paged", "composite_head")
"""Every public layout by name; ``private`` is added when a private_layout_id is given."""
QUANTIZABLE = ("row_major", "column_major", "coo", "csr", "csc", "csf", "block_paged")
"""Layouts drawn with a quantization section (quantized strided, tiled, Morton and Hilbert
tensors are valid too, but their sizes follow other rules and are not drawn)."""
DENSE_SIZED = ("row_major", "column_major")

PRIVATE_DEVICE = 0xF2


def _pow2(low_exp: int, high_exp: int) -> st.SearchStrategy[int]:
    return st.integers(low_exp, high_exp).map(lambda e: 1 << e)


def _product(values: Iterable[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


@st.composite
def placements(draw: st.DrawFn, devices: Sequence[int] | None = None) -> tuple[int, int, int]:
    """(device_tag, sync_mode, memory_class) shared by every buffer (HT-BUFT-24/25): a pair
    from the per-device table, sync_mode 0 on CPU."""
    pool = list(devices) if devices is not None else [*DEVICES, PRIVATE_DEVICE]
    device = draw(st.sampled_from(pool))
    sync = 0 if device == 0 else draw(st.integers(0, 2))
    classes = sorted(DEVICE_CLASSES[device]) if device in DEVICE_CLASSES else [0]
    return device, sync, draw(st.sampled_from(classes))


def _handles(draw: st.DrawFn, sizes: Sequence[int], where: tuple[int, int, int]) -> tuple[BufferHandle, ...]:
    device, sync, memory_class = where
    out = []
    for size in sizes:
        alignment = draw(_pow2(6, 12)) if size else draw(_pow2(0, 12))
        out.append(BufferHandle(byte_size=size, alignment=alignment, device_tag=device, sync_mode=sync,
                                memory_class=memory_class))
    return tuple(out)


@st.composite
def _shapes(draw: st.DrawFn, rank_low: int = 1, rank_high: int = 3, dim_high: int = 6) -> tuple[int, ...]:
    return tuple(draw(st.lists(st.integers(0, dim_high), min_size=rank_low, max_size=rank_high)))


@st.composite
def _quantized_shape(draw: st.DrawFn, scheme: str, rank_low: int = 1, rank_high: int = 3) -> tuple[int, ...]:
    shape = list(draw(_shapes(rank_low, rank_high, 4)))
    if scheme == "nf4":
        shape[0] = draw(st.sampled_from([0, 8, 12, 16]))
    if scheme == "mxfp":
        shape[0] = draw(st.sampled_from([16, 32]))
    if scheme == "per_block_affine":  # a block holds >= 2 elements: no non-empty axis of 1 (HQ-PB-05)
        shape = [2 if n == 1 else n for n in shape]
    return tuple(shape)


@st.composite
def _quantization_for(draw: st.DrawFn, scheme: str, shape: tuple[int, ...], first: int,
                      paged: BlockPaged | None) -> tuple[Any, tuple[int, ...], tuple[int, int] | None]:
    """(descriptor, parameter buffer sizes from index ``first``, (axis, block) padding) of a valid
    ``scheme`` for ``shape``."""
    if scheme == "per_tensor_affine":
        return None, (), None  # the zero point is drawn once the storage type is known
    rank = len(shape)
    if scheme == "per_channel_affine":
        axis = draw(st.integers(0, rank - 1)) if paged is None else draw(st.sampled_from([1, 2]))
        size = 4 * shape[axis]
        symmetric = draw(st.booleans())
        if symmetric:
            return PerChannelAffine(axis=axis, scale_buffer_index=first, symmetric=True), (size,), None
        if draw(st.booleans()):  # scales and zero points share one entry (HQ-BUF-04)
            return (PerChannelAffine(axis=axis, scale_buffer_index=first, zero_point_buffer_index=first),
                    (2 * size,), None)
        return (PerChannelAffine(axis=axis, scale_buffer_index=first, zero_point_buffer_index=first + 1),
                (size, size), None)
    if scheme == "per_block_affine":
        scale_type = draw(st.sampled_from(sorted(SCALE_TYPES)))
        width = 4 if scale_type == 3 else 2
        if paged is not None:
            axis, block = 0, paged.page_size
            count = paged.num_pages * paged.page_size
        else:
            axis = draw(st.integers(0, rank - 1))
            extent = shape[axis]
            block = draw(_pow2(1, max(1, extent.bit_length() - 1) if extent >= 2 else 6))
            count = -(-extent // block) * _product(s for k, s in enumerate(shape) if k != axis)
        pad = (axis, block)
        symmetric = draw(st.booleans())
        if symmetric:
            return (PerBlockAffine(axis=axis, block_size=block, scale_buffer_index=first, symmetric=True,
                                   scale_type_tag=scale_type), (count * width,), pad)
        if draw(st.booleans()):
            return (PerBlockAffine(axis=axis, block_size=block, scale_buffer_index=first,
                                   zero_point_buffer_index=first, scale_type_tag=scale_type),
                    (count * width + 4 * count,), pad)
        return (PerBlockAffine(axis=axis, block_size=block, scale_buffer_index=first,
                               zero_point_buffer_index=first + 1, scale_type_tag=scale_type),
                (count * width, 4 * count), pad)
    axis = 0  # _quantized_shape gives dimension 0 a size NF4 and MXFP accept
    extent = shape[axis]
    outer = _product(shape[1:])
    if scheme == "nf4":
        block = draw(_pow2(3, max(3, extent.bit_length() - 1))) if extent else draw(_pow2(3, 10))
        return (NF4(axis=axis, block_size=block, scale_buffer_index=first), (4 * -(-extent // block) * outer,),
                (axis, block))
    block = draw(st.sampled_from([16, 32] if extent % 32 == 0 else [16]))
    return MXFP(axis=axis, block_size=block, scale_buffer_index=first), ((extent // block) * outer,), None


@st.composite
def _statistics(draw: st.DrawFn, nnz: int | None = None, mask: int | None = None) -> Statistics:
    computed = draw(st.integers(0, 0x3F)) if mask is None else mask
    finite = st.floats(allow_nan=False, width=64)
    n, m = sorted(draw(st.lists(st.integers(0, 255), min_size=2, max_size=2)))
    return Statistics(
        computed_mask=computed,
        nnz=nnz if nnz is not None and computed & 1 else draw(st.integers(0, 2**64 - 1)),
        sparsity_ratio=draw(finite), value_min=draw(finite), value_max=draw(finite), value_abs_max=draw(finite),
        value_mean=draw(finite), value_stddev=draw(st.floats(min_value=0.0, allow_nan=False)),
        nm_n=n, nm_m=m, has_nan=draw(st.integers(0, 1)), has_inf=draw(st.integers(0, 1)))


@st.composite
def _extension_types(draw: st.DrawFn, width: int | None = None) -> ExtensionType:
    width = draw(st.sampled_from([1, 2, 4, 8, 16, 24])) if width is None else width
    is_float = draw(st.integers(0, 1)) if width >= 8 else 0
    return ExtensionType(bit_width=width, packing_factor=8 // width if width < 8 else 1, is_float=is_float,
                         is_signed=0 if is_float else draw(st.integers(0, 1)), sign_bits=is_float,
                         exponent_bits=draw(st.integers(0, 8)) * is_float,
                         mantissa_bits=draw(st.integers(0, 8)) * is_float,
                         exponent_bias=draw(st.integers(0, 2**32 - 1)) * is_float,
                         has_nan=draw(st.integers(0, 1)), has_inf=draw(st.integers(0, 1)))


def _csf_counts(draw: st.DrawFn, shape: tuple[int, ...], mode_order: tuple[int, ...]) -> list[int]:
    """Node counts per CSF level: n_0 <= d_0, n_(l-1) <= n_l <= n_(l-1) * d_l (each node has a child)."""
    dims = [shape[m] for m in mode_order]
    if 0 in dims or not draw(st.booleans()):
        return [0] * len(dims)
    counts = [draw(st.integers(1, min(dims[0], 3)))]
    for d in dims[1:]:
        counts.append(draw(st.integers(counts[-1], min(counts[-1] * d, counts[-1] + 3))))
    return counts


@st.composite
def _layout_part(draw: st.DrawFn, kind: str, type_name: str | None, ext: ExtensionType | None, scheme: str | None,
                 tiled_depth: int | None, private_layout_id: int | None):
    """(shape, layout, layout_tag, buffer sizes, byte_offset, quantization) of one layout."""
    def size_of(count: int) -> int:
        return ext.packed_size(count) if ext is not None else byte_size(type_name, count)

    if kind in ("row_major", "column_major"):
        if scheme:
            shape = draw(_quantized_shape(scheme, 1))
            q, params, pad = draw(_quantization_for(scheme, shape, 1, None))
        else:
            shape, q, params, pad = draw(_shapes(0 if kind == "row_major" else 1, 3)), None, (), None
        offset = draw(st.integers(0, 8))
        padded = list(shape)
        if pad is not None:
            padded[pad[0]] = -(-shape[pad[0]] // pad[1]) * pad[1]
        size = offset + size_of(_product(padded)) + draw(st.integers(0, 3))
        return shape, RowMajor() if kind == "row_major" else ColumnMajor(), None, (size,) + params, offset, q
    if kind == "strided":
        shape = draw(_shapes(1, 3, 4))
        strides = tuple(draw(st.lists(st.integers(-3, 3), min_size=len(shape), max_size=len(shape))))
        lo = sum(min(0, s * (n - 1)) for s, n in zip(strides, shape)) if 0 not in shape else 0
        hi = sum(max(0, s * (n - 1)) for s, n in zip(strides, shape)) if 0 not in shape else 0
        bits = ext.bit_width if ext is not None else BY_NAME[type_name].bits
        offset = -(lo // 4) * 3 if bits == 6 else -(lo * bits // 8)
        return shape, Strided(strides=strides), None, (offset + size_of(hi + 1),), offset, None
    if kind == "tiled":
        shape = draw(_shapes(1, 3, 5))
        depth = draw(st.integers(1, 3)) if tiled_depth is None else tiled_depth
        level = None
        for _ in range(depth):
            outer = draw(st.sampled_from([1, 2, 3]))
            outer_strides = (tuple(draw(st.lists(st.integers(-4, 4), min_size=len(shape), max_size=len(shape))))
                             if outer == 3 else None)
            inner = draw(st.sampled_from([1, 2, 3])) if level is None else 4
            inner_strides = (tuple(draw(st.lists(st.integers(-4, 4), min_size=len(shape), max_size=len(shape))))
                             if inner == 3 else None)
            tile = tuple(draw(st.lists(st.integers(1, 3), min_size=len(shape), max_size=len(shape))))
            level = Tiled(tile_shape=tile, outer_layout=outer, inner_layout=inner, outer_strides=outer_strides,
                          inner_strides=inner_strides, nested=level)
        tiles = _product(-(-n // t) for n, t in zip(shape, level.tile_shape))
        return shape, level, None, (size_of(tiles * _product(level.tile_shape)),), 0, None
    if kind == "morton":
        shape = draw(_shapes(1, 3, 5))
        bits = tuple(max(1, (n - 1).bit_length()) + draw(st.integers(0, 1)) for n in shape)
        return shape, Morton(morton_bits=bits), None, (size_of(1 << sum(bits)),), 0, None
    if kind == "hilbert":
        rank, order = draw(st.integers(2, 3)), draw(st.integers(1, 2))
        return ((1 << order,) * rank, Hilbert(hilbert_order=order, hilbert_rank=rank), None,
                (size_of(1 << (rank * order)),), 0, None)
    if kind in ("coo", "csr", "csc", "csf"):
        rank = {"coo": None, "csr": 2, "csc": 2, "csf": 3}[kind]
        shape = draw(_quantized_shape(scheme, rank or 1, rank or 3)) if scheme else draw(
            _shapes(rank or 1, rank or 3, 5))
        capacity = _product(shape)
        if kind == "csf":
            mode_order = tuple(draw(st.permutations(range(len(shape)))))
            counts = _csf_counts(draw, shape, mode_order)
            nnz = counts[-1]
            layout: Any = CSF(nnz=nnz, mode_order=mode_order)
            if nnz:
                middle = [s for level in range(1, len(shape)) for s in (8 * (counts[level - 1] + 1), 8 * counts[level])]
                sizes: tuple[int, ...] = (size_of(nnz), 16, 8 * counts[0], *middle)
            else:
                sizes = (0, 16, 0, *([8, 0] * (len(shape) - 1)))
        else:
            nnz = draw(st.integers(0, min(capacity, 5)))
            if kind == "coo":
                layout = COO(nnz=nnz, is_sorted=draw(st.integers(0, 1)))
                sizes = (size_of(nnz), 8 * nnz * len(shape))
            else:
                layout = CSR(nnz=nnz) if kind == "csr" else CSC(nnz=nnz)
                sizes = (size_of(nnz), 8 * nnz, 8 * (shape[0 if kind == "csr" else 1] + 1))
        q, params, _ = draw(_quantization_for(scheme, shape, len(sizes), None)) if scheme else (None, (), None)
        return shape, layout, None, sizes + params, 0, q
    if kind == "block_paged":
        shape = (draw(st.integers(0, 9)), draw(st.integers(0, 3)), draw(st.integers(0, 3)))
        page = draw(st.sampled_from([2, 4])) if scheme == "per_block_affine" else draw(st.integers(1, 5))
        pages, seqs = draw(st.integers(0, 3)), draw(st.integers(0, 2))
        layout = BlockPaged(page_size=page, num_pages=pages, num_seqs=seqs, kv_role=draw(st.integers(0, 2)),
                            layer_index=draw(st.integers(0, 2**32 - 1)),
                            block_table_index_type=draw(st.integers(0, 1)))
        width = layout.index_width
        entries = draw(st.integers(0, 4)) if pages and seqs else 0  # seq_ptr[num_seqs] = entries (HT-LAY-58)
        sizes = (size_of(pages * page * shape[1] * shape[2]), width * entries, width * (seqs + 1))
        q, params, _ = draw(_quantization_for(scheme, shape, 3, layout)) if scheme else (None, (), None)
        return shape, layout, None, sizes + params, 0, q
    if kind == "private":
        shape = draw(_shapes(1, 2))
        layout = PrivateLayout(extension_layout_id=private_layout_id, extension_data=draw(st.binary(max_size=12)))
        return shape, layout, draw(st.integers(0xF0, 0xFE)), (draw(st.integers(0, 64)),), 0, None
    raise ValueError(f"unknown layout kind {kind!r}")


def _names(value: str | Iterable[str] | None, every: Sequence[str]) -> tuple[str, ...]:
    if value is None:
        return tuple(every)
    names = (value,) if isinstance(value, str) else tuple(value)
    unknown = set(names) - set(every) - {"private"}
    if unknown:
        raise ValueError(f"unknown names {sorted(unknown)}; choose from {list(every)}")
    return names


def _maybe(draw: st.DrawFn, choice: bool | None) -> bool:
    return draw(st.booleans()) if choice is None else choice


@st.composite
def tensor_descriptors(
    draw: st.DrawFn,
    layout: str | Iterable[str] | None = None,
    scheme: str | Iterable[str] | None = None,
    *,
    quantized: bool | None = None,
    shard: bool | None = None,
    statistics: bool | None = None,
    composite_member: bool | None = None,
    private_type: bool | None = None,
    placement: st.SearchStrategy[tuple[int, int, int]] | None = None,
    tiled_depth: int | None = None,
    private_layout_id: int | None = None,
) -> TensorDescriptor:
    """Valid tensor descriptors that :func:`~hurray_decl.tensor.write_tensor_descriptor` writes and
    every conforming reader accepts.

    ``layout`` names one layout or several (:data:`LAYOUT_KINDS`; ``"private"`` too when
    ``private_layout_id`` names an id the caller registered); ``scheme`` one scheme or several
    (:data:`SCHEME_NAMES`). ``quantized`` True/False forces a quantization section on or off
    (None: either; a scheme implies True). ``shard``, ``statistics``, ``composite_member`` and
    ``private_type`` do the same for the shard, statistics, composite-member and extension-type
    sections wherever the layout allows them. ``placement`` draws the (device_tag, sync_mode,
    memory_class) every buffer shares (default :func:`placements`); ``tiled_depth`` fixes the
    tiled nesting depth (1-8).

    Buffer sizes are exact (parameter buffers, sparse and paged buffers) or at least what the
    layout addresses (dense data); :func:`buffers_for` draws matching contents.
    """
    kinds = _names(layout, LAYOUT_KINDS + (("private",) if private_layout_id is not None else ()))
    schemes = _names(scheme, SCHEME_NAMES)
    if scheme is not None:
        quantized = True
    where = draw(placement if placement is not None else placements())
    if quantized:
        kinds = tuple(k for k in kinds if k in QUANTIZABLE
                      and not (k == "block_paged" and set(schemes) <= {"nf4", "mxfp"}))
    if not kinds:
        raise ValueError("no layout fits these constraints")
    kind = draw(st.sampled_from(kinds))
    if kind == "composite_head":
        rule = draw(st.sampled_from([1, 2, 3]))
        head = CompositeHead(composition_rule=rule, combine_op=draw(st.sampled_from([1, 2])) if rule == 2 else 0,
                             member_count=draw(st.integers(1 if rule == 2 else 0, 2**32 - 2)))
        stats = draw(_statistics()) if _maybe(draw, statistics) else None
        return TensorDescriptor(type_tag=draw(st.sampled_from([0x01, 0x02, 0x03, 0x04])),
                                shape=draw(_shapes(1, 3)), layout=head, statistics=stats)
    chosen = None
    if kind in QUANTIZABLE and (quantized or (quantized is None and draw(st.booleans()))):
        usable = [s for s in schemes if not (kind == "block_paged" and s in ("nf4", "mxfp"))]
        chosen = draw(st.sampled_from(usable)) if usable else None
    ext = None
    if chosen is not None:
        type_name = draw(st.sampled_from(STORAGE[chosen]))
        type_tag = BY_NAME[type_name].tag
    elif private_type is not False and (private_type or draw(st.integers(0, 4)) == 0):
        type_name, type_tag = None, draw(st.integers(0xF0, 0xFE))
        ext = draw(_extension_types())
    else:
        type_name = draw(st.sampled_from(sorted(BY_NAME)))
        type_tag = BY_NAME[type_name].tag
    shape, lay, layout_tag, sizes, offset, q = draw(
        _layout_part(kind, type_name, ext, chosen, tiled_depth, private_layout_id))
    if chosen == "per_tensor_affine":
        low, high = BY_NAME[type_name].zero_point_range
        q = PerTensorAffine(scale=draw(float32s()), zero_point=draw(st.integers(low, high)),
                            padding=draw(st.binary(max_size=4)))
    shard_section = None
    if kind not in ("block_paged", "csf") and _maybe(draw, shard):
        offsets = tuple(draw(st.integers(0, 5)) for _ in shape)
        shard_section = Shard(parent_shape=tuple(n + o + draw(st.integers(0, 3)) for n, o in zip(shape, offsets)),
                              shard_offset=offsets)
    nnz = getattr(lay, "nnz", None)
    return TensorDescriptor(
        type_tag=type_tag, layout_tag=layout_tag, shape=shape, byte_offset=offset, layout=lay,
        buffers=_handles(draw, sizes, where), quantization=q, shard=shard_section,
        statistics=draw(_statistics(nnz)) if _maybe(draw, statistics) else None, extension_type=ext,
        composite_member=CompositeMember(member_role=draw(st.integers(0, 1))) if _maybe(draw, composite_member)
        else None,
    )


# ================================================================ buffer contents

def _scales(draw: st.DrawFn, count: int, dtype: str, *, negative: bool = True, zero: bool = False) -> bytes:
    """``count`` scale values exact in float16, bfloat16 and float32: k * 2^e with |k| <= 8."""
    import ml_dtypes
    import numpy as np

    low = -8 if negative else (0 if zero else 1)
    ks = draw(st.lists(st.integers(low, 8).filter(lambda k: zero or k != 0), min_size=count, max_size=count))
    es = draw(st.lists(st.integers(-8, 8), min_size=count, max_size=count))
    values = np.array([k * 2.0 ** e for k, e in zip(ks, es)], dtype=np.float64)
    kind = {"float16": np.dtype("<f2"), "bfloat16": np.dtype(ml_dtypes.bfloat16), "float32": np.dtype("<f4")}[dtype]
    return values.astype(kind).tobytes()


def _int32s(draw: st.DrawFn, count: int, low: int, high: int) -> bytes:
    values = draw(st.lists(st.integers(low, high), min_size=count, max_size=count))
    return struct.pack(f"<{count}i", *values)


def _codes(draw: st.DrawFn, t: Any, size: int, start: int, count: int | None) -> bytes:
    """Buffer 0: random bytes where every byte is a whole element that nothing constrains; zero
    codes where padding bits or padded blocks must be zero; float8_e8m0 avoids 0x00 and 0xFF."""
    element = t.element
    if element is not None and element.name == "float8_e8m0":
        return bytes(draw(st.lists(st.integers(1, 254), min_size=size, max_size=size)))
    if element is None or (element.bits >= 8 and not t.padded) or count is None:
        return draw(st.binary(min_size=size, max_size=size))
    return bytes(size)


def _u64s(values: Sequence[int]) -> bytes:
    return struct.pack(f"<{len(values)}Q", *values)


def _index_array(values: Sequence[int], width: int) -> bytes:
    return struct.pack(f"<{len(values)}{'I' if width == 4 else 'Q'}", *values)


@st.composite
def buffers_for(draw: st.DrawFn, descriptor: TensorDescriptor) -> tuple[bytes, ...]:
    """Contents for every buffer of ``descriptor`` (one bytes object per table entry) that pass
    :func:`~hurray_decl.tensor.validate_buffers`.

    Parameter buffers hold finite non-zero scales (non-negative absmax for NF4, 0x01-0xFE
    exponents for MXFP) and zero points inside the storage range; sparse index buffers hold
    distinct in-range coordinates in the order the layout requires; block tables name existing
    pages; dense data has zeroed padding. Buffers are materialised in memory, so keep byte
    sizes small (the sizes :func:`tensor_descriptors` draws are).
    """
    from .tensor.context import check_descriptor

    d = descriptor
    t = check_descriptor(d)
    contents: list[bytes | None] = [None] * len(d.buffers)
    q = d.quantization
    by_index: dict[int, list[bytes]] = {}
    for p in t.params:
        size = p.size if p.size is not None else d.buffers[p.index].byte_size
        if p.field == "zero_point_buffer_index":
            low, high = t.element.zero_point_range
            chunk = _int32s(draw, size // 4, low, high)
        elif isinstance(q, MXFP):
            chunk = bytes(draw(st.lists(st.integers(1, 254), min_size=size, max_size=size)))
        elif isinstance(q, NF4):
            chunk = _scales(draw, size // 4, "float32", negative=False, zero=True)
        elif isinstance(q, PerBlockAffine):
            dtype = SCALE_TYPES[q.scale_type_tag]
            chunk = _scales(draw, size // (4 if dtype == "float32" else 2), dtype)
        else:
            chunk = _scales(draw, size // 4, "float32")
        by_index.setdefault(p.index, []).append(chunk)
    for index, chunks in by_index.items():
        contents[index] = b"".join(chunks)
    layout = d.layout
    shape = d.shape
    if isinstance(layout, COO) and len(d.buffers) > 1:
        cells = draw(st.lists(st.integers(0, max(_product(shape) - 1, 0)), min_size=layout.nnz, max_size=layout.nnz,
                              unique=True)) if layout.nnz else []
        if layout.is_sorted:
            cells.sort()
        coords: list[int] = []
        for cell in cells:
            point = []
            for n in reversed(shape):
                point.append(cell % n)
                cell //= n
            coords.extend(reversed(point))
        contents[1] = _u64s(coords)
    elif isinstance(layout, (CSR, CSC)) and len(d.buffers) > 2:
        rows, cols = (shape[0], shape[1]) if not isinstance(layout, CSC) else (shape[1], shape[0])
        cells = sorted(draw(st.lists(st.integers(0, max(rows * cols - 1, 0)), min_size=layout.nnz,
                                     max_size=layout.nnz, unique=True))) if layout.nnz else []
        ptr = [0] * (rows + 1)
        for cell in cells:
            ptr[cell // cols + 1] += 1
        for r in range(rows):
            ptr[r + 1] += ptr[r]
        contents[1] = _u64s([cell % cols for cell in cells])
        contents[2] = _u64s(ptr)
    elif isinstance(layout, CSF):
        rank = len(shape)
        if layout.nnz == 0:
            contents[1] = _u64s([0, 0])
            for level in range(rank):
                contents[2 * level + 2] = b""
                if level:
                    contents[2 * level + 1] = _u64s([0])
        else:
            parents = 1
            for level in range(rank):
                total = d.buffers[2 * level + 2].byte_size // 8
                dim = shape[layout.mode_order[level]]
                extra = total - parents
                per = [1] * parents
                for i in range(parents):  # each node has one child, then spread the rest
                    later = (parents - i - 1) * (dim - 1)  # what the nodes after this one can take
                    give = draw(st.integers(max(0, extra - later), min(extra, dim - 1)))
                    per[i] += give
                    extra -= give
                ptr, crd = [0], []
                for count in per:
                    crd.extend(sorted(draw(st.lists(st.integers(0, dim - 1), min_size=count, max_size=count,
                                                    unique=True))))
                    ptr.append(ptr[-1] + count)
                contents[2 * level + 1] = _u64s(ptr)
                contents[2 * level + 2] = _u64s(crd)
                parents = total
    elif isinstance(layout, BlockPaged) and len(d.buffers) > 2:
        width = layout.index_width
        entries = d.buffers[1].byte_size // width
        table = draw(st.lists(st.integers(0, max(layout.num_pages - 1, 0)), min_size=entries, max_size=entries))
        cuts = sorted(draw(st.lists(st.integers(0, entries), min_size=layout.num_seqs - 1,
                                    max_size=layout.num_seqs - 1))) if layout.num_seqs else []
        contents[1] = _index_array(table, width)
        contents[2] = _index_array(([0] + cuts + [entries]) if layout.num_seqs else [entries], width)
    if contents and contents[0] is None:
        size = d.buffers[0].byte_size
        contents[0] = _codes(draw, t, size, d.byte_offset, t.element_count(padded=True))
    for i, content in enumerate(contents):
        if content is None:
            contents[i] = draw(st.binary(min_size=d.buffers[i].byte_size, max_size=d.buffers[i].byte_size))
    return tuple(contents)  # type: ignore[arg-type]


# ================================================================ mutants: helpers


def reader_rules() -> list[str]:
    """Reader rules of the Hurray areas that bytes alone can break: role reader or both, areas
    HQ-*, HT-*, HE-*, needs without ``data``."""
    return [r.id for r in all_rules().values()
            if r.id.split("-")[0] in ("HQ", "HT", "HE") and r.role in ("reader", "both") and "data" not in r.needs]


def data_rules() -> list[str]:
    """Reader rules of the Hurray areas that need buffer contents."""
    return [r.id for r in all_rules().values()
            if r.id.split("-")[0] in ("HQ", "HT", "HE") and r.role in ("reader", "both") and "data" in r.needs]


def _raw(d: TensorDescriptor) -> bytes:
    """Encode ``d`` field by field with the reader's own declarations, *without* the context
    checks the writer makes: the way to build a mutant that breaks a rule between fields."""
    from .tensor.header import HEADER, HEADER_LENGTH, MAGIC, core
    from .tensor.layouts import row_of
    from .tensor.sections import COMPOSITE_MEMBER, EXTENSION_TYPE, STATISTICS, shard_fields
    import construct as cs

    rank = len(d.shape)
    parts = [core(rank).build({"shape": list(d.shape), "byte_offset": d.byte_offset}, permissive=True),
             row_of(d.layout).struct(rank).build(d.layout.to_wire(), permissive=True),
             bytes([len(d.buffers)])]
    parts += [HANDLE.build(h.to_wire(), permissive=True) for h in d.buffers]
    if d.quantization is not None:
        payload = encode_quantization(d.quantization, permissive=True)
        parts += [struct.pack("<I", len(payload)), payload]
    if d.shard is not None:
        parts.append(cs.Struct(*shard_fields(rank)).build(d.shard.to_wire(), permissive=True))
    if d.statistics is not None:
        parts.append(STATISTICS.build(d.statistics.to_wire(), permissive=True))
    if d.extension_type is not None:
        parts.append(EXTENSION_TYPE.build(d.extension_type.to_wire(), permissive=True))
    if d.composite_member is not None:
        parts.append(COMPOSITE_MEMBER.build(d.composite_member.to_wire(), permissive=True))
    body = b"".join(parts)
    flags = sum(bit for name, bit in (("quantization", 1), ("shard", 2), ("extension_type", 4), ("statistics", 8),
                                      ("composite_member", 16)) if getattr(d, name) is not None)
    tag = d.layout_tag if d.layout_tag is not None else d.layout.tag
    header = HEADER.build({"magic": MAGIC, "version_major": 1, "version_minor": 0,
                           "descriptor_length": HEADER_LENGTH + len(body), "flags": flags, "type_tag": d.type_tag,
                           "layout_tag": tag, "rank": rank}, permissive=True)
    return header + body


def _positions(data: bytes) -> dict[str, int]:
    """Byte offset of every field the reader parsed in the valid descriptor ``data``."""
    from .tensor.reader import field_positions

    return field_positions(data)


def _patch(data: bytes, offset: int, raw: bytes) -> bytes:
    out = bytearray(data)
    out[offset:offset + len(raw)] = raw
    return bytes(out)


def _u8(v: int) -> bytes:
    return bytes([v])


def _u32(v: int) -> bytes:
    return struct.pack("<I", v)


def _u64(v: int) -> bytes:
    return struct.pack("<Q", v)


def _with_length(data: bytes) -> bytes:
    return _patch(data, 6, _u32(len(data)))


def _resized(h: BufferHandle, size: int) -> BufferHandle:
    """A handle holding ``size`` bytes, its alignment raised to 64 when it becomes non-empty."""
    alignment = h.alignment if size == 0 or h.alignment >= 64 else 64
    return h.model_copy(update={"byte_size": size, "alignment": alignment})


def _set_buffer(d: TensorDescriptor, index: int, size: int) -> TensorDescriptor:
    buffers = list(d.buffers)
    buffers[index] = _resized(buffers[index], size)
    return d.model_copy(update={"buffers": tuple(buffers)})


def _other_than(values: st.SearchStrategy[int], *excluded: int) -> st.SearchStrategy[int]:
    return values.filter(lambda v: v not in excluded)


def _non_pow2(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(low, high).filter(lambda v: v & (v - 1) != 0)


MUTANTS: dict[str, Callable[[], st.SearchStrategy[bytes]]] = {}
"""One strategy factory per reader rule: the strategy draws descriptor bytes that break that rule."""


def _mutant(*rules: str):
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for rule in rules:
            if rule in MUTANTS:
                raise ValueError(f"{rule} has two mutant generators")
            MUTANTS[rule] = (lambda r=rule: fn(r)) if len(rules) > 1 else fn
        return fn
    return register


@st.composite
def _field(draw: st.DrawFn, base: st.SearchStrategy[TensorDescriptor], path: Callable[[st.DrawFn, TensorDescriptor],
           str] | str, value: Callable[[st.DrawFn, TensorDescriptor], bytes]) -> bytes:
    """A valid descriptor with the bytes of one field (by its reader path) replaced."""
    d = draw(base)
    data = write_tensor_descriptor(d)
    where = path(draw, d) if callable(path) else path
    return _patch(data, _positions(data)[where], value(draw, d))


def _header(path: str, values: st.SearchStrategy[int], width: int,
            base: st.SearchStrategy[TensorDescriptor] | None = None) -> st.SearchStrategy[bytes]:
    pack = {1: _u8, 4: _u32, 8: _u64}[width]
    return _field(base if base is not None else _DATA, f"descriptor -> {path}", lambda draw, d: pack(draw(values)))


_ANY = tensor_descriptors()
_DATA = tensor_descriptors(layout=[k for k in LAYOUT_KINDS if k != "composite_head"])
_NOT_SPARSE = ("row_major", "column_major", "strided", "tiled", "morton", "hilbert")

# ================================================================ mutants: fixed header


@_mutant("HT-HDR-04")
def _magic() -> st.SearchStrategy[bytes]:
    return _field(_ANY, "descriptor -> magic", lambda draw, d: draw(st.binary(min_size=4, max_size=4).filter(
        lambda b: b != b"HRRY")))


@_mutant("HT-HDR-05")
def _major_new() -> st.SearchStrategy[bytes]:
    return _header("version_major", st.integers(2, 255), 1, _ANY)


@_mutant("HT-HDR-06")
def _major_old() -> st.SearchStrategy[bytes]:
    return _header("version_major", st.just(0), 1, _ANY)


@_mutant("HT-HDR-07")
def _length_short() -> st.SearchStrategy[bytes]:
    return _header("descriptor_length", st.integers(0, 19), 4, _ANY)


@_mutant("HT-HDR-08")
@st.composite
def _truncated(draw: st.DrawFn) -> bytes:
    data = write_tensor_descriptor(draw(_ANY))
    if draw(st.booleans()):  # the input ends before descriptor_length
        return data[:draw(st.integers(0, len(data) - 1))]
    cut = draw(st.integers(20, len(data) - 1))  # descriptor_length ends inside a section
    return _with_length(data[:cut])


@_mutant("HT-HDR-09")
@st.composite
def _length_long(draw: st.DrawFn) -> bytes:
    data = write_tensor_descriptor(draw(_ANY))
    return _with_length(data + draw(st.binary(min_size=1, max_size=16)))


@_mutant("HT-HDR-12")
def _reserved_flags() -> st.SearchStrategy[bytes]:
    @st.composite
    def patched(draw: st.DrawFn) -> bytes:
        d = draw(_ANY)
        data = write_tensor_descriptor(d)
        extra = draw(st.integers(1, (1 << 27) - 1)) << 5
        return _patch(data, 10, _u32(d.flags | extra))
    return patched()


@_mutant("HT-HDR-13")
def _rank_high() -> st.SearchStrategy[bytes]:
    return _header("rank", st.integers(65, 2**32 - 1), 4, _ANY)


@_mutant("HT-HDR-15")
def _layout_invalid() -> st.SearchStrategy[bytes]:
    return _header("layout_tag", st.sampled_from([0x00, 0xFF]), 1, _ANY)


@_mutant("HT-HDR-16")
def _layout_unknown() -> st.SearchStrategy[bytes]:
    return _header("layout_tag", st.one_of(st.integers(0x0C, 0x3F), st.integers(0x41, 0xEF)), 1, _ANY)


_UNASSIGNED_TYPES = [t for t in range(0x01, 0x80) if t not in BY_TAG and t != 0x47]


@_mutant("HE-02")
def _type_invalid() -> st.SearchStrategy[bytes]:
    return _header("type_tag", st.sampled_from([0x00, 0xFF]), 1, _ANY)


@_mutant("HE-03")
def _type_unknown() -> st.SearchStrategy[bytes]:
    return _header("type_tag", st.sampled_from(_UNASSIGNED_TYPES), 1, _ANY)


@_mutant("HE-05")
def _type_reserved() -> st.SearchStrategy[bytes]:
    return _header("type_tag", st.integers(0x80, 0xEF), 1, _ANY)


@_mutant("HE-06")
def _type_47() -> st.SearchStrategy[bytes]:
    return _header("type_tag", st.just(0x47), 1, _ANY)


@_mutant("HT-HDR-19")
@st.composite
def _offset_past_buffer(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout=_NOT_SPARSE))
    beyond = d.buffers[0].byte_size + draw(st.integers(1, 2**16))
    return _raw(d.model_copy(update={"byte_offset": beyond}))


@_mutant("HT-HDR-20")
@st.composite
def _offset_not_zero(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout=("coo", "csr", "csc", "csf", "block_paged", "composite_head")))
    data = write_tensor_descriptor(d)
    return _patch(data, 20 + 8 * d.rank, _u64(draw(st.integers(1, 2**64 - 1))))


@_mutant("HT-HDR-21")
@st.composite
def _scalar_layout(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="row_major", quantized=False, shard=False).filter(lambda d: d.rank == 0))
    tag = draw(st.sampled_from([0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x40, 0xF3]))
    return _patch(write_tensor_descriptor(d), 15, _u8(tag))


# ================================================================ mutants: layouts


def _layout_field(kinds: str | Sequence[str], field: str, values: st.SearchStrategy[int] | Callable, width: int,
                  **kw: Any) -> st.SearchStrategy[bytes]:
    pack = {1: _u8, 2: lambda v: v.to_bytes(2, "little"), 4: _u32, 8: _u64}[width]

    def value(draw: st.DrawFn, d: TensorDescriptor) -> bytes:
        return pack(draw(values(d) if callable(values) else values))

    def path(draw: st.DrawFn, d: TensorDescriptor) -> str:
        return f"descriptor -> layout -> {field}"

    return _field(tensor_descriptors(layout=kinds, **kw), path, value)


def _nonzero_bytes(count: int) -> st.SearchStrategy[bytes]:
    return st.binary(min_size=count, max_size=count).filter(any)


def _reserved(kinds: str | Sequence[str], field: str, count: int, **kw: Any) -> st.SearchStrategy[bytes]:
    return _field(tensor_descriptors(layout=kinds, **kw), f"descriptor -> layout -> {field}",
                  lambda draw, d: draw(_nonzero_bytes(count)))


@_mutant("HT-LAY-05")
@st.composite
def _strided_outside(draw: st.DrawFn) -> bytes:
    from .tensor.context import TensorContext

    d = draw(tensor_descriptors(layout="strided").filter(lambda d: 0 not in d.shape))
    t = TensorContext(d)
    hi = sum(max(0, s * (n - 1)) for s, n in zip(d.layout.strides, d.shape))
    end = d.byte_offset + t.packed(hi + 1)
    return _raw(_set_buffer(d, 0, draw(st.integers(d.byte_offset, end - 1))))


@_mutant("HT-LAY-08")
@st.composite
def _tile_zero(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="tiled"))
    data = write_tensor_descriptor(d)
    k = draw(st.integers(0, d.rank - 1))
    return _patch(data, _positions(data)["descriptor -> layout"] + 8 * k, _u64(0))


@_mutant("HT-LAY-09")
def _outer_layout() -> st.SearchStrategy[bytes]:
    return _layout_field("tiled", "outer_layout", _other_than(st.integers(0, 255), 1, 2, 3), 1)


@_mutant("HT-LAY-10")
def _inner_layout() -> st.SearchStrategy[bytes]:
    return _layout_field("tiled", "inner_layout", _other_than(st.integers(0, 255), 1, 2, 3, 4), 1)


@_mutant("HT-LAY-11")
def _tiled_reserved() -> st.SearchStrategy[bytes]:
    return _reserved("tiled", "reserved", 2)


@_mutant("HT-LAY-12")
@st.composite
def _tiled_deep(draw: st.DrawFn) -> bytes:
    from .tensor.layouts import MAX_TILED_DEPTH, tiled_level

    d = draw(tensor_descriptors(layout="tiled", tiled_depth=MAX_TILED_DEPTH))
    data = write_tensor_descriptor(d)
    offset = _positions(data)["descriptor -> layout"]
    level = d.layout
    while level.nested is not None:  # walk to the deepest payload
        whole = len(tiled_level(d.rank, 1).build(level.to_wire()))
        inner = len(tiled_level(d.rank, 1).build(level.nested.to_wire()))
        offset += whole - inner
        level = level.nested
    return _patch(data, offset + 8 * d.rank + 1, _u8(4))


@_mutant("HT-LAY-13")
@st.composite
def _tiled_small(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="tiled", private_type=False).filter(lambda d: 0 not in d.shape))
    return _raw(_set_buffer(d, 0, draw(st.integers(0, d.buffers[0].byte_size - 1))))


@_mutant("HT-LAY-17")
@st.composite
def _morton_zero(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="morton"))
    data = write_tensor_descriptor(d)
    k = draw(st.integers(0, d.rank - 1))
    return _patch(data, _positions(data)["descriptor -> layout"] + 4 * k, _u32(0))


@_mutant("HT-LAY-18")
@st.composite
def _morton_short(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="morton").filter(lambda d: max(d.shape) >= 3))
    k = draw(st.sampled_from([k for k, n in enumerate(d.shape) if n >= 3]))
    bits = list(d.layout.morton_bits)
    bits[k] = draw(st.integers(1, (d.shape[k] - 1).bit_length() - 1))
    return _raw(d.model_copy(update={"layout": Morton(morton_bits=tuple(bits))}))


@_mutant("HT-LAY-19")
@st.composite
def _morton_small(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="morton", private_type=False))
    return _raw(_set_buffer(d, 0, draw(st.integers(0, d.buffers[0].byte_size - 1))))


@_mutant("HT-LAY-20")
def _coo_sorted() -> st.SearchStrategy[bytes]:
    return _layout_field("coo", "is_sorted", st.integers(2, 255), 1)


@_mutant("HT-LAY-21")
def _coo_reserved() -> st.SearchStrategy[bytes]:
    return _reserved("coo", "reserved", 7)


def _wrong_rank(kind: str, ranks: st.SearchStrategy[int]) -> st.SearchStrategy[bytes]:
    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        d = draw(tensor_descriptors(layout=kind, quantized=False, shard=False))
        rank = draw(ranks)  # the dimensions the buffer sizes use are kept where the new rank has them
        shape = tuple(d.shape[k] if k < d.rank else draw(st.integers(0, 4)) for k in range(rank))
        layout = d.layout
        if isinstance(layout, CSF):
            layout = CSF(nnz=layout.nnz, mode_order=tuple(draw(st.permutations(range(rank)))))
        return _raw(d.model_copy(update={"shape": shape, "layout": layout}))
    return build()


@_mutant("HT-LAY-25")
def _csr_rank() -> st.SearchStrategy[bytes]:
    return _wrong_rank("csr", _other_than(st.integers(1, 5), 2))


@_mutant("HT-LAY-33")
def _csc_rank() -> st.SearchStrategy[bytes]:
    return _wrong_rank("csc", _other_than(st.integers(1, 5), 2))


@_mutant("HT-LAY-41")
def _csf_rank() -> st.SearchStrategy[bytes]:
    return _wrong_rank("csf", st.integers(1, 2))


@_mutant("HT-LAY-52")
def _paged_rank() -> st.SearchStrategy[bytes]:
    return _wrong_rank("block_paged", _other_than(st.integers(1, 5), 3))


def _undersized(kind: str, indices: Callable[[TensorDescriptor], list[int]], **kw: Any) -> st.SearchStrategy[bytes]:
    """A valid descriptor with one component array of fixed size made smaller (HD-26: lower bounds)."""
    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        d = draw(tensor_descriptors(layout=kind, **kw).filter(
            lambda d: any(d.buffers[i].byte_size for i in indices(d))))
        index = draw(st.sampled_from([i for i in indices(d) if d.buffers[i].byte_size]))
        return _raw(_set_buffer(d, index, draw(st.integers(0, d.buffers[index].byte_size - 1))))
    return build()


@_mutant("HT-LAY-87")
def _coo_sizes() -> st.SearchStrategy[bytes]:
    return _undersized("coo", lambda d: [0, 1])


@_mutant("HT-LAY-88")
def _csr_sizes() -> st.SearchStrategy[bytes]:
    return _undersized("csr", lambda d: [0, 1, 2])


@_mutant("HT-LAY-89")
def _csc_sizes() -> st.SearchStrategy[bytes]:
    return _undersized("csc", lambda d: [0, 1, 2])


@_mutant("HT-LAY-90")
def _csf_sizes() -> st.SearchStrategy[bytes]:
    return _undersized("csf", lambda d: [0, 1, 2 * d.rank])


@_mutant("HT-LAY-91")
def _paged_sizes() -> st.SearchStrategy[bytes]:
    return _undersized("block_paged", lambda d: [0, 2])


@_mutant("HT-LAY-27")
def _csr_reserved() -> st.SearchStrategy[bytes]:
    return _reserved("csr", "reserved", 8)


@_mutant("HT-LAY-35")
def _csc_reserved() -> st.SearchStrategy[bytes]:
    return _reserved("csc", "reserved", 8)


@_mutant("HT-LAY-43")
def _csf_reserved() -> st.SearchStrategy[bytes]:
    return _reserved("csf", "reserved", 8)


@_mutant("HT-LAY-44")
@st.composite
def _mode_order(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="csf"))
    data = write_tensor_descriptor(d)
    k = draw(st.integers(0, d.rank - 1))
    order = list(d.layout.mode_order)
    if draw(st.booleans()):
        order[k] = draw(st.integers(d.rank, 2**32 - 1))  # out of range
    else:
        order[k] = draw(st.sampled_from([v for i, v in enumerate(order) if i != k]))  # repeated
    start = _positions(data)["descriptor -> layout"] + 8
    return _patch(data, start, struct.pack(f"<{d.rank}I", *order))


@_mutant("HT-LAY-53")
def _kv_role() -> st.SearchStrategy[bytes]:
    return _layout_field("block_paged", "kv_role", st.integers(3, 255), 1)


@_mutant("HT-LAY-54")
def _paged_reserved() -> st.SearchStrategy[bytes]:
    return _reserved("block_paged", "reserved", 6)


@_mutant("HT-LAY-55")
def _page_zero() -> st.SearchStrategy[bytes]:
    return _layout_field("block_paged", "page_size", st.just(0), 4)


@_mutant("HT-LAY-56")
def _paged_axis() -> st.SearchStrategy[bytes]:
    return _layout_field("block_paged", "paged_axis", st.integers(1, 2**32 - 1), 4)


def _quant_field(scheme: str | Sequence[str], field: str, value: Callable[[st.DrawFn, TensorDescriptor], bytes],
                 **kw: Any) -> st.SearchStrategy[bytes]:
    kw.setdefault("layout", ("row_major", "column_major"))
    return _field(tensor_descriptors(scheme=scheme, **kw), f"descriptor -> quantization -> {field}", value)


@_mutant("HT-LAY-63")
@st.composite
def _paged_pb_axis(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="block_paged", scheme="per_block_affine"))
    return _raw(d.model_copy(update={"quantization": d.quantization.model_copy(
        update={"axis": draw(st.integers(1, 2))})}))


@_mutant("HT-LAY-64")
@st.composite
def _paged_pb_block(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="block_paged", scheme="per_block_affine"))
    block = draw(_other_than(_pow2(1, 31), d.layout.page_size))
    return _raw(d.model_copy(update={"quantization": d.quantization.model_copy(update={"block_size": block})}))


_HEADS = "composite_head"


@_mutant("HT-LAY-69")
def _composition_bad() -> st.SearchStrategy[bytes]:
    return _layout_field(_HEADS, "composition_rule", st.one_of(st.sampled_from([0x00, 0xFF]),
                                                                 st.integers(0x04, 0xEF)), 1)


@_mutant("HT-LAY-70")
def _composition_private() -> st.SearchStrategy[bytes]:
    return _layout_field(_HEADS, "composition_rule", st.integers(0xF0, 0xFE), 1)


_NOT_OVERLAY = tensor_descriptors(layout=_HEADS).filter(lambda d: d.layout.composition_rule != 2)
_OVERLAY = tensor_descriptors(layout=_HEADS).filter(lambda d: d.layout.composition_rule == 2)


@_mutant("HT-LAY-71")
def _combine_partition() -> st.SearchStrategy[bytes]:
    return _field(_NOT_OVERLAY, "descriptor -> layout -> combine_op", lambda draw, d: _u8(draw(st.integers(1, 255))))


@_mutant("HT-LAY-72")
def _combine_overlay() -> st.SearchStrategy[bytes]:
    return _field(_OVERLAY, "descriptor -> layout -> combine_op",
                  lambda draw, d: _u8(draw(_other_than(st.integers(0, 255), 1, 2))))


@_mutant("HT-LAY-73")
def _head_reserved() -> st.SearchStrategy[bytes]:
    return _reserved(_HEADS, "reserved", 2)


@_mutant("HT-LAY-74")
def _head_open() -> st.SearchStrategy[bytes]:
    return _layout_field(_HEADS, "member_count", st.just(0xFFFF_FFFF), 4)


@_mutant("HT-LAY-75")
def _overlay_empty() -> st.SearchStrategy[bytes]:
    return _field(_OVERLAY, "descriptor -> layout -> member_count", lambda draw, d: _u32(0))


@_mutant("HT-LAY-76")
@st.composite
def _head_quantized(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout=_HEADS))  # a whole section: it is sliced before the rule
    scale = draw(st.sampled_from([1.0, 0.5, -2.0]))
    return _raw(d.model_copy(update={"quantization": PerTensorAffine(scale=scale)}))


@_mutant("HT-LAY-78")
def _hilbert_order() -> st.SearchStrategy[bytes]:
    return _layout_field("hilbert", "hilbert_order", st.just(0), 4)


@_mutant("HT-LAY-79")
def _hilbert_rank_other() -> st.SearchStrategy[bytes]:
    return _layout_field("hilbert", "hilbert_rank", lambda d: _other_than(st.integers(2, 2**32 - 1), d.rank), 4)


@_mutant("HT-LAY-80")
def _hilbert_rank_low() -> st.SearchStrategy[bytes]:
    return _layout_field("hilbert", "hilbert_rank", st.integers(0, 1), 4)


@_mutant("HT-LAY-81")
@st.composite
def _hilbert_shape(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="hilbert", shard=False))
    k = draw(st.integers(0, d.rank - 1))
    side = 1 << d.layout.hilbert_order
    return _patch(write_tensor_descriptor(d), 20 + 8 * k, _u64(draw(_other_than(st.integers(0, 2**64 - 1), side))))


@_mutant("HT-LAY-82")
@st.composite
def _hilbert_small(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="hilbert", private_type=False))
    return _raw(_set_buffer(d, 0, draw(st.integers(0, d.buffers[0].byte_size - 1))))


@_mutant("HT-LAY-85")
@st.composite
def _private_layout(draw: st.DrawFn) -> bytes:
    from .tensor.layouts import PRIVATE_LAYOUTS

    d = draw(tensor_descriptors(layout="row_major", quantized=False, shard=False).filter(lambda d: d.rank > 0))
    ident = draw(st.integers(0, 2**64 - 1).filter(lambda v: v not in PRIVATE_LAYOUTS))
    layout = PrivateLayout(extension_layout_id=ident, extension_data=draw(st.binary(max_size=12)))
    return _raw(d.model_copy(update={"layout": layout, "layout_tag": draw(st.integers(0xF0, 0xFE))}))


# ================================================================ mutants: buffer table


def _handle_field(field: str, values: Callable[[st.DrawFn, TensorDescriptor, int], int], width: int,
                  base: st.SearchStrategy[TensorDescriptor] | None = None,
                  which: Callable[[TensorDescriptor], list[int]] | None = None) -> st.SearchStrategy[bytes]:
    pack = {1: _u8, 4: _u32, 8: _u64}[width]

    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        d = draw(base if base is not None else _DATA)
        candidates = which(d) if which is not None else list(range(len(d.buffers)))
        i = draw(st.sampled_from(candidates))
        data = write_tensor_descriptor(d)
        return _patch(data, _positions(data)[f"descriptor -> buffers -> {i} -> {field}"], pack(values(draw, d, i)))
    return build()


def _on(devices: Sequence[int]) -> st.SearchStrategy[TensorDescriptor]:
    return tensor_descriptors(layout=[k for k in LAYOUT_KINDS if k != "composite_head"],
                              placement=placements(devices))


@_mutant("HT-BUFT-02")
@st.composite
def _no_buffers(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout=[k for k in LAYOUT_KINDS if k != "composite_head"], quantized=False))
    return _raw(d.model_copy(update={"buffers": ()}))


def _extra_handles(draw: st.DrawFn, d: TensorDescriptor, count: int) -> tuple[BufferHandle, ...]:
    like = d.buffers[0] if d.buffers else BufferHandle()
    return tuple(_resized(like, draw(st.integers(0, 64))) for _ in range(count))


@_mutant("HT-BUFT-03")
@st.composite
def _head_buffers(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout=_HEADS))
    return _raw(d.model_copy(update={"buffers": _extra_handles(draw, d, draw(st.integers(1, 3)))}))


def _extra_buffer(kinds: Sequence[str], quantized: bool) -> st.SearchStrategy[bytes]:
    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        d = draw(tensor_descriptors(layout=kinds, quantized=quantized))
        return _raw(d.model_copy(update={"buffers": d.buffers + _extra_handles(draw, d, draw(st.integers(1, 3)))}))
    return build()


@_mutant("HT-BUFT-04")
def _dense_count() -> st.SearchStrategy[bytes]:
    return _extra_buffer(_NOT_SPARSE, False)


@_mutant("HT-BUFT-05")
def _quantized_count() -> st.SearchStrategy[bytes]:
    return _extra_buffer(("row_major", "column_major"), True)


@_mutant("HT-BUFT-06")
def _coo_count() -> st.SearchStrategy[bytes]:
    return _extra_buffer(("coo",), False)


@_mutant("HT-BUFT-07")
def _csr_count() -> st.SearchStrategy[bytes]:
    return _extra_buffer(("csr",), False)


@_mutant("HT-BUFT-08")
def _csc_count() -> st.SearchStrategy[bytes]:
    return _extra_buffer(("csc",), False)


@_mutant("HT-BUFT-09")
def _csf_count() -> st.SearchStrategy[bytes]:
    return _extra_buffer(("csf",), False)


@_mutant("HT-BUFT-10")
@st.composite
def _paged_count(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="block_paged", quantized=False))
    return _raw(d.model_copy(update={"buffers": d.buffers[:draw(st.integers(1, 2))]}))


@_mutant("HT-BUFT-12")
def _alignment_not_pow2() -> st.SearchStrategy[bytes]:
    return _handle_field("alignment", lambda draw, d, i: draw(st.integers(0, 2**32 - 1).filter(
        lambda v: v == 0 or v & (v - 1))), 4)


@_mutant("HT-BUFT-13")
def _alignment_small() -> st.SearchStrategy[bytes]:
    return _handle_field("alignment", lambda draw, d, i: draw(_pow2(0, 5)), 4,
                         _DATA.filter(lambda d: any(h.byte_size for h in d.buffers)),
                         lambda d: [i for i, h in enumerate(d.buffers) if h.byte_size])


@_mutant("HT-BUFT-14")
def _device_ff() -> st.SearchStrategy[bytes]:
    return _handle_field("device_tag", lambda draw, d, i: 0xFF, 1)


@_mutant("HT-BUFT-15")
def _device_reserved() -> st.SearchStrategy[bytes]:
    return _handle_field("device_tag", lambda draw, d, i: draw(st.integers(0x09, 0xEF)), 1)


@_mutant("HT-BUFT-17")
def _sync_unknown() -> st.SearchStrategy[bytes]:
    return _handle_field("sync_mode", lambda draw, d, i: draw(st.integers(3, 255)), 1)


@_mutant("HT-BUFT-18")
def _cpu_sync() -> st.SearchStrategy[bytes]:
    return _handle_field("sync_mode", lambda draw, d, i: draw(st.integers(1, 2)), 1, _on([0x00]))


@_mutant("HT-BUFT-19")
def _class_reserved() -> st.SearchStrategy[bytes]:
    return _handle_field("memory_class", lambda draw, d, i: draw(st.one_of(st.just(0xFF), st.integers(0x04, 0xEF))),
                         1)


@_mutant("HT-BUFT-20")
def _class_private_public_device() -> st.SearchStrategy[bytes]:
    return _handle_field("memory_class", lambda draw, d, i: draw(st.integers(0xF0, 0xFE)), 1, _on(sorted(DEVICES)))


@_mutant("HT-BUFT-21")
def _class_private_unagreed() -> st.SearchStrategy[bytes]:
    from .tensor.buffers import PRIVATE_MEMORY_CLASSES

    return _handle_field("memory_class", lambda draw, d, i: draw(st.integers(0xF0, 0xFE).filter(
        lambda v: v not in PRIVATE_MEMORY_CLASSES)), 1, _on([PRIVATE_DEVICE]))


@_mutant("HT-BUFT-22")
@st.composite
def _class_pair(draw: st.DrawFn) -> bytes:
    missing = {dev: sorted({0, 1, 2, 3} - set(DEVICE_CLASSES[dev])) for dev in DEVICE_CLASSES}
    missing[PRIVATE_DEVICE] = [1, 2, 3]
    devices = [dev for dev, classes in missing.items() if classes]
    d = draw(_on(devices))
    device = d.buffers[0].device_tag
    i = draw(st.integers(0, len(d.buffers) - 1))
    data = write_tensor_descriptor(d)
    return _patch(data, _positions(data)[f"descriptor -> buffers -> {i} -> memory_class"],
                  _u8(draw(st.sampled_from(missing[device]))))


@_mutant("HT-BUFT-23")
def _handle_reserved() -> st.SearchStrategy[bytes]:
    return _handle_field("reserved", lambda draw, d, i: draw(st.integers(1, 255)), 1)


def _moved(draw: st.DrawFn, h: BufferHandle) -> BufferHandle:
    """``h`` on another device offering the same memory class."""
    devices = [dev for dev, classes in DEVICE_CLASSES.items() if h.memory_class in classes and dev != h.device_tag]
    if h.memory_class == 0 and h.device_tag != PRIVATE_DEVICE:
        devices.append(PRIVATE_DEVICE)
    device = draw(st.sampled_from(devices))
    return h.model_copy(update={"device_tag": device, "sync_mode": 0 if device == 0 else h.sync_mode,
                                "alignment": max(h.alignment, 64) if h.byte_size else h.alignment})


def _non_parameter(d: TensorDescriptor) -> list[int]:
    from .tensor.context import check_descriptor

    params = {p.index for p in check_descriptor(d).params}
    return [i for i in range(1, len(d.buffers)) if i not in params]


@_mutant("HT-BUFT-24")
@st.composite
def _colocated_device(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout=("coo", "csr", "csc", "csf", "block_paged")))
    i = draw(st.sampled_from(_non_parameter(d)))
    buffers = list(d.buffers)
    buffers[i] = _moved(draw, buffers[i])
    return _raw(d.model_copy(update={"buffers": tuple(buffers)}))


@_mutant("HT-BUFT-25")
@st.composite
def _colocated_class(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout=("coo", "csr", "csc", "csf", "block_paged", "row_major"),
                                placement=placements([0x00, 0x01, 0x02, 0x03, 0x04, 0x06, 0x07, 0x08]))
             .filter(lambda d: len(d.buffers) > 1))
    i = draw(st.integers(1, len(d.buffers) - 1))
    h = d.buffers[i]
    other = draw(st.sampled_from(sorted(DEVICE_CLASSES[h.device_tag] - {h.memory_class})))
    buffers = list(d.buffers)
    buffers[i] = h.model_copy(update={"memory_class": other})
    return _raw(d.model_copy(update={"buffers": tuple(buffers)}))


# ================================================================ mutants: sections


@_mutant("HT-SEC-04")
@st.composite
def _shard_outside(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout=_NOT_SPARSE + ("coo", "csr", "csc"), shard=True).filter(
        lambda d: d.rank > 0))
    k = draw(st.integers(0, d.rank - 1))
    parent = d.shard.parent_shape[k]
    offsets = list(d.shard.shard_offset)
    offsets[k] = draw(st.integers(parent - d.shape[k] + 1, 2**64 - 1))
    return _raw(d.model_copy(update={"shard": Shard(parent_shape=d.shard.parent_shape,
                                                    shard_offset=tuple(offsets))}))


@_mutant("HT-SEC-05")
@st.composite
def _shard_dynamic(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout=_NOT_SPARSE + ("coo", "csr", "csc"), shard=True).filter(
        lambda d: d.rank > 0))
    k = draw(st.integers(0, d.rank - 1))
    parent = list(d.shard.parent_shape)
    parent[k] = DYNAMIC
    return _raw(d.model_copy(update={"shard": Shard(parent_shape=tuple(parent),
                                                    shard_offset=d.shard.shard_offset)}))


def _sharded(kind: str) -> st.SearchStrategy[bytes]:
    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        d = draw(tensor_descriptors(layout=kind))
        shard = Shard(parent_shape=tuple(n + draw(st.integers(0, 3)) for n in d.shape),
                      shard_offset=tuple(0 for _ in d.shape))
        return _raw(d.model_copy(update={"shard": shard}))
    return build()


@_mutant("HT-SEC-06")
def _paged_shard() -> st.SearchStrategy[bytes]:
    return _sharded("block_paged")


@_mutant("HT-SEC-07")
def _csf_shard() -> st.SearchStrategy[bytes]:
    return _sharded("csf")


def _stats_field(field: str, value: Callable[[st.DrawFn, TensorDescriptor], bytes],
                 need: int = 0) -> st.SearchStrategy[bytes]:
    base = tensor_descriptors(statistics=True).filter(lambda d: d.statistics.computed_mask & need == need)
    return _field(base, f"descriptor -> statistics -> {field}", value)


@_mutant("HT-SEC-08")
@st.composite
def _stats_flag_byte(draw: st.DrawFn) -> bytes:
    field = draw(st.sampled_from(["has_nan", "has_inf"]))
    return draw(_stats_field(field, lambda draw, d: _u8(draw(st.integers(2, 255))), need=0x20))


@_mutant("HT-SEC-09")
@st.composite
def _stats_mask(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(statistics=True))
    data = write_tensor_descriptor(d)
    mask = d.statistics.computed_mask | (draw(st.integers(1, (1 << 26) - 1)) << 6)
    return _patch(data, _positions(data)["descriptor -> statistics -> computed_mask"], _u32(mask))


@_mutant("HT-SEC-10")
def _stats_reserved() -> st.SearchStrategy[bytes]:
    return _stats_field("reserved", lambda draw, d: draw(_nonzero_bytes(4)))


@_mutant("HT-SEC-11")
def _stats_reserved2() -> st.SearchStrategy[bytes]:
    return _stats_field("reserved2", lambda draw, d: draw(_nonzero_bytes(4)))


@_mutant("HT-SEC-14")
def _stats_stddev() -> st.SearchStrategy[bytes]:
    bad = st.one_of(st.floats(max_value=-1e-300, allow_nan=False), st.just(math.nan))
    return _stats_field("value_stddev", lambda draw, d: struct.pack("<d", draw(bad)), need=0x08)


@_mutant("HT-SEC-15")
@st.composite
def _stats_nm(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(statistics=True).filter(lambda d: d.statistics.computed_mask & 0x10))
    data = write_tensor_descriptor(d)
    n = draw(st.integers(1, 255))
    m = draw(st.integers(0, n - 1))
    return _patch(data, _positions(data)["descriptor -> statistics -> nm_n"], bytes([n, m]))


@_mutant("HT-SEC-16")
@st.composite
def _stats_nnz(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout=("coo", "csr", "csc", "csf")))
    stats = draw(_statistics(mask=draw(st.integers(0, 0x3F)) | 1))
    stats = stats.model_copy(update={"nnz": draw(_other_than(st.integers(0, 2**64 - 1), d.layout.nnz))})
    return _raw(d.model_copy(update={"statistics": stats}))


@_mutant("HT-SEC-19")
def _private_type_no_section() -> st.SearchStrategy[bytes]:
    return _header("type_tag", st.integers(0xF0, 0xFE), 1, tensor_descriptors(private_type=False))


@_mutant("HT-SEC-20")
def _section_public_type() -> st.SearchStrategy[bytes]:
    return _header("type_tag", st.sampled_from(sorted(BY_TAG)), 1, tensor_descriptors(
        layout=[k for k in LAYOUT_KINDS if k != "composite_head"], private_type=True, quantized=False))


def _ext_field(field: str, value: Callable[[st.DrawFn, TensorDescriptor], bytes],
               keep: Callable[[ExtensionType], bool] = lambda e: True) -> st.SearchStrategy[bytes]:
    base = tensor_descriptors(layout=[k for k in LAYOUT_KINDS if k != "composite_head"], private_type=True,
                              quantized=False).filter(lambda d: keep(d.extension_type))
    return _field(base, f"descriptor -> extension_type -> {field}", value)


@_mutant("HT-SEC-21")
@st.composite
def _ext_boolean(draw: st.DrawFn) -> bytes:
    field = draw(st.sampled_from(["is_float", "is_signed", "has_nan", "has_inf"]))
    keep = (lambda e: e.bit_width >= 8) if field == "is_float" else (lambda e: True)
    return draw(_ext_field(field, lambda draw, d: _u8(draw(st.integers(2, 255))), keep))


@_mutant("HT-SEC-22")
def _ext_width_zero() -> st.SearchStrategy[bytes]:
    return _ext_field("bit_width", lambda draw, d: _u32(0))


@_mutant("HT-SEC-23")
def _ext_packing_wide() -> st.SearchStrategy[bytes]:
    return _ext_field("packing_factor", lambda draw, d: _u8(draw(st.integers(0, 255).filter(lambda v: v != 1))),
                      lambda e: e.bit_width >= 8)


@_mutant("HT-SEC-24")
def _ext_width_odd() -> st.SearchStrategy[bytes]:
    return _ext_field("bit_width", lambda draw, d: _u32(draw(st.sampled_from([3, 5, 6, 7]))))


@_mutant("HT-SEC-25")
def _ext_packing_narrow() -> st.SearchStrategy[bytes]:
    return _ext_field("packing_factor", lambda draw, d: _u8(draw(_other_than(
        st.integers(0, 255), 8 // d.extension_type.bit_width))), lambda e: e.bit_width < 8)


@_mutant("HT-SEC-26")
def _ext_float_signed() -> st.SearchStrategy[bytes]:
    return _ext_field("is_signed", lambda draw, d: _u8(1), lambda e: e.is_float == 1)


@_mutant("HT-SEC-27")
def _ext_sign_bits() -> st.SearchStrategy[bytes]:
    return _ext_field("sign_bits", lambda draw, d: _u8(draw(st.integers(2, 255))))


def _ext_integer(field: str, width: int) -> st.SearchStrategy[bytes]:
    values = st.just(1) if field == "sign_bits" else st.integers(1, 255 if width == 1 else 2**32 - 1)
    pack = _u8 if width == 1 else _u32
    return _ext_field(field, lambda draw, d: pack(draw(values)), lambda e: e.is_float == 0)


@_mutant("HT-SEC-28")
def _ext_int_sign() -> st.SearchStrategy[bytes]:
    return _ext_integer("sign_bits", 1)


@_mutant("HT-SEC-29")
def _ext_int_exponent() -> st.SearchStrategy[bytes]:
    return _ext_integer("exponent_bits", 1)


@_mutant("HT-SEC-30")
def _ext_int_mantissa() -> st.SearchStrategy[bytes]:
    return _ext_integer("mantissa_bits", 1)


@_mutant("HT-SEC-31")
def _ext_int_bias() -> st.SearchStrategy[bytes]:
    return _ext_integer("exponent_bias", 4)


@_mutant("HT-SEC-32")
def _ext_reserved() -> st.SearchStrategy[bytes]:
    return _ext_field("reserved", lambda draw, d: draw(_nonzero_bytes(2)))


@_mutant("HT-SEC-33")
def _ext_reserved2() -> st.SearchStrategy[bytes]:
    return _ext_field("reserved2", lambda draw, d: draw(_nonzero_bytes(2)))


def _member_field(field: str, value: Callable[[st.DrawFn, TensorDescriptor], bytes]) -> st.SearchStrategy[bytes]:
    return _field(tensor_descriptors(layout=[k for k in LAYOUT_KINDS if k != "composite_head"],
                                     composite_member=True), f"descriptor -> composite_member -> {field}", value)


@_mutant("HT-SEC-36")
def _member_role() -> st.SearchStrategy[bytes]:
    return _member_field("member_role", lambda draw, d: _u8(draw(st.integers(2, 255))))


@_mutant("HT-SEC-37")
def _member_reserved() -> st.SearchStrategy[bytes]:
    return _member_field("reserved", lambda draw, d: draw(_nonzero_bytes(15)))


@_mutant("HT-SEC-38")
@st.composite
def _head_member(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout=_HEADS))
    return _raw(d.model_copy(update={"composite_member": CompositeMember(member_role=draw(st.integers(0, 1)))}))


# ================================================================ mutants: quantization

_ALL_SCHEMES = SCHEME_NAMES


@_mutant("HQ-HDR-04")
@st.composite
def _payload_short(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(scheme=_ALL_SCHEMES))
    data = write_tensor_descriptor(d)
    pos = _positions(data)
    start = pos["descriptor -> quantization"]
    length = struct.unpack_from("<I", data, start - 4)[0]
    fixed = scheme_row(d.quantization.scheme_tag).length
    keep = draw(st.integers(0, fixed - 1))
    out = data[:start - 4] + _u32(keep) + data[start:start + keep] + data[start + length:]
    return _with_length(out)


def _scheme_tag(values: st.SearchStrategy[int]) -> st.SearchStrategy[bytes]:
    return _quant_field(_ALL_SCHEMES, "scheme_tag", lambda draw, d: _u8(draw(values)))


@_mutant("HQ-HDR-07")
def _tag_invalid() -> st.SearchStrategy[bytes]:
    return _scheme_tag(st.sampled_from([0x00, 0xFF]))


@_mutant("HQ-HDR-08")
def _tag_unassigned() -> st.SearchStrategy[bytes]:
    return _scheme_tag(st.integers(0x06, 0x5F))


@_mutant("HQ-HDR-09")
def _tag_nested() -> st.SearchStrategy[bytes]:
    return _scheme_tag(st.integers(0x60, 0x7F))


@_mutant("HQ-HDR-10")
def _tag_future() -> st.SearchStrategy[bytes]:
    return _scheme_tag(st.integers(0x80, 0xEF))


@_mutant("HQ-EXT-03")
def _tag_private() -> st.SearchStrategy[bytes]:
    return _scheme_tag(st.integers(0xF0, 0xFE).filter(lambda t: t not in SCHEMES))


@_mutant("HQ-HDR-11")
def _version_new() -> st.SearchStrategy[bytes]:
    return _quant_field(_ALL_SCHEMES, "scheme_version", lambda draw, d: _u8(draw(st.integers(2, 255))))


@_mutant("HQ-HDR-12")
def _version_zero() -> st.SearchStrategy[bytes]:
    return _quant_field(_ALL_SCHEMES, "scheme_version", lambda draw, d: _u8(0))


@_mutant("HQ-HDR-13")
def _scheme_flags() -> st.SearchStrategy[bytes]:
    def value(draw: st.DrawFn, d: TensorDescriptor) -> bytes:
        defined = sum(1 << bit for bit in scheme_row(d.quantization.scheme_tag).flags_defined)
        extra = draw(st.integers(1, 0xFFFF).filter(lambda v: v & ~defined))
        return (d.quantization.flags | (extra & ~defined)).to_bytes(2, "little")
    return _quant_field(_ALL_SCHEMES, "flags", value)


def _f32(v: float) -> bytes:
    return struct.pack("<f", v)


@_mutant("HQ-PT-02")
def _pt_zero() -> st.SearchStrategy[bytes]:
    return _quant_field("per_tensor_affine", "scale", lambda draw, d: _f32(draw(st.sampled_from([0.0, -0.0]))))


@_mutant("HQ-PT-03")
def _pt_nonfinite() -> st.SearchStrategy[bytes]:
    bits = st.builds(lambda sign, mantissa: _u32(sign << 31 | 0xFF << 23 | mantissa), st.integers(0, 1),
                     st.integers(0, (1 << 23) - 1))
    return _quant_field("per_tensor_affine", "scale", lambda draw, d: draw(bits))


def _storage_range(d: TensorDescriptor) -> tuple[int, int]:
    return BY_TAG[d.type_tag].zero_point_range


@_mutant("HQ-PT-04")
def _pt_zero_point() -> st.SearchStrategy[bytes]:
    def value(draw: st.DrawFn, d: TensorDescriptor) -> bytes:
        low, high = _storage_range(d)
        outside = st.one_of(*([st.integers(-(1 << 31), low - 1)] if low > -(1 << 31) else []),
                            *([st.integers(high + 1, (1 << 31) - 1)] if high < (1 << 31) - 1 else []))
        return struct.pack("<i", draw(outside))
    return _field(tensor_descriptors(scheme="per_tensor_affine", layout=("row_major", "column_major")).filter(
        lambda d: _storage_range(d) != (-(1 << 31), (1 << 31) - 1)), "descriptor -> quantization -> zero_point",
        value)


@_mutant("HQ-PT-05")
def _pt_reserved() -> st.SearchStrategy[bytes]:
    return _quant_field("per_tensor_affine", "reserved", lambda draw, d: draw(_nonzero_bytes(4)))


def _storage_outside(scheme: str) -> st.SearchStrategy[bytes]:
    allowed = {BY_NAME[n].tag for n in STORAGE[scheme]}
    others = sorted(t for t in BY_TAG if t not in allowed)
    return _header("type_tag", st.sampled_from(others), 1, tensor_descriptors(scheme=scheme, shard=False))


@_mutant("HQ-PT-07")
def _pt_storage() -> st.SearchStrategy[bytes]:
    return _storage_outside("per_tensor_affine")


@_mutant("HQ-PC-11")
def _pc_storage() -> st.SearchStrategy[bytes]:
    return _storage_outside("per_channel_affine")


@_mutant("HQ-PB-14")
def _pb_storage() -> st.SearchStrategy[bytes]:
    return _storage_outside("per_block_affine")


@_mutant("HQ-NF4-10")
def _nf4_storage() -> st.SearchStrategy[bytes]:
    return _storage_outside("nf4")


@_mutant("HQ-MX-09")
def _mx_storage() -> st.SearchStrategy[bytes]:
    return _storage_outside("mxfp")


def _axis_high(scheme: str) -> st.SearchStrategy[bytes]:
    return _quant_field(scheme, "axis", lambda draw, d: _u32(draw(st.integers(d.rank, 2**32 - 1))))


def _axis_dynamic(scheme: str) -> st.SearchStrategy[bytes]:
    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        d = draw(tensor_descriptors(scheme=scheme, layout=("row_major", "column_major"), shard=False))
        shape = list(d.shape)
        shape[d.quantization.axis] = DYNAMIC
        return _raw(d.model_copy(update={"shape": tuple(shape)}))
    return build()


@_mutant("HQ-PC-02")
def _pc_axis() -> st.SearchStrategy[bytes]:
    return _axis_high("per_channel_affine")


@_mutant("HQ-PB-02")
def _pb_axis() -> st.SearchStrategy[bytes]:
    return _axis_high("per_block_affine")


@_mutant("HQ-NF4-02")
def _nf4_axis() -> st.SearchStrategy[bytes]:
    return _axis_high("nf4")


@_mutant("HQ-MX-02")
def _mx_axis() -> st.SearchStrategy[bytes]:
    return _axis_high("mxfp")


@_mutant("HQ-PC-03")
def _pc_dynamic() -> st.SearchStrategy[bytes]:
    return _axis_dynamic("per_channel_affine")


@_mutant("HQ-PB-07")
def _pb_dynamic() -> st.SearchStrategy[bytes]:
    return _axis_dynamic("per_block_affine")


@_mutant("HQ-NF4-07")
def _nf4_dynamic() -> st.SearchStrategy[bytes]:
    return _axis_dynamic("nf4")


@_mutant("HQ-MX-06")
def _mx_dynamic() -> st.SearchStrategy[bytes]:
    return _axis_dynamic("mxfp")


def _symmetric_base(scheme: str, symmetric: bool) -> st.SearchStrategy[TensorDescriptor]:
    return tensor_descriptors(scheme=scheme, layout=("row_major", "column_major")).filter(
        lambda d: d.quantization.symmetric is symmetric)


def _flags_set(scheme: str) -> st.SearchStrategy[bytes]:
    return _field(_symmetric_base(scheme, False), "descriptor -> quantization -> flags",
                  lambda draw, d: (d.quantization.flags | 1).to_bytes(2, "little"))


def _flags_clear(scheme: str) -> st.SearchStrategy[bytes]:
    return _field(_symmetric_base(scheme, True), "descriptor -> quantization -> flags",
                  lambda draw, d: (d.quantization.flags & ~1).to_bytes(2, "little"))


def _zero_point_index(scheme: str) -> st.SearchStrategy[bytes]:
    return _field(_symmetric_base(scheme, True), "descriptor -> quantization -> zero_point_buffer_index",
                  lambda draw, d: _u32(draw(st.integers(0, 0xFFFF_FFFE))))


@_mutant("HQ-PC-04")
@st.composite
def _pc_symmetric_index(draw: st.DrawFn) -> bytes:
    return draw(_flags_set("per_channel_affine") if draw(st.booleans()) else _zero_point_index("per_channel_affine"))


@_mutant("HQ-PC-05")
def _pc_asymmetric_none() -> st.SearchStrategy[bytes]:
    return _flags_clear("per_channel_affine")


@_mutant("HQ-PB-10")
@st.composite
def _pb_symmetric_index(draw: st.DrawFn) -> bytes:
    return draw(_flags_set("per_block_affine") if draw(st.booleans()) else _zero_point_index("per_block_affine"))


@_mutant("HQ-PB-11")
def _pb_asymmetric_none() -> st.SearchStrategy[bytes]:
    return _flags_clear("per_block_affine")


@_mutant("HQ-PC-06")
def _pc_scale_type() -> st.SearchStrategy[bytes]:
    return _quant_field("per_channel_affine", "scale_type_tag", lambda draw, d: _u8(draw(_other_than(
        st.integers(0, 255), 3))))


@_mutant("HQ-PC-07")
def _pc_reserved() -> st.SearchStrategy[bytes]:
    return _quant_field("per_channel_affine", "reserved", lambda draw, d: draw(_nonzero_bytes(3)))


@_mutant("HQ-PB-08")
def _pb_scale_type() -> st.SearchStrategy[bytes]:
    return _quant_field("per_block_affine", "scale_type_tag", lambda draw, d: _u8(draw(_other_than(
        st.integers(0, 255), 1, 2, 3))))


@_mutant("HQ-PB-09")
def _pb_reserved() -> st.SearchStrategy[bytes]:
    return _quant_field("per_block_affine", "reserved", lambda draw, d: draw(_nonzero_bytes(3)))


def _block(scheme: str, values: st.SearchStrategy[int]) -> st.SearchStrategy[bytes]:
    return _quant_field(scheme, "block_size", lambda draw, d: _u32(draw(values)))


@_mutant("HQ-PB-03")
def _pb_block_pow2() -> st.SearchStrategy[bytes]:
    return _block("per_block_affine", _non_pow2(3, 2**32 - 1))


@_mutant("HQ-PB-04")
def _pb_block_low() -> st.SearchStrategy[bytes]:
    return _block("per_block_affine", st.integers(0, 1))


@_mutant("HQ-NF4-03")
def _nf4_block_pow2() -> st.SearchStrategy[bytes]:
    return _block("nf4", _non_pow2(9, 2**32 - 1))


@_mutant("HQ-NF4-04")
def _nf4_block_low() -> st.SearchStrategy[bytes]:
    return _block("nf4", st.integers(0, 7))


@_mutant("HQ-MX-03")
def _mx_block_pow2() -> st.SearchStrategy[bytes]:
    return _block("mxfp", _non_pow2(17, 2047))


@_mutant("HQ-MX-04")
def _mx_block_low() -> st.SearchStrategy[bytes]:
    return _block("mxfp", st.integers(0, 15))


@_mutant("HQ-MX-05")
def _mx_block_high() -> st.SearchStrategy[bytes]:
    return _block("mxfp", _pow2(12, 31))


def _block_beyond(scheme: str) -> st.SearchStrategy[bytes]:
    def nonzero_axis(d: TensorDescriptor) -> bool:
        return 0 < d.shape[d.quantization.axis] < 1 << 31

    return _field(tensor_descriptors(scheme=scheme, layout=("row_major", "column_major")).filter(nonzero_axis),
                  "descriptor -> quantization -> block_size",
                  lambda draw, d: _u32(draw(_pow2(d.shape[d.quantization.axis].bit_length(), 31))))


@_mutant("HQ-PB-05")
def _pb_block_beyond() -> st.SearchStrategy[bytes]:
    return _block_beyond("per_block_affine")


@_mutant("HQ-NF4-05")
def _nf4_block_beyond() -> st.SearchStrategy[bytes]:
    return _block_beyond("nf4")


@_mutant("HQ-MX-07")
@st.composite
def _mx_axis_empty(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(scheme="mxfp", layout=("row_major", "column_major"), shard=False))
    shape = list(d.shape)
    shape[d.quantization.axis] = 0
    return _raw(d.model_copy(update={"shape": tuple(shape)}))


@_mutant("HQ-MX-08")
@st.composite
def _mx_partial(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(scheme="mxfp", layout=("row_major", "column_major"), shard=False))
    shape = list(d.shape)
    block = d.quantization.block_size
    shape[d.quantization.axis] = draw(st.integers(1, 4096).filter(lambda n: n % block))
    return _raw(d.model_copy(update={"shape": tuple(shape)}))


@_mutant("HQ-PB-17")
@st.composite
def _unpadded(draw: st.DrawFn) -> bytes:
    from .tensor.context import TensorContext

    def partial(d: TensorDescriptor) -> bool:
        q = d.quantization
        return d.shape[q.axis] % q.block_size != 0 and 0 not in d.shape

    d = draw(tensor_descriptors(scheme=("per_block_affine", "nf4"), layout=("row_major", "column_major")).filter(
        partial))
    t = TensorContext(d)
    q = d.quantization
    padded = list(d.shape)
    padded[q.axis] = -(-d.shape[q.axis] // q.block_size) * q.block_size
    need = d.byte_offset + t.packed(_product(padded))
    low = min(d.byte_offset + t.packed(_product(d.shape)), need - 1)
    return _raw(_set_buffer(d, 0, draw(st.integers(low, need - 1))))


def _parameter_base(schemes: Sequence[str], **kw: Any) -> st.SearchStrategy[TensorDescriptor]:
    return tensor_descriptors(scheme=list(schemes), **kw)


@_mutant("HQ-BUF-01")
@st.composite
def _index_beyond(draw: st.DrawFn) -> bytes:
    d = draw(_parameter_base(("per_channel_affine", "per_block_affine", "nf4", "mxfp")))
    data = write_tensor_descriptor(d)
    fields = ["scale_buffer_index"] + ([] if getattr(d.quantization, "symmetric", True) else
                                       ["zero_point_buffer_index"])
    field = draw(st.sampled_from(fields))
    top = 0xFFFF_FFFF if field == "scale_buffer_index" else 0xFFFF_FFFE
    return _patch(data, _positions(data)[f"descriptor -> quantization -> {field}"],
                  _u32(draw(st.integers(len(d.buffers), top))))


@_mutant("HQ-BUF-02")
def _index_data() -> st.SearchStrategy[bytes]:
    return _field(_parameter_base(("per_channel_affine", "per_block_affine", "nf4", "mxfp")),
                  "descriptor -> quantization -> scale_buffer_index", lambda draw, d: _u32(0))


@_mutant("HQ-BUF-03")
def _index_owned() -> st.SearchStrategy[bytes]:
    from .tensor.layouts import row_of

    return _field(_parameter_base(("per_channel_affine", "per_block_affine", "nf4", "mxfp"),
                                  layout=("coo", "csr", "csc", "csf", "block_paged")),
                  "descriptor -> quantization -> scale_buffer_index",
                  lambda draw, d: _u32(draw(st.integers(1, row_of(d.layout).owned(d.rank) - 1))))


def _shared(d: TensorDescriptor) -> bool:
    q = d.quantization
    return not q.symmetric and q.zero_point_buffer_index == q.scale_buffer_index


@_mutant("HQ-BUF-04")
@st.composite
def _shared_short(draw: st.DrawFn) -> bytes:
    d = draw(_parameter_base(("per_channel_affine", "per_block_affine")).filter(_shared))
    index = d.quantization.scale_buffer_index
    have = d.buffers[index].byte_size
    return _raw(_set_buffer(d, index, draw(_other_than(st.integers(0, have + 64), have))))


@_mutant("HQ-BUF-06")
@st.composite
def _parameter_device(draw: st.DrawFn) -> bytes:
    d = draw(_parameter_base(("per_channel_affine", "per_block_affine", "nf4", "mxfp")))
    index = d.quantization.scale_buffer_index
    buffers = list(d.buffers)
    buffers[index] = _moved(draw, buffers[index])
    return _raw(d.model_copy(update={"buffers": tuple(buffers)}))


def _parameter_size(scheme: str, field: str, **kw: Any) -> st.SearchStrategy[bytes]:
    def separate(d: TensorDescriptor) -> bool:
        index = getattr(d.quantization, field)
        return index is not None and not _shared(d) if hasattr(d.quantization, "symmetric") else True

    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        d = draw(tensor_descriptors(scheme=scheme, shard=False, **kw).filter(separate))
        index = getattr(d.quantization, field)
        have = d.buffers[index].byte_size
        return _raw(_set_buffer(d, index, draw(_other_than(st.integers(0, have + 64), have))))
    return build()


_UNPAGED = ("row_major", "column_major", "coo", "csr", "csc", "csf")


@_mutant("HQ-BUF-07")
def _pc_scale_size() -> st.SearchStrategy[bytes]:
    return _parameter_size("per_channel_affine", "scale_buffer_index", layout=_UNPAGED + ("block_paged",))


@_mutant("HQ-BUF-08")
def _pc_zero_size() -> st.SearchStrategy[bytes]:
    return _parameter_size("per_channel_affine", "zero_point_buffer_index", layout=_UNPAGED + ("block_paged",))


@_mutant("HQ-BUF-09")
def _pb_scale_size() -> st.SearchStrategy[bytes]:
    return _parameter_size("per_block_affine", "scale_buffer_index", layout=_UNPAGED)


@_mutant("HQ-BUF-10")
def _pb_zero_size() -> st.SearchStrategy[bytes]:
    return _parameter_size("per_block_affine", "zero_point_buffer_index", layout=_UNPAGED)


@_mutant("HQ-BUF-11")
def _nf4_scale_size() -> st.SearchStrategy[bytes]:
    return _parameter_size("nf4", "scale_buffer_index", layout=_UNPAGED)


@_mutant("HQ-BUF-12")
def _mx_scale_size() -> st.SearchStrategy[bytes]:
    return _parameter_size("mxfp", "scale_buffer_index", layout=_UNPAGED)


@_mutant("HQ-BUF-13")
@st.composite
def _paged_parameter_size(draw: st.DrawFn) -> bytes:
    field = draw(st.sampled_from(["scale_buffer_index", "zero_point_buffer_index"]))
    return draw(_parameter_size("per_block_affine", field, layout="block_paged"))


# ================================================================ what has no generator, and why

NOT_REFUSABLE: dict[str, str] = {
    **{rule: "acceptance rule: it says what a reader accepts; the valid strategies exercise it"
       for rule in ("HQ-HDR-05", "HQ-PB-06", "HQ-PB-16", "HQ-PB-20", "HQ-NF4-06", "HQ-EXT-01", "HT-HDR-10",
                    "HT-HDR-11", "HT-HDR-14", "HT-HDR-18", "HT-HDR-22", "HT-LAY-04", "HT-LAY-45", "HT-SEC-12",
                    "HE-09")},
    **{rule: "wire layout (byte order, field order and widths): bytes that do not follow it are read as "
             "other values or are cut short, and are refused under the rule of those values or under "
             "HQ-HDR-04 / HT-HDR-08 / HT-HDR-09"
       for rule in ("HQ-HDR-01", "HQ-HDR-02", "HQ-PT-01", "HQ-PC-01", "HQ-PB-01", "HQ-NF4-01", "HQ-MX-01",
                    "HT-HDR-01", "HT-HDR-02", "HT-HDR-03", "HT-LAY-01", "HT-LAY-02", "HT-LAY-03", "HT-LAY-07",
                    "HT-LAY-16", "HT-LAY-26", "HT-LAY-34", "HT-LAY-42", "HT-LAY-68", "HT-LAY-77", "HT-LAY-84", "HT-BUFT-01", "HT-SEC-01", "HT-SEC-03",
                    "HT-SEC-35")},
    "HQ-HDR-06": "dispatch on byte 0: a reader reads the scheme the tag names, so the tag and the fields "
                 "never disagree in bytes (HQ-HDR-06 is raised only by parsing one scheme's bytes as another's)",
    "HQ-HDR-14": "an implementation requirement (every Tier 1 scheme is implemented), not a property of input",
    "HT-SEC-02": "hurray_decl implements quantization, so no descriptor is refused for carrying it",
    "HT-BUFT-16": "project decision HD-23: private device tags are accepted (with STANDARD or an agreed "
                  "private memory class); the refusals this rule implies are HT-BUFT-21 and HT-BUFT-22",
}
"""Reader rules of the Hurray areas with no mutant generator, each with the reason."""

# ================================================================ data mutants


def _data_base(schemes: Sequence[str]) -> st.SearchStrategy[TensorDescriptor]:
    return tensor_descriptors(scheme=list(schemes), layout=("row_major", "column_major")).filter(
        lambda d: any(d.buffers[p].byte_size for p in _param_indices(d)))


def _param_indices(d: TensorDescriptor) -> list[int]:
    q = d.quantization
    indices = [q.scale_buffer_index] if hasattr(q, "scale_buffer_index") else []
    return indices


DATA_MUTANTS: dict[str, Callable[[], st.SearchStrategy[tuple[bytes, tuple[bytes, ...]]]]] = {}
"""Data rules with a generator: each draws (descriptor bytes, buffer contents)."""


def _scale_mutant(schemes: Sequence[str], bad: Callable[[st.DrawFn, str], bytes]):
    @st.composite
    def build(draw: st.DrawFn) -> tuple[bytes, tuple[bytes, ...]]:
        d = draw(_data_base(schemes))
        contents = list(draw(buffers_for(d)))
        q = d.quantization
        dtype = SCALE_TYPES[q.scale_type_tag] if isinstance(q, PerBlockAffine) else "float32"
        width = 2 if dtype in ("float16", "bfloat16") else 4
        count = _scale_count(d)  # a shared entry holds the scales first (HQ-BUF-05)
        i = draw(st.integers(0, max(count - 1, 0)))
        raw = bytearray(contents[q.scale_buffer_index])
        raw[i * width:(i + 1) * width] = bad(draw, dtype)
        contents[q.scale_buffer_index] = bytes(raw)
        return write_tensor_descriptor(d), tuple(contents)
    return build


def _scale_count(d: TensorDescriptor) -> int:
    from .tensor.context import check_descriptor

    t = check_descriptor(d)
    q = d.quantization
    width = 2 if isinstance(q, PerBlockAffine) and q.scale_type_tag in (1, 2) else 4
    return next(p.size for p in t.params if p.field == "scale_buffer_index") // width


def _encode_scale(value: float, dtype: str) -> bytes:
    import ml_dtypes
    import numpy as np

    kind = {"float16": np.dtype("<f2"), "bfloat16": np.dtype(ml_dtypes.bfloat16), "float32": np.dtype("<f4")}[dtype]
    return np.array([value], dtype=np.float64).astype(kind).tobytes()


def _nonfinite(draw: st.DrawFn, dtype: str) -> bytes:
    return _encode_scale(draw(st.sampled_from([math.nan, math.inf, -math.inf])), dtype)


def _zero(draw: st.DrawFn, dtype: str) -> bytes:
    return _encode_scale(draw(st.sampled_from([0.0, -0.0])), dtype)


def _negative(draw: st.DrawFn, dtype: str) -> bytes:
    return _encode_scale(-draw(st.integers(1, 8)) * 2.0 ** draw(st.integers(-8, 8)), dtype)


DATA_MUTANTS.update({
    "HQ-PC-08": _scale_mutant(["per_channel_affine"], _nonfinite),
    "HQ-PC-09": _scale_mutant(["per_channel_affine"], _zero),
    "HQ-PB-12": _scale_mutant(["per_block_affine"], _nonfinite),
    "HQ-PB-13": _scale_mutant(["per_block_affine"], _zero),
    "HQ-NF4-08": _scale_mutant(["nf4"], _nonfinite),
    "HQ-NF4-09": _scale_mutant(["nf4"], _negative),
})


@st.composite
def _mx_scale_byte(draw: st.DrawFn) -> tuple[bytes, tuple[bytes, ...]]:
    d = draw(_data_base(["mxfp"]))
    contents = list(draw(buffers_for(d)))
    index = d.quantization.scale_buffer_index
    raw = bytearray(contents[index])
    raw[draw(st.integers(0, len(raw) - 1))] = draw(st.sampled_from([0x00, 0xFF]))
    contents[index] = bytes(raw)
    return write_tensor_descriptor(d), tuple(contents)


@st.composite
def _pc_zero_point_range(draw: st.DrawFn) -> tuple[bytes, tuple[bytes, ...]]:
    def usable(d: TensorDescriptor) -> bool:
        q = d.quantization
        return not q.symmetric and d.shape[q.axis] > 0 and _storage_range(d) != (-(1 << 31), (1 << 31) - 1)

    d = draw(tensor_descriptors(scheme="per_channel_affine", layout=("row_major", "column_major")).filter(usable))
    contents = list(draw(buffers_for(d)))
    q = d.quantization
    count = d.shape[q.axis]
    low, high = _storage_range(d)
    outside = st.one_of(*([st.integers(-(1 << 31), low - 1)] if low > -(1 << 31) else []),
                        *([st.integers(high + 1, (1 << 31) - 1)] if high < (1 << 31) - 1 else []))
    start = 4 * count if _shared(d) else 0
    i = draw(st.integers(0, count - 1))
    raw = bytearray(contents[q.zero_point_buffer_index])
    raw[start + 4 * i:start + 4 * i + 4] = struct.pack("<i", draw(outside))
    contents[q.zero_point_buffer_index] = bytes(raw)
    return write_tensor_descriptor(d), tuple(contents)


DATA_MUTANTS["HQ-MX-10"] = _mx_scale_byte
DATA_MUTANTS["HQ-PC-10"] = _pc_zero_point_range

def _u64_list(raw: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(raw) // 8}Q", raw))


def _layout_data(kind: str, keep: Callable[[TensorDescriptor, tuple[bytes, ...]], bool],
                 change: Callable[[st.DrawFn, TensorDescriptor, list[bytes]], None], **kw: Any):
    """Valid contents for a valid ``kind`` descriptor, then ``change`` applied to them in place."""
    @st.composite
    def build(draw: st.DrawFn) -> tuple[bytes, tuple[bytes, ...]]:
        d = draw(tensor_descriptors(layout=kind, quantized=False, **kw))
        contents = draw(buffers_for(d))
        assume(keep(d, contents))
        out = list(contents)
        change(draw, d, out)
        return write_tensor_descriptor(d), tuple(out)
    return build


def _pointer_change(index: int, how: str) -> Callable[[st.DrawFn, TensorDescriptor, list[bytes]], None]:
    def change(draw: st.DrawFn, d: TensorDescriptor, out: list[bytes]) -> None:
        width = getattr(d.layout, "index_width", 8)
        fmt = "<%d" + ("I" if width == 4 else "Q")
        ptr = list(struct.unpack(fmt % (len(out[index]) // width), out[index]))
        top = (1 << (8 * width)) - 1
        if how == "start":
            ptr[0] = draw(st.integers(1, ptr[1]))
        elif how == "end":
            ptr[-1] = draw(_other_than(st.integers(ptr[-2], min(top, ptr[-2] + 64)), ptr[-1]))
        else:  # an interior entry above the next one: that step decreases, start and end stay
            i = draw(st.integers(1, len(ptr) - 2))
            ptr[i] = draw(st.integers(ptr[i + 1] + 1, min(top, ptr[i + 1] + 64)))
        out[index] = struct.pack(fmt % len(ptr), *ptr)
    return change


def _ptrs(d: TensorDescriptor, contents: Sequence[bytes], index: int = 2) -> list[int]:
    width = getattr(d.layout, "index_width", 8)
    return list(struct.unpack(f"<{len(contents[index]) // width}{'I' if width == 4 else 'Q'}", contents[index]))


def _can(how: str) -> Callable[[TensorDescriptor, tuple[bytes, ...]], bool]:
    def keep(d: TensorDescriptor, contents: tuple[bytes, ...]) -> bool:
        ptr = _ptrs(d, contents)
        if how == "start":
            return len(ptr) >= 2 and ptr[1] >= 1
        if how == "end":
            return len(ptr) >= 2
        return len(ptr) >= 3
    return keep


def _index_change(how: str) -> Callable[[st.DrawFn, TensorDescriptor, list[bytes]], None]:
    def change(draw: st.DrawFn, d: TensorDescriptor, out: list[bytes]) -> None:
        idx = _u64_list(out[1])
        limit = d.shape[0] if isinstance(d.layout, CSC) else d.shape[1]
        if how == "range":
            idx[draw(st.integers(0, len(idx) - 1))] = draw(st.integers(limit, 2**64 - 1))
        else:  # a repeated index inside one segment
            ptr = _u64_list(out[2])
            pairs = [j for r in range(len(ptr) - 1) for j in range(ptr[r] + 1, ptr[r + 1])]
            j = draw(st.sampled_from(pairs))
            idx[j] = idx[j - 1]
        out[1] = _u64s(idx)
    return change


def _segments_of_two(d: TensorDescriptor, contents: tuple[bytes, ...]) -> bool:
    ptr = _u64_list(contents[2])
    return any(ptr[r + 1] - ptr[r] >= 2 for r in range(len(ptr) - 1))


for _kind, (_start, _step, _end, _bound, _order) in {
        "csr": ("HT-LAY-28", "HT-LAY-30", "HT-LAY-29", "HT-LAY-32", "HT-LAY-31"),
        "csc": ("HT-LAY-36", "HT-LAY-38", "HT-LAY-37", "HT-LAY-40", "HT-LAY-39")}.items():
    DATA_MUTANTS[_start] = _layout_data(_kind, _can("start"), _pointer_change(2, "start"))
    DATA_MUTANTS[_end] = _layout_data(_kind, _can("end"), _pointer_change(2, "end"))
    DATA_MUTANTS[_step] = _layout_data(_kind, _can("step"), _pointer_change(2, "step"))
    DATA_MUTANTS[_bound] = _layout_data(_kind, lambda d, c: d.layout.nnz > 0, _index_change("range"))
    DATA_MUTANTS[_order] = _layout_data(_kind, _segments_of_two, _index_change("repeat"))

DATA_MUTANTS["HT-LAY-57"] = _layout_data("block_paged", _can("start"), _pointer_change(2, "start"))
DATA_MUTANTS["HT-LAY-58"] = _layout_data("block_paged", _can("end"), _pointer_change(2, "end"))
DATA_MUTANTS["HT-LAY-59"] = _layout_data("block_paged", _can("step"), _pointer_change(2, "step"))


def _page_beyond(draw: st.DrawFn, d: TensorDescriptor, out: list[bytes]) -> None:
    width = d.layout.index_width
    table = list(struct.unpack(f"<{len(out[1]) // width}{'I' if width == 4 else 'Q'}", out[1]))
    table[draw(st.integers(0, len(table) - 1))] = draw(st.integers(d.layout.num_pages, (1 << (8 * width)) - 1))
    out[1] = struct.pack(f"<{len(table)}{'I' if width == 4 else 'Q'}", *table)


DATA_MUTANTS["HT-LAY-60"] = _layout_data("block_paged", lambda d, c: d.buffers[1].byte_size > 0, _page_beyond)


def _coo_outside(draw: st.DrawFn, d: TensorDescriptor, out: list[bytes]) -> None:
    coords = _u64_list(out[1])
    i, k = draw(st.integers(0, d.layout.nnz - 1)), draw(st.integers(0, d.rank - 1))
    coords[i * d.rank + k] = draw(st.integers(d.shape[k], 2**64 - 1))
    out[1] = _u64s(coords)


def _coo_repeat(draw: st.DrawFn, d: TensorDescriptor, out: list[bytes]) -> None:
    coords = _u64_list(out[1])
    i, j = draw(st.lists(st.integers(0, d.layout.nnz - 1), min_size=2, max_size=2, unique=True))
    coords[j * d.rank:(j + 1) * d.rank] = coords[i * d.rank:(i + 1) * d.rank]
    out[1] = _u64s(coords)


DATA_MUTANTS["HT-LAY-22"] = _layout_data("coo", lambda d, c: d.layout.nnz > 0, _coo_outside)
DATA_MUTANTS["HT-LAY-23"] = _layout_data("coo", lambda d, c: d.layout.nnz > 1 and not d.layout.is_sorted,
                                         _coo_repeat)


def _element_data(type_names: Sequence[str], keep: Callable[[TensorDescriptor, int, int], bool],
                  change: Callable[[st.DrawFn, bytearray, int, int, int], None]):
    """A row- or column-major tensor of one of ``type_names``; ``change(draw, data, start, count, bits)``."""
    @st.composite
    def build(draw: st.DrawFn) -> tuple[bytes, tuple[bytes, ...]]:
        from .tensor.context import TensorContext

        name = draw(st.sampled_from(list(type_names)))
        d = draw(tensor_descriptors(layout=("row_major", "column_major"), quantized=False, private_type=False,
                                    shard=False).map(lambda d: d.model_copy(update={"type_tag": BY_NAME[name].tag})))
        t = TensorContext(d)
        count = t.element_count()
        need = d.byte_offset + byte_size(name, count)
        assume(need <= d.buffers[0].byte_size and keep(d, count, BY_NAME[name].bits))
        d = _set_buffer(d, 0, need) if d.buffers[0].byte_size != need else d
        contents = list(draw(buffers_for(d)))
        data = bytearray(contents[0])
        change(draw, data, d.byte_offset, count, BY_NAME[name].bits)
        contents[0] = bytes(data)
        return write_tensor_descriptor(d), tuple(contents)
    return build


def _e8m0_forbidden(draw: st.DrawFn, data: bytearray, start: int, count: int, bits: int) -> None:
    data[start + draw(st.integers(0, count - 1))] = draw(st.sampled_from([0x00, 0xFF]))


def _padding_bits(draw: st.DrawFn, data: bytearray, start: int, count: int, bits: int) -> None:
    if bits == 6:
        group = start + (count // 4) * 3
        used = (count % 4) * 6
        word = int.from_bytes(data[group:group + 3], "little")
        word |= draw(st.integers(1, (1 << (24 - used)) - 1)) << used
        data[group:group + 3] = word.to_bytes(3, "little")
        return
    used = (count * bits) % 8
    last = start + byte_size({1: "bool", 2: "uint2", 4: "uint4"}[bits], count) - 1
    data[last] |= draw(st.integers(1, (1 << (8 - used)) - 1)) << used


def _partial_unit(d: TensorDescriptor, count: int, bits: int) -> bool:
    return count > 0 and ((count % 4 != 0) if bits == 6 else (count * bits) % 8 != 0)


DATA_MUTANTS["HE-26"] = _element_data(["float8_e8m0"], lambda d, n, b: n > 0, _e8m0_forbidden)
DATA_MUTANTS["HE-13"] = _element_data(["bool"], _partial_unit, _padding_bits)
DATA_MUTANTS["HE-15"] = _element_data(["int4", "uint4", "float4_e2m1"], _partial_unit, _padding_bits)
DATA_MUTANTS["HE-17"] = _element_data(["int2", "uint2"], _partial_unit, _padding_bits)
DATA_MUTANTS["HE-19"] = _element_data(["float6_e2m3", "float6_e3m2"], _partial_unit, _padding_bits)

DATA_NOT_GENERATED: dict[str, str] = {
    **{rule: "statement about what is never read or decided (no input breaks it)"
       for rule in ("HQ-EXT-02", "HT-HDR-17", "HT-SEC-13", "HE-01", "HE-04", "HE-08")},
    **{rule: "not generated yet: the CSF tree invariants (validate_buffers covers them in "
             "tests/hurray/test_tensor_data.py); buffers_for draws CSF contents that satisfy them"
       for rule in ("HT-LAY-46", "HT-LAY-47", "HT-LAY-48", "HT-LAY-49", "HT-LAY-50", "HT-LAY-51")},
}
"""Data rules (role reader or both, needs data) without a generator in :data:`DATA_MUTANTS`."""


# ================================================================ public mutant strategies


def invalid_tensor_descriptors(rule: str | Iterable[str] | None = None) -> st.SearchStrategy[tuple[bytes, str]]:
    """``(descriptor bytes, rule_id)``: a valid descriptor changed in the field ``rule_id``
    governs, so that a reader must refuse it under that rule. ``rule`` picks one rule or
    several (default: every rule in :data:`MUTANTS`)."""
    rules = sorted(MUTANTS) if rule is None else ([rule] if isinstance(rule, str) else list(rule))
    missing = [r for r in rules if r not in MUTANTS]
    if missing:
        raise KeyError(f"no mutant generator for {missing}")
    return st.one_of([MUTANTS[r]().map(lambda data, r=r: (data, r)) for r in rules])


def invalid_buffers(rule: str | Iterable[str] | None = None) -> st.SearchStrategy[
        tuple[bytes, tuple[bytes, ...], str]]:
    """``(descriptor bytes, buffer contents, rule_id)``: a valid descriptor whose buffer contents
    break the data rule ``rule_id`` (see :data:`DATA_MUTANTS`); the descriptor itself is valid."""
    rules = sorted(DATA_MUTANTS) if rule is None else ([rule] if isinstance(rule, str) else list(rule))
    return st.one_of([DATA_MUTANTS[r]().map(lambda case, r=r: (case[0], case[1], r)) for r in rules])
