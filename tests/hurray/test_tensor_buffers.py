"""The buffer table: handles, counts per layout, colocation (HT-BUFT) and parameter placement (HQ-BUF)."""

from __future__ import annotations

import pytest

from hurray_decl import MXFP, NF4, PerBlockAffine, PerChannelAffine, PerTensorAffine
from hurray_decl.declare.schema import field_offsets
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray.tensor import (
    COO,
    CSC,
    CSF,
    CSR,
    BlockPaged,
    BufferHandle,
    CompositeHead,
    Hilbert,
    TensorDescriptor,
    read_tensor_descriptor,
    write_tensor_descriptor,
)
from hurray_decl.hurray.tensor.buffers import HANDLE
from hurray_decl.hurray.tensor.validate import validate_buffers
from tests.helpers import covers, raises_rule
from tests.hurray.tensor_support import at, dense, encode, field_bytes, handle, patch_field, roundtrip, vector

BASE = vector("row_major_f32_3x4.bin")  # one buffer handle


@covers("HT-BUFT-01")
def test_handle_layout():
    assert HANDLE.sizeof() == 16
    assert {k: v[0] for k, v in field_offsets(HANDLE).items()} == {
        "byte_size": 0, "alignment": 8, "device_tag": 12, "sync_mode": 13, "memory_class": 14, "reserved": 15}
    d = read_tensor_descriptor(vector("csr_f32_3x3.bin"))
    assert [b.byte_size for b in d.buffers] == [8, 16, 32] and field_bytes(BASE, "buffer_count") == b"\x01"


@pytest.mark.parametrize("code, field, value", [
    ("HT-BUFT-12", "alignment", 48),
    ("HT-BUFT-12", "alignment", 0),
    ("HT-BUFT-13", "alignment", 32),
    ("HT-BUFT-14", "device_tag", 0xFF),
    ("HT-BUFT-15", "device_tag", 0x09),
    ("HT-BUFT-15", "device_tag", 0xEF),
    ("HT-BUFT-17", "sync_mode", 0x03),
    ("HT-BUFT-17", "sync_mode", 0xFF),
    ("HT-BUFT-18", "sync_mode", 0x01),
    ("HT-BUFT-19", "memory_class", 0x04),
    ("HT-BUFT-19", "memory_class", 0xFF),
    ("HT-BUFT-20", "memory_class", 0xF0),
    ("HT-BUFT-22", "memory_class", 0x03),
    ("HT-BUFT-23", "reserved", 0x01),
])
def test_handle_refusals(code, field, value):
    with raises_rule(code, offset=at(BASE, f"buffers.0.{field}")):
        read_tensor_descriptor(patch_field(BASE, f"buffers.0.{field}", value))


def test_empty_buffers_take_any_power_of_two():
    roundtrip(dense(shape=(0, 4), sizes=()).replace(buffers=(BufferHandle(byte_size=0, alignment=1),)))
    with raises_rule("HT-BUFT-13"):
        write_tensor_descriptor(dense().replace(buffers=(BufferHandle(byte_size=48, alignment=32),)))


def one_handle(**fields) -> TensorDescriptor:
    return dense().replace(buffers=(BufferHandle(byte_size=48, **fields),))


@covers("HT-BUFT-16")
def test_private_devices_with_standard_memory():
    """HD-23: a private device tag is accepted with STANDARD; sync_mode rules are those of a GPU."""
    roundtrip(one_handle(device_tag=0xF4, sync_mode=1))
    private_device = patch_field(BASE, "buffers.0.device_tag", 0xF4)
    memory_class = at(BASE, "buffers.0.memory_class")
    with raises_rule("HT-BUFT-21", offset=memory_class):  # a private memory class needs an agreement
        read_tensor_descriptor(patch_field(private_device, "buffers.0.memory_class", 0xF4))
    with raises_rule("HT-BUFT-22", offset=memory_class):  # a private device with a public class other than STANDARD
        read_tensor_descriptor(patch_field(private_device, "buffers.0.memory_class", 0x01))
    with pytest.raises(HurrayDeclError):
        write_tensor_descriptor(one_handle(device_tag=0xF4, memory_class=0xF4))


