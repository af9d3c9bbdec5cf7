"""validate_buffers: the rules that need buffer contents (HQ-*-data, HE padding bits,
sparse and block-table invariants)."""

from __future__ import annotations

import math
import struct

import ml_dtypes
import numpy as np
import pytest

from hurray_decl import MXFP, NF4, OpaqueQuantization, PerBlockAffine, PerChannelAffine
from hurray_decl.errors import OpaqueDataAccess
from hurray_decl.hurray.tables.element_types import BY_NAME
from hurray_decl.hurray.tensor import (
    COO,
    CSC,
    CSF,
    CSR,
    BlockPaged,
    ColumnMajor,
    ExtensionType,
    TensorDescriptor,
    read_tensor_descriptor,
)
from hurray_decl.hurray.tensor.validate import validate_buffers
from tests.helpers import covers, raises_rule
from tests.hurray.tensor_support import encode, handle, u8, vector


def tensor(type_name, shape, contents, q=None, **kw):
    return TensorDescriptor(type_tag=BY_NAME[type_name].tag, shape=shape,
                            buffers=tuple(handle(len(c)) for c in contents), quantization=q, **kw)


def f32(*values):
    return struct.pack(f"<{len(values)}f", *values)


def i32(*values):
    return struct.pack(f"<{len(values)}i", *values)


def check(d, contents, **kw):
    validate_buffers(d, contents, **kw)


# ---------------------------------------------------------------- per-channel


PC = PerChannelAffine(axis=0, scale_buffer_index=1, zero_point_buffer_index=2)


def test_per_channel_values():
    good = [bytes(3), f32(0.5, -2.0, 1e-40), i32(-128, 0, 127)]
    d = tensor("int8", (3,), good, PC)
    check(d, good)
    with raises_rule("HQ-PC-08", offset=4):
        check(d, [bytes(3), f32(0.5, math.nan, 1.0), good[2]])
    with raises_rule("HQ-PC-08", offset=8):
        check(d, [bytes(3), f32(0.5, 1.0, -math.inf), good[2]])
    with raises_rule("HQ-PC-09", offset=0):
        check(d, [bytes(3), f32(-0.0, 1.0, 1.0), good[2]])
    with raises_rule("HQ-PC-10", offset=8):
        check(d, [bytes(3), good[1], i32(0, 0, 128)])


def test_contents_must_match_the_table():
    good = [bytes(3), f32(1, 1, 1), i32(0, 0, 0)]
    d = tensor("int8", (3,), good, PC)
    with raises_rule("HT-BUFT-01"):
        check(d, good[:2])
    with raises_rule("HT-BUFT-01"):
        check(d, [bytes(4)] + good[1:])


# ---------------------------------------------------------------- per-block and NF4


def test_per_block_values_and_zero_points():
    q = PerBlockAffine(axis=0, block_size=2, scale_buffer_index=1, zero_point_buffer_index=2, scale_type_tag=2)
    scales = np.array([1.0, -3.0], dtype=ml_dtypes.bfloat16).tobytes()
    good = [bytes(2), scales, i32(-8, 7)]
    d = tensor("int4", (4,), good, q)
    check(d, good)
    nan = np.array([1.0, np.nan], dtype=ml_dtypes.bfloat16).tobytes()
    with raises_rule("HQ-PB-12", offset=2):
        check(d, [bytes(2), nan, good[2]])
    with raises_rule("HQ-PB-13", offset=0):
        check(d, [bytes(2), np.array([0.0, 1.0], dtype=ml_dtypes.bfloat16).tobytes(), good[2]])
    with raises_rule("HQ-PB-22", offset=4):  # the subtracted zero point is a storage value
        check(d, [bytes(2), scales, i32(0, 8)])


