"""What every scheme shares: the 4-byte quantization header and the tag space (quantization.txt
§ Descriptor Header, DIGEST § 2.2), the parameter buffers (HQ-BUF-*), the storage type each row
allows, the SYMMETRIC flag of the models that have one, and the helpers the scheme modules
build their own mutants with. Every scheme here comes from a registry row."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st

from hurray_decl.hurray.quantization import ASSIGNED, SCHEMES, scheme as scheme_row
from hurray_decl.hurray.schemes.quantization import SYMMETRIC, SymmetricZeroPoint
from hurray_decl.hurray.strategies.buffers import moved_device
from hurray_decl.hurray.strategies.mutants import Value, data_mutant, drawn, field_mutant, header_field, mutant
from hurray_decl.hurray.strategies.patching import fields, patched, value_at
from hurray_decl.hurray.strategies.quantization import ROWS, SCHEME_NAMES, STORAGE, of, with_parameters
from hurray_decl.hurray.strategies.tensor import (
    LAYOUT_STRATEGIES,
    buffers_for,
    contiguous,
    layouts_in,
    scheme_of,
    tensor_descriptors,
)
from hurray_decl.hurray.strategies.values import INDICES, outside, pow2, product
from hurray_decl.hurray.tables.element_types import BY_NAME, BY_TAG
from hurray_decl.hurray.tables.storage import dtype as storage_dtype
from hurray_decl.hurray.tables.tags import TAG_RANGES
from hurray_decl.hurray.tensor import TensorDescriptor, write_tensor_descriptor
from hurray_decl.hurray.tensor.buffers import MIN_ALIGNMENT
from hurray_decl.hurray.tensor.common import DYNAMIC
from hurray_decl.hurray.tensor.context import TensorContext, check_descriptor
from hurray_decl.hurray.tensor.fields import with_length
from hurray_decl.registry import SchemeRow

INT32 = (-(1 << 31), (1 << 31) - 1)


def quantized(scheme: str | Sequence[str], **kw: Any) -> st.SearchStrategy[TensorDescriptor]:
    kw.setdefault("layout", contiguous())
    return tensor_descriptors(scheme=scheme, **kw)


def quant_field(scheme: str | Sequence[str], field: str, value: Value, **kw: Any) -> st.SearchStrategy[bytes]:
    """A valid quantized descriptor with one field of its quantization payload replaced."""
    return field_mutant(quantized(scheme, **kw), f"quantization.{field}", value)


def storage_range(d: TensorDescriptor) -> tuple[int, int]:
    bounds = BY_TAG[d.type_tag].zero_point_range
    if bounds is None:
        raise ValueError(f"type 0x{d.type_tag:02X} holds no integer codes")
    return bounds


def _packed(t: TensorContext, count: int) -> int:
    size = t.packed(count)
    if size is None:
        raise ValueError("a tensor of a sized type was drawn")
    return size


def param_size(d: TensorDescriptor, field: str) -> int:
    """The byte size of the parameter array ``field`` names, which the descriptor fixes."""
    size = next(p.size for p in check_descriptor(d).params if p.field == field)
    if size is None:
        raise ValueError(f"the size of {field}'s array is not fixed by the descriptor")
    return size


def owned_buffers(d: TensorDescriptor) -> int:
    """How many buffers the descriptor's layout owns."""
    from hurray_decl.hurray.tensor.layouts import row_of

    owned = row_of(d.layout).owned
    if owned is None:
        raise ValueError("the layout owns no fixed number of buffers")
    return owned(d.rank)


# ================================================================ affine parameters


@st.composite
def affine_indices(draw: st.DrawFn) -> dict:
    symmetric = draw(st.booleans())
    return {"symmetric": symmetric, "scale_buffer_index": draw(INDICES),
            "zero_point_buffer_index": None if symmetric else draw(INDICES)}


def parameter_buffers(draw: st.DrawFn, model: Any, first: int, scale_size: int, zero_size: int, **fields: Any
                      ) -> tuple[Any, tuple[int, ...]]:
    """A model with its scales at buffer ``first``, and zero points unless symmetric: in the
    same entry (HQ-BUF-04) or the next one. Returns the model and the parameter buffer sizes."""
    if draw(st.booleans()):
        return model(scale_buffer_index=first, symmetric=True, **fields), (scale_size,)
    if draw(st.booleans()):
        return model(scale_buffer_index=first, zero_point_buffer_index=first, **fields), (scale_size + zero_size,)
    return model(scale_buffer_index=first, zero_point_buffer_index=first + 1, **fields), (scale_size, zero_size)



# ================================================================ the header and the tag space