def test_a_remembered_handle_verdict_holds_only_where_the_rules_would_give_it():
    """Warm, the compiled parse accepts a handle whose rule inputs it accepted before without
    running the handle rules again: byte_size zero or not is one of those inputs (HT-BUFT-13),
    and a private memory class, which the mode and the registry judge (HT-BUFT-21), is judged
    each time."""
    empty = encode(dense(shape=(0, 4), sizes=()).replace(buffers=(BufferHandle(byte_size=0, alignment=32),)))
    private = patch_field(patch_field(BASE, "buffers.0.device_tag", 0xF4), "buffers.0.memory_class", 0xF4)
    for _ in range(12):  # past the first uses, which the interpreted declaration parses
        assert read_tensor_descriptor(empty).buffers[0].alignment == 32
        with raises_rule("HT-BUFT-13", offset=at(BASE, "buffers.0.alignment")):
            read_tensor_descriptor(patch_field(empty, "buffers.0.byte_size", 48))
        assert read_tensor_descriptor(private, permissive=True).buffers[0].memory_class == 0xF4
        with raises_rule("HT-BUFT-21", offset=at(BASE, "buffers.0.memory_class")):
            read_tensor_descriptor(private)


@pytest.mark.parametrize("device, memory_class, ok", [
    (0x00, 0x00, True), (0x00, 0x01, True), (0x00, 0x02, True), (0x00, 0x03, False),
    (0x01, 0x03, True), (0x02, 0x03, True), (0x03, 0x03, False), (0x04, 0x03, True),
    (0x05, 0x00, True), (0x05, 0x01, False), (0x05, 0x02, False), (0x06, 0x03, False),
    (0x07, 0x03, True), (0x08, 0x03, False), (0x08, 0x02, True),
])
def test_device_memory_matrix(device, memory_class, ok):
    fields = dict(device_tag=device, memory_class=memory_class, alignment=4096)
    if ok:
        roundtrip(one_handle(**fields))
    else:
        with raises_rule("HT-BUFT-22"):  # the handle model runs the declaration's rules
            one_handle(**fields)
        d = one_handle(alignment=4096)
        bypassed = d.model_copy(update={"buffers": (d.buffers[0].model_copy(update=fields),)})
        with raises_rule("HT-BUFT-22"):
            write_tensor_descriptor(bypassed)


def test_buffer_counts_per_layout():
    table = at(BASE, "buffer_count")  # a table of no handles: the descriptor ends after its count
    with raises_rule("HT-BUFT-02", offset=table):
        emptied = patch_field(patch_field(BASE, "descriptor_length", table + 1), "buffer_count", 0)
        read_tensor_descriptor(emptied[:table + 1])
    head = read_tensor_descriptor(vector("composite_head_partition.bin"))
    with raises_rule("HT-BUFT-03"):
        write_tensor_descriptor(head.replace(buffers=(handle(0),)))
    with raises_rule("HT-BUFT-04"):
        write_tensor_descriptor(dense(sizes=(48, 0)))
    with raises_rule("HT-BUFT-04"):
        write_tensor_descriptor(TensorDescriptor(type_tag=0x03, shape=(4, 4), layout=Hilbert(
            hilbert_order=2, hilbert_rank=2), buffers=(handle(64), handle(0))))
    q = PerBlockAffine(axis=1, block_size=4, scale_buffer_index=1, symmetric=True)
    with raises_rule("HT-BUFT-05"):
        write_tensor_descriptor(dense(type_tag=0x10, sizes=(12, 12, 0), quantization=q))
    with raises_rule("HT-BUFT-05"):
        write_tensor_descriptor(dense(type_tag=0x10, sizes=(12, 0), quantization=PerTensorAffine(scale=1.0)))
    coo = TensorDescriptor(type_tag=0x03, shape=(4,), layout=COO(nnz=1), buffers=(handle(4), handle(8), handle(0)))
    with raises_rule("HT-BUFT-06"):
        write_tensor_descriptor(coo)
    csr = TensorDescriptor(type_tag=0x03, shape=(3, 3), layout=CSR(nnz=2), buffers=(handle(8), handle(16)))
    with raises_rule("HT-BUFT-07"):
        write_tensor_descriptor(csr)
    with raises_rule("HT-BUFT-08"):
        write_tensor_descriptor(csr.replace(layout=CSC(nnz=2), layout_tag=0x08))
    csf = TensorDescriptor(type_tag=0x03, shape=(2, 2, 2), layout=CSF(nnz=0, mode_order=(0, 1, 2)),
                           buffers=(handle(0), handle(16), handle(0), handle(8), handle(0), handle(8)))
    with raises_rule("HT-BUFT-09"):
        write_tensor_descriptor(csf)
    paged = TensorDescriptor(type_tag=0x03, shape=(8, 2, 4), layout=BlockPaged(page_size=4, num_pages=2),
                             buffers=(handle(256), handle(0)))
    with raises_rule("HT-BUFT-10"):
        write_tensor_descriptor(paged)
    with raises_rule("HT-BUFT-10"):
        write_tensor_descriptor(paged.replace(buffers=(handle(256), handle(0), handle(4), handle(0))))


