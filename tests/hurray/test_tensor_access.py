"""Element access (hurray_decl.hurray.tensor.access): logical codes of every dense layout, the
block-paged lookup, and dequantization of non-row-major layouts.

Every buffer here is laid out by the per-element reference below: the address formulas of
DIGEST § 4.4 / § 5.4 and the public layout pages, written as plain Python loops over small
shapes, independent of the vectorised code under test.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from hurray_decl import NF4, PerBlockAffine, PerTensorAffine, dequantize, quantize
from hurray_decl.errors import OpaqueDataAccess, UnsupportedError
from hurray_decl.hurray.tables.element_types import BY_NAME, BY_TAG
from hurray_decl.hurray.tensor import (
    COO,
    CSC,
    CSF,
    CSR,
    BlockPaged,
    BufferHandle,
    ColumnMajor,
    CompositeHead,
    ExtensionType,
    Hilbert,
    Morton,
    OpaqueLayout,
    PrivateLayout,
    RowMajor,
    Strided,
    TensorDescriptor,
    Tiled,
    read_tensor_descriptor,
    write_tensor_descriptor,
)
from hurray_decl.hurray.tensor.access import (
    block_paged_codes,
    hilbert_index,
    logical_codes,
    stored_codes_row_major,
)
from hurray_decl.hurray.tensor.common import DYNAMIC
from hurray_decl.hurray.tensor.layouts import PRIVATE_LAYOUTS
from tests.helpers import covers, raises_rule

RNG_SEED = 20261130


# ---------------------------------------------------------------- the per-element reference


def ref_row_major(index, extents):
    return sum(i * math.prod(extents[k + 1:]) for k, i in enumerate(index))


def ref_column_major(index, extents):
    return sum(i * math.prod(extents[:k]) for k, i in enumerate(index))


def ref_order(order, index, extents, strides):
    if order == 0x01:
        return ref_row_major(index, extents)
    if order == 0x02:
        return ref_column_major(index, extents)
    return sum(i * s for i, s in zip(index, strides))


def ref_tiled(level, index, dims):
    """layouts/tiled § Element Address, recursively for inner_layout 0x04."""
    tiles = [i // t for i, t in zip(index, level.tile_shape)]
    inside = [i % t for i, t in zip(index, level.tile_shape)]
    grid = [-(-n // t) for n, t in zip(dims, level.tile_shape)]
    number = ref_order(level.outer_layout, tiles, grid, level.outer_strides)
    if level.inner_layout == 0x04:
        inner = ref_tiled(level.nested, inside, level.tile_shape)
    else:
        inner = ref_order(level.inner_layout, inside, level.tile_shape, level.inner_strides)
    return number * math.prod(level.tile_shape) + inner


def ref_morton(index, bits):
    """layouts/morton § Morton Index Computation."""
    code = 0
    for b in range(max(bits)):
        for d, i in enumerate(index):
            if b < bits[d]:
                code |= ((i >> b) & 1) << (b * len(index) + d)
    return code


def ref_hilbert(coords, r, p):
    """layouts/hilbert § Normative Index Mapping, CoordsToHilbert, one element at a time."""
    x = list(coords)
    m = 1 << (p - 1)
    q = m
    while q > 1:
        mask = q - 1
        for i in range(r):
            if x[i] & q:
                x[0] ^= mask
            else:
                t = (x[0] ^ x[i]) & mask
                x[0] ^= t
                x[i] ^= t
        q >>= 1
    for i in range(1, r):
        x[i] ^= x[i - 1]
    t = 0
    q = m
    while q > 1:
        if x[r - 1] & q:
            t ^= q - 1
        q >>= 1
    for i in range(r):
        x[i] ^= t
    h = 0
    for b in range(p):
        for d in range(r):
            h |= ((x[d] >> b) & 1) << (b * r + (r - 1 - d))
    return h


def ref_offset(layout, index, extents):
    if isinstance(layout, RowMajor):
        return ref_row_major(index, extents)
    if isinstance(layout, ColumnMajor):
        return ref_column_major(index, extents)
    if isinstance(layout, Strided):
        return sum(i * s for i, s in zip(index, layout.strides))
    if isinstance(layout, Tiled):
        return ref_tiled(layout, index, extents)
    if isinstance(layout, Morton):
        return ref_morton(index, layout.morton_bits)
    return ref_hilbert(index, layout.hilbert_rank, layout.hilbert_order)


def minimum_elements(layout, extents):
    """Elements the layout's size rule asks of buffer 0 (§ 5.7)."""
    if isinstance(layout, Tiled):
        return math.prod(-(-n // t) for n, t in zip(extents, layout.tile_shape)) * math.prod(layout.tile_shape)
    if isinstance(layout, Morton):
        return 1 << sum(layout.morton_bits)
    if isinstance(layout, Hilbert):
        return 1 << (layout.hilbert_rank * layout.hilbert_order)
    return math.prod(extents)


def size_of(bits, count):
    if bits == 6:
        return -(-count // 4) * 3
    return -(-count * bits // 8)


def put(buf, byte_offset, bits, offset, code):
    """Write one code at a linear element offset (DIGEST § 4.4 placement)."""
    if bits == 6:
        group, j = divmod(offset, 4)
        at = byte_offset + 3 * group
        word = int.from_bytes(buf[at:at + 3], "little")
        word = (word & ~(0x3F << (6 * j))) | (code << (6 * j))
        buf[at:at + 3] = word.to_bytes(3, "little")
    elif bits < 8:
        per = 8 // bits
        at = byte_offset + offset // per
        shift = (offset % per) * bits
        buf[at] = (buf[at] & ~(((1 << bits) - 1) << shift) & 0xFF) | (code << shift)
    else:
        width = bits // 8
        at = byte_offset + offset * width
        buf[at:at + width] = code.to_bytes(width, "little")


def get(buf, byte_offset, bits, offset):
    if bits == 6:
        group, j = divmod(offset, 4)
        at = byte_offset + 3 * group
        return (int.from_bytes(buf[at:at + 3], "little") >> (6 * j)) & 0x3F
    if bits < 8:
        per = 8 // bits
        return (buf[byte_offset + offset // per] >> ((offset % per) * bits)) & ((1 << bits) - 1)
    width = bits // 8
    at = byte_offset + offset * width
    return int.from_bytes(buf[at:at + width], "little")


def code_array(values, shape, bits):
    """Python-int codes as the array logical_codes returns (uint of the width, V16 for 128 bits)."""
    flat = list(values)
    if bits == 128:
        return np.frombuffer(b"".join(v.to_bytes(16, "little") for v in flat), dtype="V16").reshape(shape)
    dtype = np.uint8 if bits <= 8 else np.dtype(f"u{bits // 8}")
    return np.array(flat, dtype=np.uint64).astype(dtype).reshape(shape)


def lay_out(layout, extents, bits, codes, *, byte_offset=0, garbage=None, rng=None):
    """Buffer 0 holding ``codes`` (index -> code) at the layout's addresses, every other whole
    element filled with garbage; unused bits of the last unit stay zero."""
    rng = rng or np.random.default_rng(RNG_SEED)
    offsets = {index: ref_offset(layout, index, extents) for index in itertools.product(*map(range, extents))}
    low = min(offsets.values(), default=0)
    count = max(minimum_elements(layout, extents), max(offsets.values(), default=-1) + 1)
    first = -((low * bits) // 8) if low < 0 else 0  # negative strides reach before element [0, ..., 0]
    if bits == 6 and low < 0:
        first = 3 * (-(low // 4))
    byte_offset = max(byte_offset, first)
    buf = bytearray(rng.integers(0, 256, byte_offset, dtype=np.uint8).tobytes()) + bytearray(size_of(bits, count))
    lowest = -(byte_offset * 8 // bits) if bits != 6 else -4 * (byte_offset // 3)
    for offset in range(lowest, count):
        fill = garbage if garbage is not None else random_code(bits, rng)
        put(buf, byte_offset, bits, offset, fill)
    for index, code in codes.items():
        put(buf, byte_offset, bits, offsets[index], code)
    return bytes(buf), byte_offset


def built(d):
    """A descriptor as a reader sees it: written, then read back."""
    return read_tensor_descriptor(write_tensor_descriptor(d))


def dense(type_name, shape, layout, buffer, byte_offset=0, **kw):
    return built(TensorDescriptor(type_tag=BY_NAME[type_name].tag, shape=shape, layout=layout,
                                  byte_offset=byte_offset, buffers=(BufferHandle(byte_size=len(buffer)),), **kw))


def random_code(bits, rng):
    if bits >= 64:
        return int.from_bytes(rng.bytes(bits // 8), "little")
    return int(rng.integers(0, 1 << bits))


def random_codes(shape, bits, rng):
    return {index: random_code(bits, rng) for index in itertools.product(*map(range, shape))}


def check_layout(type_name, shape, layout, byte_offset=0, garbage=None):
    bits = BY_NAME[type_name].bits
    rng = np.random.default_rng(RNG_SEED)
    codes = random_codes(shape, bits, rng)
    buffer, byte_offset = lay_out(layout, shape, bits, codes, byte_offset=byte_offset, garbage=garbage, rng=rng)
    d = dense(type_name, shape, layout, buffer, byte_offset)
    got = logical_codes(d, [buffer])
    # read back at the reference address: a zero stride makes several elements share one code
    want = code_array((get(buffer, byte_offset, bits, ref_offset(layout, i, shape)) for i in codes), shape, bits)
    assert got.dtype == want.dtype and got.shape == want.shape
    if not np.array_equal(got.view(np.uint8) if bits == 128 else got, want.view(np.uint8) if bits == 128 else want):
        bad = next(i for i in codes if got[i].tobytes() != want[i].tobytes())
        raise AssertionError(f"{type_name} {layout!r}: element {bad} is {got[bad]!r}, expected {want[bad]!r}")
    assert np.array_equal(stored_codes_row_major(d, [buffer]).view(np.uint8), got.view(np.uint8))
    return d, buffer


# ---------------------------------------------------------------- dense layouts

TYPES = ["bool", "uint2", "uint4", "float6_e2m3", "uint8", "float16", "float32", "float64", "complex128"]

LAYOUTS = [
    ("row-major", (3, 5), RowMajor(), 8),
    ("column-major", (3, 4, 2), ColumnMajor(), 0),
    ("strided reversed rows", (3, 4), Strided(strides=(-4, 1)), 0),
    ("strided reversed, transposed", (3, 4), Strided(strides=(1, -3)), 0),
    ("strided broadcast", (3, 4), Strided(strides=(0, 1)), 0),
    ("strided gaps", (2, 3), Strided(strides=(7, 2)), 16),
    ("tiled row/row", (5, 7), Tiled(tile_shape=(2, 3)), 0),
    ("tiled column/column", (5, 7), Tiled(tile_shape=(2, 3), outer_layout=2, inner_layout=2), 0),
    ("tiled rank 3", (3, 5, 2), Tiled(tile_shape=(2, 2, 2), outer_layout=2), 0),
    ("tiled nested", (7, 6), Tiled(tile_shape=(4, 4), inner_layout=4, nested=Tiled(tile_shape=(2, 2), outer_layout=2))),
    ("tiled nested twice", (8, 9), Tiled(tile_shape=(4, 8), outer_layout=2, inner_layout=4, nested=Tiled(
        tile_shape=(2, 4), inner_layout=4, nested=Tiled(tile_shape=(1, 2), inner_layout=2)))),
    ("morton", (4, 4), Morton(morton_bits=(2, 2)), 0),
    ("morton partial", (3, 5), Morton(morton_bits=(2, 3)), 0),
    ("morton rank 3", (2, 3, 4), Morton(morton_bits=(2, 2, 2)), 0),
    ("hilbert 4x4", (4, 4), Hilbert(hilbert_order=2, hilbert_rank=2), 0),
    ("hilbert 8x8", (8, 8), Hilbert(hilbert_order=3, hilbert_rank=2), 0),
    ("hilbert 4x4x4", (4, 4, 4), Hilbert(hilbert_order=2, hilbert_rank=3), 0),
]
LAYOUTS = [case if len(case) == 4 else case + (0,) for case in LAYOUTS]


@pytest.mark.parametrize("type_name", TYPES)
@pytest.mark.parametrize("name, shape, layout, byte_offset", LAYOUTS, ids=[c[0] for c in LAYOUTS])
def test_logical_codes_follow_the_reference(name, shape, layout, byte_offset, type_name):
    check_layout(type_name, shape, layout, byte_offset)


@covers("HT-LAY-14")
def test_tile_padding_is_never_read():
    """Shape [5, 7] in [2, 3] tiles: row 5 and columns 7-8 of the boundary tiles are padding."""
    layout = Tiled(tile_shape=(2, 3), outer_layout=2)
    codes = {i: 1 + (i[0] * 7 + i[1]) % 100 for i in itertools.product(range(5), range(7))}
    results = []
    for garbage in (0xEE, 0x00, 0xFF):
        buffer, _ = lay_out(layout, (5, 7), 8, codes, garbage=garbage)
        assert buffer.count(bytes([garbage])) == 3 * 3 * 6 - 35  # the padding is really there
        got = logical_codes(dense("uint8", (5, 7), layout, buffer), [buffer])
        assert garbage not in got
        results.append(got)
    assert all(np.array_equal(r, results[0]) for r in results)
    assert np.array_equal(results[0], code_array(codes.values(), (5, 7), 8))
    check_layout("uint4", (5, 7), Tiled(tile_shape=(4, 4), inner_layout=4, nested=Tiled(tile_shape=(2, 2))),
                 garbage=0xF)


@covers("HT-LAY-15")
def test_tiled_strides_are_honoured():
    """Outer strides count tiles and may leave whole tiles of padding between tiles; inner strides
    count elements. Reading follows the strides as stored."""
    gaps = Tiled(tile_shape=(2, 2), outer_layout=3, outer_strides=(5, 2))  # grid [2, 2]: tiles 0, 2, 5, 7
    check_layout("float32", (4, 4), gaps, garbage=0xDEADBEEF)
    check_layout("uint4", (4, 4), gaps, garbage=0xA)
    inner = Tiled(tile_shape=(2, 3), inner_layout=3, inner_strides=(1, 2))  # column-major inside, by strides
    check_layout("uint8", (3, 5), inner, garbage=0xEE)
    both = Tiled(tile_shape=(2, 2), outer_layout=3, inner_layout=3, outer_strides=(-1, 2), inner_strides=(2, -1))
    check_layout("float16", (4, 4), both, byte_offset=64)
    nested = Tiled(tile_shape=(4, 4), outer_layout=3, outer_strides=(1, 3), inner_layout=4,
                   nested=Tiled(tile_shape=(2, 2), outer_layout=3, outer_strides=(1, 2)))
    check_layout("uint2", (8, 7), nested, garbage=2)


@covers("HT-LAY-83")
def test_hilbert_4x4_conformance_table():
    """layouts/hilbert § Conformance Check: index h -> (X[0], X[1]) for r = 2, p = 2."""
    table = {0: (0, 0), 1: (1, 0), 2: (1, 1), 3: (0, 1), 4: (0, 2), 5: (0, 3), 6: (1, 3), 7: (1, 2),
             8: (2, 2), 9: (2, 3), 10: (3, 3), 11: (3, 2), 12: (3, 1), 13: (2, 1), 14: (2, 0), 15: (3, 0)}
    x = np.array([xy[0] for xy in table.values()])
    y = np.array([xy[1] for xy in table.values()])
    assert hilbert_index([x, y], 2).tolist() == list(table)
    assert [ref_hilbert(xy, 2, 2) for xy in table.values()] == list(table)
    buffer = bytes(range(16))  # the element at Hilbert index h holds code h
    got = logical_codes(dense("uint8", (4, 4), Hilbert(hilbert_order=2, hilbert_rank=2), buffer), [buffer])
    for h, (a, b) in table.items():
        assert got[a, b] == h
    # Bit placement: bit b of X[d] sits at index bit b*r + (r - 1 - d); consecutive indices are neighbours.
    coords = np.indices((8, 8, 8)).reshape(3, -1)
    index = hilbert_index(list(coords), 3)
    assert sorted(index.tolist()) == list(range(512))
    order = coords[:, np.argsort(index)]
    assert (np.abs(np.diff(order, axis=1)).sum(axis=0) == 1).all()
    assert index.tolist() == [ref_hilbert(tuple(c), 3, 3) for c in coords.T.tolist()]


@covers("HE-10")
@pytest.mark.parametrize("layout", [ColumnMajor(), Tiled(tile_shape=(2, 2), outer_layout=2), Morton(morton_bits=(2, 2)),
                                    Strided(strides=(1, -2))], ids=["column-major", "tiled", "morton", "strided"])
def test_bit_patterns_pass_unchanged(layout):
    """NaN payloads, signalling NaNs, subnormals and negative zero come back bit for bit."""
    patterns = {
        "float8_e4m3": [0x7F, 0xFF, 0x01, 0x81, 0x80, 0x07],
        "float8_e5m2": [0x7D, 0xFE, 0x7C, 0x01, 0x83, 0x80],
        "float16": [0x7C01, 0xFE00, 0x7E01, 0x0001, 0x83FF, 0x8000],
        "bfloat16": [0x7F81, 0xFFC1, 0x0001, 0x807F, 0x8000, 0x7F80],
        "float32": [0x7FC00001, 0x7F800001, 0xFFBFFFFF, 0x00000001, 0x807FFFFF, 0x80000000],
        "float64": [0x7FF0000000000001, 0xFFF8000000000ABC, 0x0000000000000001, 0x800FFFFFFFFFFFFF,
                    0x8000000000000000, 0x7FF8000000000000],
        "float4_e2m1": [0x1, 0x9, 0x8, 0xF, 0x0, 0x7],
        "float6_e3m2": [0x01, 0x21, 0x20, 0x3F, 0x03, 0x1F],
    }
    for type_name, values in patterns.items():
        bits = BY_NAME[type_name].bits
        codes = dict(zip(itertools.product(range(2), range(3)), values))
        buffer, offset = lay_out(layout, (2, 3), bits, codes)
        got = logical_codes(dense(type_name, (2, 3), layout, buffer, offset), [buffer])
        assert got.reshape(-1).tolist() == values, type_name


def test_empty_and_scalar_tensors():
    signalling = b"\x01\x00\x80\x7f"
    assert logical_codes(dense("float32", (), RowMajor(), signalling), [signalling]).tolist() == 0x7F800001
    empty = logical_codes(dense("uint4", (0, 4), Strided(strides=(9, 9)), b""), [b""])
    assert empty.shape == (0, 4) and empty.dtype == np.uint8
    tiled = logical_codes(dense("float16", (3, 0), Tiled(tile_shape=(2, 2)), b""), [b""])
    assert tiled.shape == (3, 0) and tiled.dtype == np.uint16


def test_addresses_outside_buffer_0_are_refused():
    # Morton with unequal bits: shape [2, 8], bits [1, 3] -> element [0, 7] has code 0b101010 = 42,
    # past the 2^(1+3) = 16 elements the size rule asks for.
    with raises_rule("HT-LAY-19"):
        logical_codes(dense("uint8", (2, 8), Morton(morton_bits=(1, 3)), bytes(16)), [bytes(16)])
    check_layout("uint8", (2, 8), Morton(morton_bits=(1, 3)))  # a buffer large enough is read
    far = Tiled(tile_shape=(2, 2), outer_layout=3, outer_strides=(1 << 40, 1))
    with raises_rule("HT-LAY-13"):
        logical_codes(dense("uint8", (4, 4), far, bytes(16)), [bytes(16)])
    behind = Tiled(tile_shape=(2, 2), inner_layout=3, inner_strides=(-1, 1))
    with raises_rule("HT-LAY-13"):
        logical_codes(dense("uint8", (4, 4), behind, bytes(16)), [bytes(16)])
    # One element past the end, for every packing: a whole 3-byte group, a nibble, a byte, a word.
    for type_name, capacity in (("float6_e2m3", 4), ("uint4", 4), ("uint2", 4), ("bool", 8), ("uint8", 4),
                                ("float32", 4)):  # elements in the smallest buffer of each packing
        bits, n = BY_NAME[type_name].bits, capacity // 2 + 1
        spread = Tiled(tile_shape=(n,), inner_layout=3, inner_strides=(2,))  # last offset = capacity
        small, large = bytes(size_of(bits, capacity)), bytes(size_of(bits, capacity + 1))
        with raises_rule("HT-LAY-13"):
            logical_codes(dense(type_name, (n,), spread, small), [small])
        assert logical_codes(dense(type_name, (n,), spread, large), [large]).tolist() == [0] * n


def test_refusals():
    with raises_rule("HT-HDR-02"):
        logical_codes(b"not a descriptor", [])
    for layout, rank, code in ((COO(nnz=0), 2, "HT-LAY-20"), (CSR(nnz=0), 2, "HT-LAY-26"),
                               (CSC(nnz=0), 2, "HT-LAY-34"), (CSF(nnz=0, mode_order=(0, 1, 2)), 3, "HT-LAY-42"),
                               (BlockPaged(page_size=4, num_pages=0), 3, "HT-LAY-53"),
                               (CompositeHead(composition_rule=3, member_count=1), 2, "HT-LAY-68")):
        d = TensorDescriptor(type_tag=0x03, shape=(2,) * rank, layout=layout)
        for read in (logical_codes, stored_codes_row_major):
            with raises_rule(code) as info:
                read(d, [])
            assert isinstance(info.value, UnsupportedError) and "dense" in str(info.value)
    PRIVATE_LAYOUTS.register(0xACCE55, "access test layout")
    try:
        d = TensorDescriptor(type_tag=0x03, shape=(2,), layout=PrivateLayout(extension_layout_id=0xACCE55),
                             layout_tag=0xF3, buffers=(BufferHandle(byte_size=8),))
        with raises_rule("HT-LAY-84"):
            logical_codes(d, [bytes(8)])
    finally:
        PRIVATE_LAYOUTS.unregister(0xACCE55)
    opaque = TensorDescriptor(type_tag=0x03, shape=(2,), layout=OpaqueLayout(), layout_tag=0x30,
                              buffers=(BufferHandle(byte_size=8),))
    with raises_rule("HT-HDR-17") as info:
        logical_codes(opaque, [bytes(8)])
    assert isinstance(info.value, OpaqueDataAccess)
    private_type = TensorDescriptor(type_tag=0xF0, shape=(2,), layout=ColumnMajor(), extension_type=ExtensionType(
        bit_width=8), buffers=(BufferHandle(byte_size=2),))
    with raises_rule("HE-08"):
        logical_codes(private_type, [bytes(2)])
    dynamic = TensorDescriptor(type_tag=0x03, shape=(DYNAMIC, 2), layout=ColumnMajor(),
                               buffers=(BufferHandle(byte_size=8),))
    with raises_rule("HT-HDR-18"):
        logical_codes(dynamic, [bytes(8)])


# ---------------------------------------------------------------- dequantize on other layouts


def stored_codes(descriptor, buffers, extents):
    """The row-major twin's codes, read element by element (padding included)."""
    bits = BY_TAG[descriptor.type_tag].bits
    cells = itertools.product(*map(range, extents))
    return {index: get(buffers[0], descriptor.byte_offset, bits, ref_row_major(index, extents)) for index in cells}


QUANTIZED = [
    ("per_block_affine", (3, 10), {"axis": 1, "block_size": 4, "storage": "int8"}),
    ("per_block_affine", (5, 4), {"axis": 0, "block_size": 2, "storage": "int4", "symmetric": False,
                                  "scale_type": "float16"}),
    ("nf4", (10, 3), {"axis": 0, "block_size": 8}),
    ("per_channel_affine", (4, 6), {"axis": 1, "storage": "uint8", "symmetric": False}),
    ("per_tensor_affine", (4, 6), {"storage": "int16"}),
    ("mxfp", (2, 64), {"axis": 1, "block_size": 32, "storage": "float8_e4m3"}),
]

RELAID = [
    ("column-major", lambda e: ColumnMajor(), 0),
    ("strided reversed", lambda e: Strided(strides=(-e[1], 1)), 0),
    ("strided transposed", lambda e: Strided(strides=(1, e[0])), 64),
    ("tiled", lambda e: Tiled(tile_shape=(2, 3), outer_layout=2), 0),
    ("tiled nested", lambda e: Tiled(tile_shape=(4, 4), inner_layout=4,
                                     nested=Tiled(tile_shape=(2, 2), outer_layout=2)), 0),
    ("morton", lambda e: Morton(morton_bits=tuple(max(1, (n - 1).bit_length()) for n in e)), 0),
]


@pytest.mark.parametrize("name, make_layout, byte_offset", RELAID, ids=[c[0] for c in RELAID])
@pytest.mark.parametrize("scheme_name, shape, options", QUANTIZED, ids=[f"{c[0]}-{c[1]}" for c in QUANTIZED])
def test_dequantize_equals_the_row_major_twin(scheme_name, shape, options, name, make_layout, byte_offset):
    x = np.random.default_rng(RNG_SEED).normal(size=shape) * 3
    quantized = quantize(x, scheme_name, **options)
    twin, buffers = quantized.descriptor, quantized.buffers
    expected = dequantize(twin, buffers)
    q = twin.quantization
    extents = list(shape)
    if isinstance(q, (PerBlockAffine, NF4)):  # HD-12: the padded extent is stored and addressed
        extents[q.axis] = -(-shape[q.axis] // q.block_size) * q.block_size
    bits = BY_NAME[options.get("storage", "uint4" if scheme_name == "nf4" else "int8")].bits
    codes = stored_codes(twin, buffers, extents)
    layout = make_layout(extents)
    data, offset = lay_out(layout, extents, bits, codes, byte_offset=byte_offset)
    relaid = built(twin.replace(layout=layout, byte_offset=offset,
                                buffers=(BufferHandle(byte_size=len(data)),) + twin.buffers[1:]))
    contents = [data, *buffers[1:]]
    assert np.array_equal(stored_codes_row_major(relaid, contents), stored_codes_row_major(twin, buffers))
    logical = tuple(slice(0, n) for n in shape)
    assert np.array_equal(logical_codes(relaid, contents), stored_codes_row_major(twin, buffers)[logical])
    got = dequantize(relaid, contents)
    assert got.shape == shape and np.array_equal(got, expected, equal_nan=True)


def test_dequantize_hilbert_and_refusals():
    x = np.random.default_rng(RNG_SEED).normal(size=(8, 8))
    quantized = quantize(x, "per_block_affine", axis=1, block_size=4, storage="uint4", symmetric=False)
    twin, buffers = quantized.descriptor, quantized.buffers
    codes = stored_codes(twin, buffers, (8, 8))
    layout = Hilbert(hilbert_order=3, hilbert_rank=2)
    data, _ = lay_out(layout, (8, 8), 4, codes)
    relaid = built(twin.replace(layout=layout, buffers=(BufferHandle(byte_size=len(data)),) + twin.buffers[1:]))
    assert np.array_equal(dequantize(relaid, [data, *buffers[1:]]), dequantize(twin, buffers))
    coo = TensorDescriptor(type_tag=0x10, shape=(3, 4), layout=COO(nnz=2),
                           buffers=(BufferHandle(byte_size=2), BufferHandle(byte_size=32)),
                           quantization=PerTensorAffine(scale=0.5))
    with raises_rule("HT-LAY-20") as info:
        dequantize(coo, [bytes(2), bytes(32)])
    assert "nnz values" in str(info.value)
    d, contents = paged_tensor(quantized=True)
    with raises_rule("HT-LAY-53") as info:
        dequantize(d, contents)
    assert "block_paged_codes" in str(info.value)


# ---------------------------------------------------------------- block-paged


PAGE, PAGES, HEADS, DIM = 4, 5, 2, 3
UNUSED = 0xEE


def paged_tensor(sequences=(([3, 0], 6), ([3, 4], 7)), quantized=False, index_type=0, total=None):
    """A pool of 5 pages of 4 slots; each sequence is (page ids, tokens). Every slot holds
    UNUSED except the valid tokens, whose codes are below 100. Sequences may share a page."""
    rng = np.random.default_rng(RNG_SEED)
    pool = bytearray([UNUSED]) * (PAGES * PAGE * HEADS * DIM)
    for pages, tokens in sequences:
        for t, h, dd in itertools.product(range(tokens), range(HEADS), range(DIM)):
            flat = ((pages[t // PAGE] * PAGE + t % PAGE) * HEADS + h) * DIM + dd
            pool[flat] = int(rng.integers(0, 100))
    dtype = "<u4" if index_type == 0 else "<u8"
    table = np.array([p for pages, _ in sequences for p in pages], dtype=dtype).tobytes()
    starts = np.cumsum([0] + [len(pages) for pages, _ in sequences]).astype(dtype).tobytes()
    contents = [bytes(pool), table, starts]
    q = None
    if quantized:
        q = PerBlockAffine(axis=0, block_size=PAGE, scale_buffer_index=3, symmetric=True)
        contents.append(np.arange(1, PAGES * PAGE + 1, dtype="<f4").tobytes())
    d = built(TensorDescriptor(
        type_tag=BY_NAME["int8" if quantized else "uint8"].tag,
        shape=(sum(tokens for _, tokens in sequences) if total is None else total, HEADS, DIM),
        layout=BlockPaged(page_size=PAGE, num_pages=PAGES, num_seqs=len(sequences), block_table_index_type=index_type),
        buffers=tuple(BufferHandle(byte_size=len(c)) for c in contents), quantization=q))
    return d, contents


def ref_sequence(pool, pages, tokens):
    return np.array([[[pool[((pages[t // PAGE] * PAGE + t % PAGE) * HEADS + h) * DIM + dd] for dd in range(DIM)]
                      for h in range(HEADS)] for t in range(tokens)], dtype=np.uint8).reshape(tokens, HEADS, DIM)


@covers("HT-LAY-66", "HT-LAY-67")
@pytest.mark.parametrize("index_type", [0, 1])
def test_block_paged_lookup_reads_only_valid_tokens(index_type):
    """Sequence 0: pages [3, 0], 6 tokens (slots 2-3 of page 0 unused); sequence 1 shares page 3
    as its prefix, then page 4 with 3 valid slots."""
    sequences = (([3, 0], 6), ([3, 4], 7))
    d, contents = paged_tensor(sequences, index_type=index_type)
    for seq, (pages, tokens) in enumerate(sequences):
        got = block_paged_codes(d, contents, seq, tokens=tokens)
        assert got.codes.shape == (tokens, HEADS, DIM) and got.codes.dtype == np.uint8
        assert np.array_equal(got.codes, ref_sequence(contents[0], pages, tokens))
        assert UNUSED not in got.codes  # the unused slots of the last page were never read
        assert got.slots.tolist() == [pages[t // PAGE] * PAGE + t % PAGE for t in range(tokens)]
    shared = [block_paged_codes(d, contents, s, tokens=4).codes for s in (0, 1)]
    assert np.array_equal(shared[0], shared[1])  # the prefix page aliases
    with raises_rule("HT-LAY-66"):
        block_paged_codes(d, contents, 0, tokens=9)  # two pages hold at most 8 tokens
    with raises_rule("HT-LAY-66"):
        block_paged_codes(d, contents, 0)  # 6 + 7 and 7 + 6 both fit: the descriptor cannot tell
    with raises_rule("HT-LAY-67"):
        block_paged_codes(d, contents, 2, tokens=1)


def test_block_paged_token_counts_derived_when_determined():
    d, contents = paged_tensor((([1, 2, 0], 10),))
    assert block_paged_codes(d, contents, 0).codes.shape == (10, HEADS, DIM)
    d, contents = paged_tensor((([1], 4), ([], 0), ([2, 0], 8)))
    for seq, (pages, tokens) in enumerate((([1], 4), ([], 0), ([2, 0], 8))):
        got = block_paged_codes(d, contents, seq)
        assert np.array_equal(got.codes, ref_sequence(contents[0], pages, tokens))
    d, contents = paged_tensor((([1], 3),), total=9)  # one page cannot hold 9 tokens
    with raises_rule("HT-LAY-66"):
        block_paged_codes(d, contents, 0)
    assert block_paged_codes(d, contents, 0, tokens=3).codes.shape == (3, HEADS, DIM)
    with raises_rule("HT-LAY-53"):
        block_paged_codes(dense("uint8", (2,), RowMajor(), bytes(2)), [bytes(2)], 0)


def test_quantized_block_paged_parameters_per_page_slot():
    sequences = (([2, 4], 5),)
    d, contents = paged_tensor(sequences, quantized=True)
    got = block_paged_codes(d, contents, 0)
    scales = np.frombuffer(contents[3], dtype="<f4")
    assert got.slots.tolist() == [8, 9, 10, 11, 16]
    values = got.codes.view(np.int8) * scales[got.slots][:, None, None]
    want = ref_sequence(contents[0], [2, 4], 5).view(np.int8) * np.array([9, 10, 11, 12, 17], "f4")[:, None, None]
    assert np.array_equal(values, want)