@mutant("HQ-HDR-04")
@st.composite
def _payload_short(draw: st.DrawFn) -> bytes:
    data = write_tensor_descriptor(draw(quantized(SCHEME_NAMES, layout=None)))
    where = fields(data)
    prefix, size = where["quantization_length"]
    start, length = prefix + size, value_at(data, "quantization_length", where)
    keep = draw(st.integers(0, scheme_row(data[start]).length - 1))  # shorter than the scheme's fixed fields
    cut = patched(data, "quantization_length", keep, where)
    return with_length(cut[:start + keep] + cut[start + length:])


def _scheme_tag(tags: Sequence[int]) -> Callable[[], st.SearchStrategy[bytes]]:
    values = st.sampled_from(list(tags)).filter(lambda t: t not in SCHEMES)
    return lambda: quant_field(SCHEME_NAMES, "scheme_tag", drawn(values))


_UNUSABLE: dict[str, list[int]] = {}
for _range in TAG_RANGES:  # every tag class's rule, from the one table of the tag space
    _UNUSABLE.setdefault(_range.code, []).extend(t for t in range(_range.first, _range.last + 1) if t not in ASSIGNED)
for _code, _tags in _UNUSABLE.items():
    mutant(_code)(_scheme_tag(_tags))


@mutant("HQ-HDR-11")
def _version_new() -> st.SearchStrategy[bytes]:
    return quant_field(SCHEME_NAMES, "scheme_version",
                       lambda draw, d: draw(st.integers(scheme_row(scheme_of(d).scheme_tag).version + 1, 255)))


@mutant("HQ-HDR-12")
def _version_zero() -> st.SearchStrategy[bytes]:
    return quant_field(SCHEME_NAMES, "scheme_version", lambda draw, d: 0)


@mutant("HQ-HDR-13")
def _scheme_flags() -> st.SearchStrategy[bytes]:
    def value(draw: st.DrawFn, d: TensorDescriptor) -> int:
        defined = sum(1 << bit for bit in scheme_row(scheme_of(d).scheme_tag).flags_defined)
        return scheme_of(d).flags | draw(st.integers(1, 0xFFFF).map(lambda v: v & ~defined).filter(bool))
    return quant_field(SCHEME_NAMES, "flags", value)


# ================================================================ storage types, each row's rule


def _storage_outside(row: SchemeRow) -> Callable[[], st.SearchStrategy[bytes]]:
    allowed = {BY_NAME[n].tag for n in STORAGE[row.name]}
    others = sorted(t for t in BY_TAG if t not in allowed)
    return lambda: header_field("type_tag", st.sampled_from(others), tensor_descriptors(scheme=row.name, shard=False))


for _row in ROWS:
    mutant(_row.storage_rule)(_storage_outside(_row))


# ================================================================ the SYMMETRIC flag, where a model has it


def symmetric_base(scheme: str, symmetric: bool) -> st.SearchStrategy[TensorDescriptor]:
    return quantized(scheme).filter(lambda d: scheme_of(d).symmetric is symmetric)


def _symmetric_with_index(scheme: str) -> Callable[[], st.SearchStrategy[bytes]]:
    """SYMMETRIC set while a zero-point buffer is named: the flag set, or the index written."""
    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        if draw(st.booleans()):
            return draw(field_mutant(symmetric_base(scheme, False), "quantization.flags",
                                     lambda draw, d: scheme_of(d).flags | SYMMETRIC))
        return draw(field_mutant(symmetric_base(scheme, True), "quantization.zero_point_buffer_index",
                                 drawn(st.integers(0, 0xFFFF_FFFE))))
    return build


def _asymmetric_without_index(scheme: str) -> Callable[[], st.SearchStrategy[bytes]]:
    return lambda: field_mutant(symmetric_base(scheme, True), "quantization.flags",
                                lambda draw, d: scheme_of(d).flags & ~SYMMETRIC)


for _row in ROWS:
    if issubclass(_row.model, SymmetricZeroPoint):
        mutant(_row.model.symmetric_code)(_symmetric_with_index(_row.name))
        mutant(_row.model.asymmetric_code)(_asymmetric_without_index(_row.name))


# ================================================================ parameter buffers

PARAMETERIZED = with_parameters("scale_buffer_index")
"""The schemes whose parameters live in buffers."""


@mutant("HQ-BUF-01")
@st.composite
def _index_beyond(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(scheme=PARAMETERIZED))
    indices = ["scale_buffer_index"] + ([] if getattr(scheme_of(d), "symmetric", True) else
                                        ["zero_point_buffer_index"])
    field = draw(st.sampled_from(indices))
    top = 0xFFFF_FFFF if field == "scale_buffer_index" else 0xFFFF_FFFE  # 0xFFFFFFFF: no zero-point buffer
    return patched(write_tensor_descriptor(d), f"quantization.{field}", draw(st.integers(len(d.buffers), top)))