def test_more_than_255_buffers_are_never_written():
    d = dense().replace(buffers=tuple(handle(0) for _ in range(256)))
    with raises_rule("HT-BUFT-11"):
        write_tensor_descriptor(d)


def test_colocation():
    csr = TensorDescriptor(type_tag=0x03, shape=(3, 3), layout=CSR(nnz=2),
                           buffers=(handle(8), handle(16, device_tag=1, alignment=4096), handle(32)))
    with raises_rule("HT-BUFT-24"):
        write_tensor_descriptor(csr)
    with raises_rule("HT-BUFT-25"):
        write_tensor_descriptor(csr.replace(buffers=(handle(8), handle(16, memory_class=1), handle(32))))
    q = PerBlockAffine(axis=1, block_size=4, scale_buffer_index=1, symmetric=True)
    d = dense(type_tag=0x10, sizes=(12, 6), quantization=q)
    with raises_rule("HT-BUFT-25"):
        write_tensor_descriptor(d.replace(buffers=(handle(12), handle(6, memory_class=2))))


# ---------------------------------------------------------------- parameter placement (HQ-BUF)


def int8(sizes, q, shape=(3, 4), **kw):
    return dense(type_tag=0x10, shape=shape, sizes=sizes, quantization=q, **kw)


def pc(**kw):
    values = dict(axis=0, scale_buffer_index=1, zero_point_buffer_index=2)
    values.update(kw)
    return PerChannelAffine(**values)


def test_parameter_index_range_and_aliasing():
    with raises_rule("HQ-BUF-01"):
        write_tensor_descriptor(int8((12, 12), pc()))
    with raises_rule("HQ-BUF-01"):  # the index is also checked on read, at its own byte
        data = encode(int8((12, 12, 12), pc()))
        read_tensor_descriptor(patch_field(data, "quantization.zero_point_buffer_index", 7))
    with raises_rule("HQ-BUF-02"):
        write_tensor_descriptor(int8((12, 12), pc(scale_buffer_index=0, zero_point_buffer_index=1)))
    csr = TensorDescriptor(type_tag=0x10, shape=(3, 3), layout=CSR(nnz=2),
                           buffers=(handle(2), handle(16), handle(32), handle(12)),
                           quantization=pc(scale_buffer_index=1, zero_point_buffer_index=3))
    with raises_rule("HQ-BUF-03"):
        write_tensor_descriptor(csr)
    roundtrip(csr.replace(quantization=pc(scale_buffer_index=3, symmetric=True, zero_point_buffer_index=None),
                                     buffers=csr.buffers[:3] + (handle(12),)))


def test_shared_scale_and_zero_point_buffer():
    roundtrip(int8((12, 24), pc(zero_point_buffer_index=1)))
    with raises_rule("HQ-BUF-04"):
        write_tensor_descriptor(int8((12, 12), pc(zero_point_buffer_index=1)))
    q = PerBlockAffine(axis=1, block_size=2, scale_buffer_index=1, zero_point_buffer_index=1, scale_type_tag=1)
    roundtrip(int8((12, 6 * 2 + 6 * 4), q))
    with raises_rule("HQ-BUF-04"):
        write_tensor_descriptor(int8((12, 6 * 2), q))


def test_parameter_device_matches_data():
    d = int8((12, 12), pc(symmetric=True, zero_point_buffer_index=None))
    moved = d.replace(buffers=(handle(12), handle(12, device_tag=1, alignment=4096)))
    with raises_rule("HQ-BUF-06"):
        write_tensor_descriptor(moved)