def test_per_block_partial_padding_is_zero():
    q = PerBlockAffine(axis=1, block_size=4, scale_buffer_index=1, symmetric=True, scale_type_tag=1)
    half = np.float16(1).tobytes()
    # uint4 [2, 6] padded to [2, 8]: elements 6, 7, 14, 15 are padding
    data = bytes([0x21, 0x43, 0x65, 0x00, 0x21, 0x43, 0x65, 0x00])
    d = tensor("uint4", (2, 6), [data, half * 4], q)
    check(d, [data, half * 4])
    with raises_rule("HQ-PB-18", offset=7):
        check(d, [data[:-1] + u8(0x10), half * 4])  # element 15, padding, is the high nibble of byte 7
    # column-major: the padded axis is the slower one in storage
    cm = tensor("uint4", (2, 6), [data, half * 4], q, layout=ColumnMajor())
    flat = np.zeros(16, dtype=np.uint8)
    flat[:12] = 3
    packed = (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8).tobytes()
    check(cm, [packed, half * 4])
    flat[13] = 1
    with raises_rule("HQ-PB-18"):
        check(cm, [(flat[0::2] | (flat[1::2] << 4)).astype(np.uint8).tobytes(), half * 4])


def test_dynamic_dimensions_skip_what_depends_on_them():
    q = PerBlockAffine(axis=1, block_size=4, scale_buffer_index=1, symmetric=True, scale_type_tag=3)
    d = TensorDescriptor(type_tag=BY_NAME["int4"].tag, shape=(2**64 - 1, 6), buffers=(handle(5), handle(8)),
                         quantization=q)
    check(d, [b"\xff" * 5, f32(1.0, 2.0)])
    with raises_rule("HQ-PB-13"):
        check(d, [b"\xff" * 5, f32(1.0, 0.0)])


def test_nf4_values():
    q = NF4(axis=0, block_size=8, scale_buffer_index=1)
    d = tensor("uint4", (16,), [bytes(8), f32(0.0, 1.0)], q)
    check(d, [bytes(8), f32(-0.0, 2.5)])  # zero and -0.0 are allowed
    with raises_rule("HQ-NF4-08", offset=4):
        check(d, [bytes(8), f32(1.0, math.inf)])
    with raises_rule("HQ-NF4-09", offset=0):
        check(d, [bytes(8), f32(-1e-30, 1.0)])
    partial = tensor("uint4", (12,), [bytes(8), f32(1.0, 1.0)], q)
    check(partial, [bytes(8), f32(1.0, 1.0)])
    with raises_rule("HQ-PB-18"):
        check(partial, [bytes(7) + b"\x10", f32(1.0, 1.0)])


# ---------------------------------------------------------------- MXFP and float8_e8m0


def test_mxfp_scale_bytes():
    q = MXFP(axis=0, block_size=16, scale_buffer_index=1)
    d = tensor("float8_e4m3", (32,), [bytes(32), b"\x7f\x80"], q)
    check(d, [bytes(32), b"\x01\xfe"])
    with raises_rule("HQ-MX-10", offset=1):
        check(d, [bytes(32), b"\x7f\xff"])
    with raises_rule("HQ-MX-10", offset=0):
        check(d, [bytes(32), b"\x00\x7f"])


def test_float8_e8m0_data():
    d = tensor("float8_e8m0", (3,), [b"\x01\x7f\xfe"])
    check(d, [b"\x01\x7f\xfe"])
    with raises_rule("HE-26", offset=1):
        check(d, [b"\x01\xff\xfe"])
    with raises_rule("HE-26", offset=2):
        check(d, [b"\x01\x02\x00"])


# ---------------------------------------------------------------- padding bits


@pytest.mark.parametrize("code, type_name, count, good, bad", [
    ("HE-13", "bool", 10, b"\xff\x03", b"\xff\x07"),
    ("HE-15", "uint4", 3, b"\x21\x03", b"\x21\x13"),
    ("HE-15", "float4_e2m1", 1, b"\x07", b"\x87"),
    ("HE-17", "int2", 5, b"\xff\x03", b"\xff\x0f"),
    ("HE-19", "float6_e2m3", 5, b"\xff\xff\xff\x3f\x00\x00", b"\xff\xff\xff\x3f\x40\x00"),
    ("HE-19", "float6_e3m2", 2, b"\xff\x0f\x00", b"\xff\x1f\x00"),
])
def test_unused_bits_of_the_last_unit(code, type_name, count, good, bad):
    d = tensor(type_name, (count,), [good])
    check(d, [good])
    with raises_rule(code):
        check(d, [bad])


