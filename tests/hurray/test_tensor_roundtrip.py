"""Hypothesis: valid tensor descriptors of every layout round-trip byte-exactly (with and without
each optional section, all five schemes with consistent buffer tables); arbitrary bytes raise
only HurrayDeclError, never read past descriptor_length and never allocate in proportion to a
claimed size."""

from __future__ import annotations

import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hurray_decl import MXFP, NF4, PerBlockAffine, PerChannelAffine, PerTensorAffine
from hurray_decl.element_types import BY_NAME
from hurray_decl.errors import HurrayDeclError
from hurray_decl.storage import byte_size
from hurray_decl.strategies import float32s
from hurray_decl.tensor import (
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
    read_tensor_descriptor,
    write_tensor_descriptor,
)
from hurray_decl.tensor.layouts import PRIVATE_LAYOUTS
from tests.hurray.tensor_support import CONFORMANCE, u32, u64

PRIVATE_ID = 0x5EED
SCHEMES = ("per_tensor_affine", "per_channel_affine", "per_block_affine", "nf4", "mxfp")
STORAGE = {
    "per_tensor_affine": ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int4", "uint4", "int2", "uint2"),
    "per_block_affine": ("int8", "uint8", "int4", "uint4", "int2", "uint2"),
    "nf4": ("uint4",),
    "mxfp": ("float8_e4m3", "float8_e5m2", "float4_e2m1", "float6_e2m3", "float6_e3m2", "int8", "int4"),
}
STORAGE["per_channel_affine"] = STORAGE["per_tensor_affine"]


@pytest.fixture(scope="module", autouse=True)
def _private_layout():
    PRIVATE_LAYOUTS.register(PRIVATE_ID, "round-trip test layout")
    yield
    PRIVATE_LAYOUTS.unregister(PRIVATE_ID)


def pow2(low_exp: int, high_exp: int) -> st.SearchStrategy[int]:
    return st.integers(low_exp, high_exp).map(lambda e: 1 << e)


@st.composite
def placement(draw) -> tuple[int, int, int]:
    """(device_tag, sync_mode, memory_class) shared by every buffer (colocation)."""
    device = draw(st.sampled_from([0x00, 0x01, 0x03, 0x05, 0xF2]))
    sync = 0 if device == 0 else draw(st.integers(0, 2))
    classes = {0x00: [0, 1, 2], 0x01: [0, 1, 2, 3], 0x03: [0, 1, 2], 0x05: [0], 0xF2: [0]}[device]
    return device, sync, draw(st.sampled_from(classes))


def handles(draw, sizes, where) -> tuple[BufferHandle, ...]:
    device, sync, memory_class = where
    out = []
    for size in sizes:
        alignment = draw(pow2(6, 12)) if size else draw(pow2(0, 12))
        out.append(BufferHandle(byte_size=size, alignment=alignment, device_tag=device, sync_mode=sync,
                                memory_class=memory_class))
    return tuple(out)