@mutant("HQ-BUF-02")
def _index_data() -> st.SearchStrategy[bytes]:
    return field_mutant(tensor_descriptors(scheme=PARAMETERIZED), "quantization.scale_buffer_index",
                        lambda draw, d: 0)


@mutant("HQ-BUF-03")
def _index_owned() -> st.SearchStrategy[bytes]:
    owning = tuple(k for k in layouts_in("sparse", "indirect") if LAYOUT_STRATEGIES[k].quantizable)
    return field_mutant(tensor_descriptors(scheme=PARAMETERIZED, layout=owning), "quantization.scale_buffer_index",
                        lambda draw, d: draw(st.integers(1, owned_buffers(d) - 1)))


def shared(d: TensorDescriptor) -> bool:
    """Scales and zero points share one buffer (HQ-BUF-04)."""
    q = scheme_of(d)
    return not q.symmetric and q.zero_point_buffer_index == q.scale_buffer_index


def _resizable(d: TensorDescriptor, index: int) -> bool:
    """Whether buffer ``index`` may take any size with its alignment (a non-empty buffer needs 64)."""
    return d.buffers[index].alignment >= MIN_ALIGNMENT


def resized_buffer(draw: st.DrawFn, d: TensorDescriptor, index: int) -> bytes:
    """``d`` written with buffer ``index`` holding any other size than it needs."""
    have = d.buffers[index].byte_size
    size = draw(st.integers(0, have + 64).filter(lambda v: v != have))
    return patched(write_tensor_descriptor(d), f"buffers[{index}].byte_size", size)


@mutant("HQ-BUF-04")
@st.composite
def _shared_short(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(scheme=with_parameters("zero_point_buffer_index")).filter(
        lambda d: shared(d) and _resizable(d, scheme_of(d).scale_buffer_index)))
    return resized_buffer(draw, d, scheme_of(d).scale_buffer_index)


@mutant("HQ-BUF-06")
@st.composite
def _parameter_device(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(scheme=PARAMETERIZED))
    index = scheme_of(d).scale_buffer_index
    return patched(write_tensor_descriptor(d), f"buffers[{index}].device_tag", moved_device(draw, d.buffers[index]))


def parameter_size(scheme: str, field: str, **kw: Any) -> st.SearchStrategy[bytes]:
    """A parameter buffer of ``scheme`` (named by ``field``) of any other size than it needs."""
    def separate(d: TensorDescriptor) -> bool:
        index = getattr(scheme_of(d), field)
        return index is not None and _resizable(d, index) and not (
            hasattr(scheme_of(d), "symmetric") and shared(d))

    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        d = draw(tensor_descriptors(scheme=scheme, shard=False, **kw).filter(separate))
        return resized_buffer(draw, d, getattr(scheme_of(d), field))
    return build()


def unpaged() -> tuple[str, ...]:
    return tuple(k for k, s in LAYOUT_STRATEGIES.items() if s.quantizable and not s.paged)


# ================================================================ the axis and the block


def axis_high(scheme: str) -> Callable[[], st.SearchStrategy[bytes]]:
    return lambda: quant_field(scheme, "axis", lambda draw, d: draw(st.integers(d.rank, 2**32 - 1)))


def axis_dynamic(scheme: str) -> Callable[[], st.SearchStrategy[bytes]]:
    return lambda: field_mutant(quantized(scheme, shard=False), lambda draw, d: f"shape[{scheme_of(d).axis}]",
                                lambda draw, d: DYNAMIC)


def block(scheme: str, values: st.SearchStrategy[int]) -> Callable[[], st.SearchStrategy[bytes]]:
    return lambda: quant_field(scheme, "block_size", drawn(values))


def block_beyond(scheme: str) -> Callable[[], st.SearchStrategy[bytes]]:
    """block_size larger than a non-empty axis."""
    def nonzero_axis(d: TensorDescriptor) -> bool:
        return 0 < d.shape[scheme_of(d).axis] < 1 << 31

    return lambda: field_mutant(quantized(scheme).filter(nonzero_axis), "quantization.block_size",
                                lambda draw, d: draw(pow2(d.shape[scheme_of(d).axis].bit_length(), 31)))


def padded_schemes() -> tuple[str, ...]:
    return tuple(name for name in SCHEME_NAMES if getattr(of(name), "PADDED", False))