def test_padding_bits_of_sparse_values():
    d = TensorDescriptor(type_tag=BY_NAME["int4"].tag, shape=(4,), layout=COO(nnz=1),
                         buffers=(handle(1), handle(8)))
    check(d, [b"\x07", struct.pack("<Q", 2)])
    with raises_rule("HE-15"):
        check(d, [b"\x17", struct.pack("<Q", 2)])


# ---------------------------------------------------------------- what is never interpreted


@covers("HE-08")
def test_private_types_are_sized_not_interpreted():
    d = TensorDescriptor(type_tag=0xF2, shape=(3,), buffers=(handle(2),),
                         extension_type=ExtensionType(bit_width=4, packing_factor=2))
    check(d, [b"\xff\xff"])  # no padding-bit rule: the values' meaning is private


def test_skipped_schemes_never_reach_data():
    q = OpaqueQuantization(scheme_tag=0x30, payload=b"\x00" * 4)
    d = tensor("int8", (3,), [bytes(3)], q)
    with raises_rule("HQ-EXT-02"):
        check(d, [bytes(3)])
    with pytest.raises(OpaqueDataAccess):
        check(d, [bytes(3)])
    data = encode(d, permissive=True)
    assert read_tensor_descriptor(data, permissive=True).quantization == q


# ---------------------------------------------------------------- COO


def coo(coords, rank=2, shape=(3, 4), sorted_=0):
    nnz = len(coords)
    d = TensorDescriptor(type_tag=0x11, shape=shape, layout=COO(nnz=nnz, is_sorted=sorted_),
                         buffers=(handle(nnz), handle(8 * nnz * rank)))
    return d, [bytes(nnz), np.array(coords, dtype="<u8").tobytes()]


def test_coo_invariants():
    d, contents = coo([[2, 3], [0, 1], [1, 0]])
    check(d, contents)
    d, contents = coo([[0, 1], [3, 0]])
    with raises_rule("HT-LAY-22", offset=16):
        check(d, contents)
    check(d, contents, permissive=True)
    d, contents = coo([[0, 1], [0, 1]])
    with raises_rule("HT-LAY-23"):
        check(d, contents)
    d, contents = coo([[0, 1], [0, 2], [1, 0]], sorted_=1)
    check(d, contents)
    d, contents = coo([[0, 1], [1, 0], [0, 2]], sorted_=1)
    with raises_rule("HT-LAY-24", offset=32):
        check(d, contents)


# ---------------------------------------------------------------- CSR and CSC

CSR_VECTOR = vector("csr_f32_3x3.bin")


def u64s(*values):
    return np.array(values, dtype="<u8").tobytes()


@pytest.mark.parametrize("layout, codes", [
    (CSR, ("HT-LAY-28", "HT-LAY-29", "HT-LAY-30", "HT-LAY-31", "HT-LAY-32")),
    (CSC, ("HT-LAY-36", "HT-LAY-37", "HT-LAY-38", "HT-LAY-39", "HT-LAY-40")),
])
def test_compressed_invariants(layout, codes):
    start, end, step, order, bound = codes
    d = TensorDescriptor(type_tag=0x03, shape=(3, 3), layout=layout(nnz=3),
                         buffers=(handle(12), handle(24), handle(32)))
    values = bytes(12)
    check(d, [values, u64s(0, 2, 1), u64s(0, 2, 2, 3)])
    with raises_rule(start, offset=0):
        check(d, [values, u64s(0, 2, 1), u64s(1, 2, 2, 3)])
    with raises_rule(end, offset=24):
        check(d, [values, u64s(0, 2, 1), u64s(0, 2, 2, 2)])
    with raises_rule(step, offset=16):
        check(d, [values, u64s(0, 1, 2), u64s(0, 2, 1, 3)])
    with raises_rule(order, offset=8):
        check(d, [values, u64s(2, 2, 1), u64s(0, 2, 2, 3)])
    with raises_rule(bound, offset=8):
        check(d, [values, u64s(0, 3, 1), u64s(0, 2, 2, 3)])
    check(d, [values, u64s(2, 2, 1), u64s(0, 2, 2, 3)], permissive=True)