def product(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


@st.composite
def quantization_for(draw, scheme: str, shape: tuple[int, ...], first: int, paged: BlockPaged | None):
    """A valid descriptor of ``scheme`` for ``shape`` whose parameters start at buffer ``first``,
    with the parameter sizes it needs and the axis padding of dense data."""
    if scheme == "per_tensor_affine":
        return None, (), None
    rank = len(shape)
    axis = draw(st.integers(0, rank - 1)) if paged is None else None
    if scheme == "per_channel_affine":
        axis = axis if paged is None else draw(st.sampled_from([1, 2]))
        size = 4 * shape[axis]
        symmetric, shared = draw(st.booleans()), draw(st.booleans())
        if symmetric:
            return PerChannelAffine(axis=axis, scale_buffer_index=first, symmetric=True), (size,), None
        if shared:
            return PerChannelAffine(axis=axis, scale_buffer_index=first, zero_point_buffer_index=first), (2 * size,), None
        return (PerChannelAffine(axis=axis, scale_buffer_index=first, zero_point_buffer_index=first + 1),
                (size, size), None)
    if scheme == "per_block_affine":
        scale_type = draw(st.sampled_from([1, 2, 3]))
        width = 4 if scale_type == 3 else 2
        if paged is not None:
            axis, block = 0, paged.page_size
            count = paged.num_pages * paged.page_size
        else:
            extent = shape[axis]
            block = draw(pow2(1, max(1, extent.bit_length() - 1) if extent >= 2 else 6))
            count = -(-extent // block) * product(s for k, s in enumerate(shape) if k != axis)
        pad = (axis, block)
        symmetric = draw(st.booleans())
        if symmetric:
            return (PerBlockAffine(axis=axis, block_size=block, scale_buffer_index=first, symmetric=True,
                                   scale_type_tag=scale_type), (count * width,), pad)
        return (PerBlockAffine(axis=axis, block_size=block, scale_buffer_index=first,
                               zero_point_buffer_index=first + 1, scale_type_tag=scale_type),
                (count * width, 4 * count), pad)
    axis = 0  # quantized_shape gives dimension 0 a size NF4 and MXFP accept
    extent = shape[axis]
    outer = product(s for k, s in enumerate(shape) if k != axis)
    if scheme == "nf4":
        block = draw(pow2(3, max(3, extent.bit_length() - 1))) if extent else draw(pow2(3, 10))
        return (NF4(axis=axis, block_size=block, scale_buffer_index=first), (4 * -(-extent // block) * outer,),
                (axis, block))
    block = 16
    return MXFP(axis=axis, block_size=block, scale_buffer_index=first), ((extent // block) * outer,), None


@st.composite
def shapes(draw, rank_low=1, rank_high=3, dim_high=6):
    return tuple(draw(st.lists(st.integers(0, dim_high), min_size=rank_low, max_size=rank_high)))


@st.composite
def quantized_shape(draw, scheme, rank_low=1, rank_high=3):
    shape = list(draw(shapes(rank_low, rank_high, 4)))
    if scheme == "nf4":
        shape = [draw(st.sampled_from([0, 8, 12, 16])) if k == 0 else s for k, s in enumerate(shape)]
    if scheme == "mxfp":
        shape = [draw(st.sampled_from([16, 32])) if k == 0 else s for k, s in enumerate(shape)]
    return tuple(shape)


def dense_size(type_name, shape, pad, offset=0):
    padded = list(shape)
    if pad is not None:
        axis, block = pad
        padded[axis] = -(-padded[axis] // block) * block
    return offset + byte_size(type_name, product(padded))


@st.composite
def stats(draw, nnz=None):
    mask = draw(st.integers(0, 0x3F))
    finite = st.floats(allow_nan=False, width=64)
    n, m = sorted(draw(st.lists(st.integers(0, 255), min_size=2, max_size=2)))
    return Statistics(
        computed_mask=mask, nnz=nnz if nnz is not None and mask & 1 else draw(st.integers(0, 2**64 - 1)),
        sparsity_ratio=draw(finite), value_min=draw(finite), value_max=draw(finite), value_abs_max=draw(finite),
        value_mean=draw(finite), value_stddev=draw(st.floats(min_value=0.0, allow_nan=False)),
        nm_n=n, nm_m=m, has_nan=draw(st.integers(0, 1)), has_inf=draw(st.integers(0, 1)))


@st.composite
def layouts(draw, kind: str, type_name: str | None, ext: ExtensionType | None, scheme: str | None):
    """(shape, layout, layout_tag, buffer sizes before the parameters, pad, byte_offset, quantization)."""
    def size_of(count):
        return ext.packed_size(count) if ext is not None else byte_size(type_name, count)

    if kind in ("row_major", "column_major"):
        shape = draw(quantized_shape(scheme, 0 if scheme is None else 1)) if scheme else draw(shapes(0, 3))
        if kind == "column_major" and not shape:
            shape = (3,)
        q, params, pad = draw(quantization_for(scheme, shape, 1, None)) if scheme else (None, (), None)
        offset = draw(st.integers(0, 8))
        padded = list(shape)
        if pad is not None:
            padded[pad[0]] = -(-shape[pad[0]] // pad[1]) * pad[1]
        size = offset + size_of(product(padded)) + draw(st.integers(0, 3))
        layout = RowMajor() if kind == "row_major" else ColumnMajor()
        return shape, layout, None, (size,) + params, offset, q
    if kind == "strided":
        shape = draw(shapes(1, 3, 4))
        strides = tuple(draw(st.lists(st.integers(-3, 3), min_size=len(shape), max_size=len(shape))))
        lo = sum(min(0, s * (n - 1)) for s, n in zip(strides, shape)) if 0 not in shape else 0
        hi = sum(max(0, s * (n - 1)) for s, n in zip(strides, shape)) if 0 not in shape else 0
        bits = ext.bit_width if ext is not None else BY_NAME[type_name].bits
        offset = -(lo // 4) * 3 if bits == 6 else -(lo * bits // 8)
        size = offset + size_of(hi + 1)
        return shape, Strided(strides=strides), None, (size,), offset, None
    if kind == "tiled":
        shape = draw(shapes(1, 3, 5))
        depth = draw(st.integers(1, 3))
        level = None
        for _ in range(depth):
            outer, inner = draw(st.sampled_from([1, 2, 3])), draw(st.sampled_from([1, 2, 3]))
            tile = tuple(draw(st.lists(st.integers(1, 3), min_size=len(shape), max_size=len(shape))))
            strides = lambda: tuple(draw(st.lists(st.integers(-4, 4), min_size=len(shape), max_size=len(shape))))  # noqa: E731
            level = Tiled(tile_shape=tile, outer_layout=outer, inner_layout=4 if level is not None else inner,
                          outer_strides=strides() if outer == 3 else None,
                          inner_strides=strides() if inner == 3 and level is None else None, nested=level)
        tiles = product(-(-n // t) for n, t in zip(shape, level.tile_shape))
        return shape, level, None, (size_of(tiles * product(level.tile_shape)),), 0, None
    if kind == "morton":
        shape = draw(shapes(1, 3, 5))
        bits = tuple(max(1, (n - 1).bit_length()) + draw(st.integers(0, 1)) for n in shape)
        return shape, Morton(morton_bits=bits), None, (size_of(1 << sum(bits)),), 0, None
    if kind == "hilbert":
        rank, order = draw(st.integers(2, 3)), draw(st.integers(1, 2))
        shape = (1 << order,) * rank
        return shape, Hilbert(hilbert_order=order, hilbert_rank=rank), None, (size_of(1 << (rank * order)),), 0, None
    if kind in ("coo", "csr", "csc", "csf"):
        rank = {"coo": None, "csr": 2, "csc": 2, "csf": 3}[kind]
        shape = draw(quantized_shape(scheme, rank or 1, rank or 3)) if scheme else draw(
            shapes(rank or 1, rank or 3, 5))
        nnz = draw(st.integers(0, 5))
        if kind == "coo":
            layout, sizes = COO(nnz=nnz, is_sorted=draw(st.integers(0, 1))), (size_of(nnz), 8 * nnz * len(shape))
        elif kind in ("csr", "csc"):
            layout = CSR(nnz=nnz) if kind == "csr" else CSC(nnz=nnz)
            sizes = (size_of(nnz), 8 * nnz, 8 * (shape[0 if kind == "csr" else 1] + 1))
        else:
            layout = CSF(nnz=nnz, mode_order=tuple(draw(st.permutations(range(len(shape))))))
            middle = [8 * draw(st.integers(0, 4)) for _ in range(2 * len(shape) - 2)]
            sizes = (size_of(nnz), 16, *middle, 8 * nnz)
        q, params, _ = draw(quantization_for(scheme, shape, len(sizes), None)) if scheme else (None, (), None)
        return shape, layout, None, sizes + params, 0, q
    if kind == "block_paged":
        shape = (draw(st.integers(0, 9)), draw(st.integers(0, 3)), draw(st.integers(0, 3)))
        page = draw(st.sampled_from([2, 4])) if scheme == "per_block_affine" else draw(st.integers(1, 5))
        layout = BlockPaged(page_size=page, num_pages=draw(st.integers(0, 3)), num_seqs=draw(st.integers(0, 2)),
                            kv_role=draw(st.integers(0, 2)), layer_index=draw(st.integers(0, 2**32 - 1)),
                            block_table_index_type=draw(st.integers(0, 1)))
        width = layout.index_width
        sizes = (size_of(layout.num_pages * page * shape[1] * shape[2]), width * draw(st.integers(0, 4)),
                 width * (layout.num_seqs + 1))
        q, params, _ = draw(quantization_for(scheme, shape, 3, layout)) if scheme else (None, (), None)
        return shape, layout, None, sizes + params, 0, q
    if kind == "private":
        shape = draw(shapes(1, 2))
        layout = PrivateLayout(extension_layout_id=PRIVATE_ID, extension_data=draw(st.binary(max_size=12)))
        return shape, layout, draw(st.integers(0xF0, 0xFE)), (draw(st.integers(0, 64)),), 0, None
    raise AssertionError(kind)


DATA_KINDS = ("row_major", "column_major", "strided", "tiled", "morton", "hilbert", "coo", "csr", "csc", "csf",
              "block_paged", "private")
QUANTIZED_KINDS = ("row_major", "column_major", "coo", "csr", "csc", "csf", "block_paged")


@st.composite
def tensor_descriptors(draw):
    """Valid descriptors: every layout, each optional section drawn independently."""
    where = draw(placement())
    if draw(st.integers(0, 11)) == 0:
        shape = draw(shapes(1, 3))
        rule = draw(st.sampled_from([1, 2, 3]))
        head = CompositeHead(composition_rule=rule, combine_op=draw(st.sampled_from([1, 2])) if rule == 2 else 0,
                             member_count=draw(st.integers(1 if rule == 2 else 0, 2**32 - 2)))
        return TensorDescriptor(type_tag=draw(st.sampled_from([0x01, 0x02, 0x03, 0x04])), shape=shape, layout=head,
                                statistics=draw(st.none() | stats()))
    kind = draw(st.sampled_from(DATA_KINDS))
    scheme = draw(st.none() | st.sampled_from(SCHEMES)) if kind in QUANTIZED_KINDS else None
    if kind == "block_paged" and scheme in ("nf4", "mxfp"):
        scheme = None
    ext = None
    if scheme is not None:
        type_name = draw(st.sampled_from(STORAGE[scheme]))
        type_tag = BY_NAME[type_name].tag
    elif draw(st.integers(0, 4)) == 0:
        type_name, type_tag = None, draw(st.integers(0xF0, 0xFE))
        width = draw(st.sampled_from([1, 2, 4, 8, 16, 24]))
        is_float = draw(st.integers(0, 1)) if width >= 8 else 0
        ext = ExtensionType(bit_width=width, packing_factor=8 // width if width < 8 else 1, is_float=is_float,
                            is_signed=0 if is_float else draw(st.integers(0, 1)), sign_bits=is_float,
                            exponent_bits=draw(st.integers(0, 8)) * is_float,
                            mantissa_bits=draw(st.integers(0, 8)) * is_float,
                            exponent_bias=draw(st.integers(0, 2**32 - 1)) * is_float,
                            has_nan=draw(st.integers(0, 1)), has_inf=draw(st.integers(0, 1)))
    else:
        type_name = draw(st.sampled_from(sorted(BY_NAME)))
        type_tag = BY_NAME[type_name].tag
    shape, layout, layout_tag, sizes, offset, q = draw(layouts(kind, type_name, ext, scheme))
    if scheme == "per_tensor_affine":
        low, high = BY_NAME[type_name].zero_point_range
        q = PerTensorAffine(scale=draw(float32s()), zero_point=draw(st.integers(low, high)),
                            padding=draw(st.binary(max_size=4)))
    shard = None
    if kind not in ("block_paged", "csf") and draw(st.booleans()):
        offsets = tuple(draw(st.integers(0, 5)) for _ in shape)
        shard = Shard(parent_shape=tuple(n + o + draw(st.integers(0, 3)) for n, o in zip(shape, offsets)),
                      shard_offset=offsets)
    nnz = getattr(layout, "nnz", None)
    return TensorDescriptor(
        type_tag=type_tag, layout_tag=layout_tag, shape=shape, byte_offset=offset, layout=layout,
        buffers=handles(draw, sizes, where), quantization=q, shard=shard,
        statistics=draw(st.none() | stats(nnz)), extension_type=ext,
        composite_member=draw(st.none() | st.builds(CompositeMember, member_role=st.integers(0, 1))),
    )


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(tensor_descriptors())
def test_valid_descriptors_round_trip(d):
    data = write_tensor_descriptor(d)
    back = read_tensor_descriptor(data)
    assert write_tensor_descriptor(back) == data
    assert back.replace(descriptor_length=None) == d.replace(descriptor_length=None)
    assert back.descriptor_length == len(data)
    # Bytes after the descriptor are never read (HT-HDR-08, HT-HDR-10).
    assert read_tensor_descriptor(data + b"\xA5" * 9) == back


@settings(max_examples=30)
@given(st.sampled_from(SCHEMES), st.data())
def test_every_scheme_round_trips_in_a_dense_tensor(scheme, data):
    where = data.draw(placement())
    type_name = data.draw(st.sampled_from(STORAGE[scheme]))
    shape = data.draw(quantized_shape(scheme))
    q, params, pad = data.draw(quantization_for(scheme, shape, 1, None))
    if q is None:
        low, high = BY_NAME[type_name].zero_point_range
        q = PerTensorAffine(scale=data.draw(float32s()), zero_point=data.draw(st.integers(low, high)))
    d = TensorDescriptor(type_tag=BY_NAME[type_name].tag, shape=shape, quantization=q,
                         buffers=handles(data.draw, (dense_size(type_name, shape, pad),) + params, where))
    encoded = write_tensor_descriptor(d)
    assert write_tensor_descriptor(read_tensor_descriptor(encoded)) == encoded


# ---------------------------------------------------------------- arbitrary and mutated bytes

SEEDS = [p.read_bytes() for p in sorted((CONFORMANCE / "descriptors").glob("*.bin"))]


def outcome(data: bytes, permissive: bool):
    try:
        return read_tensor_descriptor(data, permissive=permissive)
    except HurrayDeclError as err:
        return err.code


@st.composite
def mutated(draw):
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(data) - 1))
        data[i] = draw(st.integers(0, 255))
    cut = draw(st.integers(0, len(data)))
    return bytes(data[:cut]) if draw(st.booleans()) else bytes(data)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=200), mutated(), st.builds(lambda t: b"HRRY\x01\x00" + t, st.binary(max_size=120))),
       st.booleans())
def test_arbitrary_bytes_raise_only_hurray_errors(data, permissive):
    result = outcome(data, permissive)
    if len(data) >= 10:
        length = int.from_bytes(data[6:10], "little")
        if 20 <= length <= len(data):
            # nothing past descriptor_length influences the outcome
            assert outcome(data[:length], permissive) == result
            assert outcome(data[:length] + b"\x00\xFF" * 8, permissive) == result
    if not isinstance(result, str):
        assert write_tensor_descriptor(result, permissive=True) == data[:result.descriptor_length]


# ---------------------------------------------------------------- no allocation in proportion to claimed sizes

HUGE = (1 << 63)
LARGEST = (1 << 64) - 1


def header(type_tag, layout_tag, rank, flags=0):
    return b"HRRY\x01\x00" + u32(0) + u32(flags) + bytes([type_tag, layout_tag]) + u32(rank)


def framed(body: bytes) -> bytes:
    return body[:6] + u32(len(body)) + body[10:]


def handle_bytes(size, alignment=64):
    return u64(size) + u32(alignment) + bytes(4)


CLAIMS = {
    "rank 64 of 2^63": framed(header(0x03, 0x01, 64) + u64(HUGE) * 64 + u64(0) + b"\x01" + handle_bytes(LARGEST)),
    "2^64-1 byte buffer": framed(header(0x03, 0x01, 1) + u64(1 << 61) + u64(0) + b"\x01" + handle_bytes(LARGEST)),
    "morton bits 2^32-1": framed(header(0x03, 0x05, 64) + u64(HUGE) * 64 + u64(0) + u32(2**32 - 1) * 64 + b"\x01"
                                 + handle_bytes(LARGEST)),
    "hilbert order 2^32-1": framed(header(0x03, 0x40, 64) + u64(HUGE) * 64 + u64(0) + u32(2**32 - 1) + u32(64)
                                   + b"\x01" + handle_bytes(LARGEST)),
    "tiled huge tiles": framed(header(0x03, 0x04, 64) + u64(HUGE) * 64 + u64(0) + u64(HUGE) * 64 + b"\x01\x01\x00\x00"
                               + b"\x01" + handle_bytes(LARGEST)),
    "strided huge strides": framed(header(0x03, 0x03, 64) + u64(HUGE) * 64 + u64(0) + u64(HUGE - 1) * 64 + b"\x01"
                                   + handle_bytes(LARGEST)),
    "coo 2^64-1 entries": framed(header(0x03, 0x06, 64) + u64(HUGE) * 64 + u64(0) + u64(LARGEST) + bytes(8)
                                 + b"\x02" + handle_bytes(LARGEST) + handle_bytes(LARGEST)),
    "per-block 2^63 axis": framed(header(0x48, 0x01, 64, flags=1) + u64(HUGE) * 64 + u64(0) + b"\x02"
                                  + handle_bytes(LARGEST) + handle_bytes(LARGEST) + u32(24)
                                  + bytes([3, 1, 1, 0]) + u32(5) + u32(2) + u32(1) + u32(0xFFFFFFFF) + b"\x03\x00\x00\x00"),
    "paged 2^64-1 pages": framed(header(0x03, 0x0A, 3) + u64(HUGE) * 3 + u64(0) + u32(2**32 - 1) + u64(LARGEST)
                                 + u32(0) + u32(2**32 - 1) + b"\x02" + u32(0) + b"\x00" + bytes(6) + b"\x03"
                                 + handle_bytes(LARGEST) * 3),
    "claimed length 4 GiB": b"HRRY\x01\x00" + u32(2**32 - 1) + bytes(20),
    "quantization_length 2^32-1": framed(header(0x10, 0x01, 1, flags=1) + u64(4) + u64(0) + b"\x01"
                                         + handle_bytes(4) + u32(2**32 - 1) + b"\x01\x01"),
    "extension_data_length 2^32-1": framed(header(0x03, 0xF3, 1) + u64(4) + u64(0) + u64(7) + u32(2**32 - 1)
                                           + bytes(30)),
}
EXPECTED = {"rank 64 of 2^63": "HE-21", "morton bits 2^32-1": "HT-LAY-19", "hilbert order 2^32-1": "HT-LAY-81",
            "tiled huge tiles": "HT-LAY-13", "strided huge strides": "HT-LAY-05", "coo 2^64-1 entries": "HT-LAY-20",
            "per-block 2^63 axis": "HQ-BUF-09", "paged 2^64-1 pages": "HT-LAY-61", "claimed length 4 GiB": "HT-HDR-08",
            "quantization_length 2^32-1": "HT-HDR-08", "extension_data_length 2^32-1": "HT-HDR-08"}


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_huge_claims_cost_nothing(name):
    data = CLAIMS[name]
    tracemalloc.start()
    start = time.perf_counter()
    try:
        result = outcome(data, name.startswith("extension"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - start < 2.0
    assert peak < 2_000_000, f"{name}: peak {peak} bytes"
    if name in EXPECTED:
        assert result == EXPECTED[name]
    else:
        assert isinstance(result, TensorDescriptor) and result.buffers[0].byte_size == LARGEST