@mutant("HQ-PB-17")
@st.composite
def _unpadded(draw: st.DrawFn) -> bytes:
    def partial(d: TensorDescriptor) -> bool:
        q = scheme_of(d)
        return d.shape[q.axis] % q.block_size != 0 and 0 not in d.shape

    d = draw(quantized(padded_schemes()).filter(partial))
    t = TensorContext(d)
    q = scheme_of(d)
    padded = list(d.shape)
    padded[q.axis] = -(-d.shape[q.axis] // q.block_size) * q.block_size
    need = d.byte_offset + _packed(t, product(padded))
    low = min(d.byte_offset + _packed(t, product(d.shape)), need - 1)  # room for the elements, not the padding
    return patched(write_tensor_descriptor(d), "buffers[0].byte_size", draw(st.integers(low, need - 1)))


# ================================================================ parameter contents and data mutants


def scale_values(draw: st.DrawFn, count: int, type_name: str, *, negative: bool = True,
                 zero: bool = False) -> bytes:
    """``count`` scale values exact in float16, bfloat16 and float32: k * 2^e with |k| <= 8."""
    import numpy as np

    low = -8 if negative else (0 if zero else 1)
    ks = draw(st.lists(st.integers(low, 8).filter(lambda k: zero or k != 0), min_size=count, max_size=count))
    es = draw(st.lists(st.integers(-8, 8), min_size=count, max_size=count))
    values = np.array([k * 2.0 ** e for k, e in zip(ks, es)], dtype=np.float64)
    return values.astype(storage_dtype(type_name)).tobytes()


def encoded_scale(value: float, type_name: str) -> bytes:
    import numpy as np

    return np.array([value], dtype=np.float64).astype(storage_dtype(type_name)).tobytes()


def nonfinite(draw: st.DrawFn, type_name: str) -> bytes:
    return encoded_scale(draw(st.sampled_from([math.nan, math.inf, -math.inf])), type_name)


def zero(draw: st.DrawFn, type_name: str) -> bytes:
    return encoded_scale(draw(st.sampled_from([0.0, -0.0])), type_name)


def negative(draw: st.DrawFn, type_name: str) -> bytes:
    return encoded_scale(-draw(st.integers(1, 8)) * 2.0 ** draw(st.integers(-8, 8)), type_name)


def _data_base(scheme: str) -> st.SearchStrategy[TensorDescriptor]:
    return quantized(scheme).filter(lambda d: d.buffers[scheme_of(d).scale_buffer_index].byte_size > 0)


def _scale_count(d: TensorDescriptor, width: int) -> int:
    return param_size(d, "scale_buffer_index") // width


def scale_mutant(scheme: str, rule: str, bad: Callable[[st.DrawFn, str], bytes]) -> None:
    """Register a data mutant of ``rule``: one scale of a valid tensor replaced by ``bad(draw, type)``."""
    @st.composite
    def build(draw: st.DrawFn) -> tuple[bytes, tuple[bytes, ...]]:
        d = draw(_data_base(scheme))
        contents = list(draw(buffers_for(d)))
        q = scheme_of(d)
        type_name = of(scheme).scale_type(q)
        width = storage_dtype(type_name).itemsize
        i = draw(st.integers(0, max(_scale_count(d, width) - 1, 0)))  # a shared entry holds the scales first
        raw = bytearray(contents[q.scale_buffer_index])
        raw[i * width:(i + 1) * width] = bad(draw, type_name)
        contents[q.scale_buffer_index] = bytes(raw)
        return write_tensor_descriptor(d), tuple(contents)
    data_mutant(rule, build)


def zero_point_mutant(scheme: str, rule: str) -> None:
    """Register a data mutant of ``rule``: one zero point outside the storage range."""
    def usable(d: TensorDescriptor) -> bool:
        q = scheme_of(d)
        return not q.symmetric and d.shape[q.axis] > 0 and storage_range(d) != INT32

    @st.composite
    def build(draw: st.DrawFn) -> tuple[bytes, tuple[bytes, ...]]:
        d = draw(quantized(scheme).filter(usable))
        contents = list(draw(buffers_for(d)))
        q = scheme_of(d)
        size = param_size(d, "zero_point_buffer_index")
        count = size // 4
        start = len(contents[q.zero_point_buffer_index]) - size  # after the scales when shared
        i = draw(st.integers(0, count - 1))
        raw = bytearray(contents[q.zero_point_buffer_index])
        raw[start + 4 * i:start + 4 * i + 4] = draw(outside(storage_range(d))).to_bytes(4, "little", signed=True)
        contents[q.zero_point_buffer_index] = bytes(raw)
        return write_tensor_descriptor(d), tuple(contents)
    data_mutant(rule, build)