@pytest.mark.parametrize("code, q, shape, sizes", [
    ("HQ-BUF-07", pc(symmetric=True, zero_point_buffer_index=None), (3, 4), (12, 16)),
    ("HQ-BUF-08", pc(), (3, 4), (12, 12, 8)),
    ("HQ-BUF-09", PerBlockAffine(axis=1, block_size=2, scale_buffer_index=1, symmetric=True, scale_type_tag=2),
     (3, 5), (15, 24)),
    ("HQ-BUF-10", PerBlockAffine(axis=1, block_size=2, scale_buffer_index=1, zero_point_buffer_index=2),
     (3, 5), (15, 36, 24)),
])
def test_exact_parameter_sizes(code, q, shape, sizes):
    with raises_rule(code):
        write_tensor_descriptor(int8(sizes, q, shape=shape))


def test_per_block_scale_counts_include_the_partial_block():
    q = PerBlockAffine(axis=1, block_size=2, scale_buffer_index=1, zero_point_buffer_index=2, scale_type_tag=2)
    roundtrip(int8((18, 18, 36), q, shape=(3, 5)))  # 3 x ceil(5/2) = 9 blocks; data padded to 3 x 6


def test_nf4_and_mxfp_scale_sizes():
    nf4 = TensorDescriptor(type_tag=0x49, shape=(2, 16), buffers=(handle(16), handle(16)),
                           quantization=NF4(axis=1, block_size=8, scale_buffer_index=1))
    roundtrip(nf4)
    with raises_rule("HQ-BUF-11"):
        write_tensor_descriptor(nf4.replace(buffers=(handle(16), handle(8))))
    mx = TensorDescriptor(type_tag=0x40, shape=(2, 64), buffers=(handle(128), handle(4)),
                          quantization=MXFP(axis=1, block_size=32, scale_buffer_index=1))
    roundtrip(mx)
    with raises_rule("HQ-BUF-12"):
        write_tensor_descriptor(mx.replace(buffers=(handle(128), handle(8))))


def paged(q, extra, type_tag=0x10, **layout):
    values = dict(page_size=4, num_pages=2)
    values.update(layout)
    return TensorDescriptor(type_tag=type_tag, shape=(8, 2, 4), layout=BlockPaged(**values),
                            buffers=(handle(64), handle(0), handle(4)) + tuple(handle(s) for s in extra),
                            quantization=q)


def test_block_paged_parameters_per_page_slot():
    q = PerBlockAffine(axis=0, block_size=4, scale_buffer_index=3, zero_point_buffer_index=4)
    roundtrip(paged(q, (8 * 4, 8 * 4)))  # num_pages x page_size = 8 slots
    with raises_rule("HQ-BUF-13"):
        write_tensor_descriptor(paged(q, (8 * 4, 4 * 4)))
    with raises_rule("HQ-BUF-03"):
        write_tensor_descriptor(paged(PerBlockAffine(axis=0, block_size=4, scale_buffer_index=2,
                                                     symmetric=True), (32,)))
    with raises_rule("HQ-BUF-13"):
        write_tensor_descriptor(paged(NF4(axis=2, block_size=8, scale_buffer_index=3), (16,), type_tag=0x49))
    with raises_rule("HQ-BUF-13"):
        write_tensor_descriptor(paged(MXFP(axis=2, block_size=16, scale_buffer_index=3), (4,), type_tag=0x48))


@covers("HQ-BUF-05")
def test_shared_buffer_is_scales_then_zero_points():
    import struct
    d = int8((12, 24), pc(zero_point_buffer_index=1))
    scales = struct.pack("<3f", 1.0, 2.0, 3.0)
    validate_buffers(d, [bytes(12), scales + struct.pack("<3i", 0, 5, -128)])
    with raises_rule("HQ-PC-10", offset=12 + 4):
        validate_buffers(d, [bytes(12), scales + struct.pack("<3i", 0, 500, 0)])
    with raises_rule("HQ-PC-09", offset=8):
        validate_buffers(d, [bytes(12), struct.pack("<3f", 1.0, 2.0, 0.0) + bytes(12)])


def test_head_with_zero_buffers_reads():
    d = read_tensor_descriptor(vector("composite_head_partition.bin"))
    assert isinstance(d.layout, CompositeHead) and d.buffers == ()