def test_csr_vector_with_contents():
    d = read_tensor_descriptor(CSR_VECTOR)
    check(d, [f32(1.0, 2.0), u64s(0, 2), u64s(0, 1, 2, 2)])


# ---------------------------------------------------------------- CSF


def csf(nnz, levels, shape=(2, 3, 4), mode_order=(0, 1, 2)):
    contents = [bytes(4 * nnz)]
    for pos, crd in levels:
        contents += [u64s(*pos), u64s(*crd)]
    d = TensorDescriptor(type_tag=0x03, shape=shape, layout=CSF(nnz=nnz, mode_order=mode_order),
                         buffers=tuple(handle(len(c)) for c in contents))
    return d, contents


GOOD_CSF = [((0, 1), (1,)), ((0, 2), (0, 2)), ((0, 1, 3), (3, 0, 1))]


def test_csf_invariants():
    d, contents = csf(3, GOOD_CSF)
    check(d, contents)
    d, contents = csf(0, [((0, 0), ()), ((0,), ()), ((0,), ())])
    check(d, contents)
    cases = [
        ("HT-LAY-46", [((0, 1), (1,)), ((1, 2), (0, 2)), ((0, 1, 3), (3, 0, 1))]),
        ("HT-LAY-47", [((0, 1), (1,)), ((0, 2), (0, 2)), ((0, 2, 1), (3, 0, 1))]),
        ("HT-LAY-48", [((0, 1), (1,)), ((0, 2), (0, 2)), ((0, 1, 2), (3, 0, 1))]),
        ("HT-LAY-49", [((0, 1), (1,)), ((0, 2), (2, 0)), ((0, 1, 3), (3, 0, 1))]),
        ("HT-LAY-50", [((0, 1), (1,)), ((0, 2), (0, 3)), ((0, 1, 3), (3, 0, 1))]),
    ]
    for code, levels in cases:
        d, contents = csf(3, levels)
        with raises_rule(code):
            check(d, contents)
    d, contents = csf(3, GOOD_CSF, shape=(3, 4, 2), mode_order=(2, 0, 1))  # level l holds dimension mode_order[l]
    check(d, contents)
    d, contents = csf(3, GOOD_CSF, shape=(4, 3, 2), mode_order=(2, 0, 1))
    with raises_rule("HT-LAY-50"):
        check(d, contents)


def test_empty_csf_form():
    d, contents = csf(0, [((0, 1), (1,)), ((0, 0), ()), ((0,), ())])
    with raises_rule("HT-LAY-51"):
        check(d, contents)
    d, contents = csf(0, [((0, 0), ()), ((0, 0), ()), ((0,), ())])
    with raises_rule("HT-LAY-51"):
        check(d, contents)


# ---------------------------------------------------------------- block-paged


def paged(table, seq, index_type=0):
    width = 4 if index_type == 0 else 8
    dtype = "<u4" if width == 4 else "<u8"
    contents = [bytes(2 * 4 * 2 * 4), np.array(table, dtype=dtype).tobytes(), np.array(seq, dtype=dtype).tobytes()]
    d = TensorDescriptor(type_tag=0x11, shape=(8, 2, 4),
                         layout=BlockPaged(page_size=4, num_pages=2, num_seqs=len(seq) - 1,
                                           block_table_index_type=index_type),
                         buffers=tuple(handle(len(c)) for c in contents))
    return d, contents


def test_block_paged_invariants():
    for index_type in (0, 1):
        d, contents = paged([1, 0, 1], [0, 2, 3], index_type)
        check(d, contents)  # page 1 is shared by both sequences
    cases = [("HT-LAY-57", [1, 0, 1], [1, 2, 3]), ("HT-LAY-58", [1, 0, 1], [0, 2, 2]),
             ("HT-LAY-59", [1, 0, 1], [0, 3, 2, 3]), ("HT-LAY-60", [1, 2, 1], [0, 2, 3])]
    for code, table, seq in cases:
        d, contents = paged(table, seq)
        with raises_rule(code):
            check(d, contents)
        check(d, contents, permissive=True)
