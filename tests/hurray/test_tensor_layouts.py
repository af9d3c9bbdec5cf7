"""Layout-specific fields and their tensor and buffer constraints, layout by layout (HT-LAY)."""

from __future__ import annotations

import pytest

from hurray_decl import PerBlockAffine, PerChannelAffine
from hurray_decl.errors import HurrayDeclError
from hurray_decl.tensor import (
    COO,
    CSC,
    CSF,
    CSR,
    LAYOUTS,
    BlockPaged,
    ColumnMajor,
    CompositeHead,
    Hilbert,
    Morton,
    PrivateLayout,
    RowMajor,
    Strided,
    TensorDescriptor,
    Tiled,
    read_tensor_descriptor,
    write_tensor_descriptor,
)
from hurray_decl.tensor.layouts import PRIVATE_LAYOUTS
from tests.helpers import covers, raises_rule
from tests.hurray.tensor_support import (
    dense, encode, field_offset, handle, layout_start, patch, roundtrip, u8, u32, u64, vector,
)


def test_one_row_per_assigned_layout_tag():
    assert sorted(LAYOUTS.keys()) == [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x40]


@covers("HT-LAY-01", "HT-LAY-02")
def test_row_and_column_major_have_no_fields():
    assert len(encode(dense())) == layout_start(2) + 1 + 16
    assert len(encode(dense(layout=ColumnMajor()))) == layout_start(2) + 1 + 16
    roundtrip(dense(layout=ColumnMajor()))


# ---------------------------------------------------------------- strided

STRIDED = vector("strided_f32_3x4.bin")


@covers("HT-LAY-03", "HT-LAY-04")
def test_strided_fields_and_signs():
    d = read_tensor_descriptor(STRIDED)
    assert d.layout == Strided(strides=(4, 1)) and STRIDED[44:52] == u64(4)
    roundtrip(dense(layout=Strided(strides=(-4, 1)), byte_offset=32))  # rows reversed
    roundtrip(dense(layout=Strided(strides=(0, 1)), sizes=(16,)))  # rows broadcast


def test_strided_addresses_stay_inside_buffer_0():
    with raises_rule("HT-LAY-05"):
        read_tensor_descriptor(patch(STRIDED, 61, u64(44)))
    with raises_rule("HT-LAY-05"):
        write_tensor_descriptor(dense(layout=Strided(strides=(-4, 1))))
    with raises_rule("HT-LAY-03"):
        write_tensor_descriptor(dense(layout=Strided(strides=(4,))))
    roundtrip(dense(shape=(0, 4), sizes=(0,), layout=Strided(strides=(9, 9))))  # empty: nothing addressed


@covers("HT-LAY-06")
def test_strided_sub_byte_offsets_map_to_bytes_through_packing():
    int4 = TensorDescriptor(type_tag=0x48, shape=(3,), layout=Strided(strides=(2,)), buffers=(handle(3),))
    roundtrip(int4)  # linear offsets 0, 2, 4: element 4 is the low nibble of byte 2
    with raises_rule("HT-LAY-05"):
        write_tensor_descriptor(int4.replace(buffers=(handle(2),)))


# ---------------------------------------------------------------- tiled


def tiled(layout, sizes=(64,), shape=(3, 4)):
    return dense(shape=shape, layout=layout, sizes=sizes)


@covers("HT-LAY-07")
def test_tiled_fields_and_optional_parts():
    plain = Tiled(tile_shape=(2, 2))
    data = encode(tiled(plain))
    start = layout_start(2)
    assert data[start:start + 20] == u64(2) + u64(2) + b"\x01\x01\x00\x00"
    full = Tiled(tile_shape=(2, 2), outer_layout=3, inner_layout=3, outer_strides=(2, 1), inner_strides=(2, 1))
    assert len(encode(tiled(full))) == len(data) + 32
    roundtrip(tiled(full))
    nested = Tiled(tile_shape=(2, 2), inner_layout=4, nested=Tiled(tile_shape=(1, 2), outer_layout=2))
    assert len(encode(tiled(nested))) == len(data) + 20
    roundtrip(tiled(nested))
    with raises_rule("HT-LAY-07"):
        write_tensor_descriptor(tiled(Tiled(tile_shape=(2, 2), outer_layout=3)))
    with raises_rule("HT-LAY-07"):
        write_tensor_descriptor(tiled(Tiled(tile_shape=(2, 2), inner_strides=(1, 1))))


@pytest.mark.parametrize("code, offset, value", [
    ("HT-LAY-08", 8, u64(0)),
    ("HT-LAY-09", 16, u8(4)),
    ("HT-LAY-09", 16, u8(0)),
    ("HT-LAY-10", 17, u8(5)),
    ("HT-LAY-11", 18, b"\x00\x01"),
])
def test_tiled_refusals(code, offset, value):
    data = encode(tiled(Tiled(tile_shape=(2, 2))))
    start = layout_start(2)
    with raises_rule(code, offset=start + offset):
        read_tensor_descriptor(patch(data, start + offset, value))


def _nest(depth: int) -> Tiled:
    level = Tiled(tile_shape=(1, 1))
    for _ in range(depth - 1):
        level = Tiled(tile_shape=(1, 1), inner_layout=4, nested=level)
    return level


def test_tiled_nesting_limit():
    roundtrip(tiled(_nest(8), sizes=(48,)))
    with raises_rule("HT-LAY-12"):
        write_tensor_descriptor(tiled(_nest(9), sizes=(48,)))
    data = encode(tiled(_nest(8), sizes=(48,)))
    deepest = layout_start(2) + 7 * 20 + 17  # inner_layout of the 8th payload
    grown = patch(data, deepest, u8(4))
    with raises_rule("HT-LAY-12", offset=deepest):
        read_tensor_descriptor(grown[:deepest + 1] + grown[deepest + 1:])


def test_tiled_buffer_holds_whole_tiles():
    with raises_rule("HT-LAY-13"):  # ceil(3/2) x ceil(4/2) tiles of 4 float32 = 64 bytes
        write_tensor_descriptor(tiled(Tiled(tile_shape=(2, 2)), sizes=(63,)))


# ---------------------------------------------------------------- Morton

MORTON = vector("morton_f32_4x4.bin")  # morton_bits at 44, buffer 0 byte_size at 53


@covers("HT-LAY-16")
def test_morton_fields():
    assert read_tensor_descriptor(MORTON).layout == Morton(morton_bits=(2, 2))


def test_morton_refusals():
    with raises_rule("HT-LAY-17", offset=48):
        read_tensor_descriptor(patch(MORTON, 48, u32(0)))
    with raises_rule("HT-LAY-18"):
        read_tensor_descriptor(patch(MORTON, 44, u32(1)))
    with raises_rule("HT-LAY-19"):
        read_tensor_descriptor(patch(MORTON, 53, u64(60)))
    roundtrip(TensorDescriptor(type_tag=0x03, shape=(3, 2), layout=Morton(morton_bits=(2, 1)), buffers=(handle(32),)))


# ---------------------------------------------------------------- sparse

CSR_VECTOR = vector("csr_f32_3x3.bin")  # nnz at 44, reserved 52, buffer_count 60, handles 61/77/93


def coo(nnz=2, rank=2, **kw):
    return TensorDescriptor(type_tag=0x03, shape=(4,) * rank, layout=COO(nnz=nnz, **kw),
                            buffers=(handle(4 * nnz), handle(8 * nnz * rank)))


@covers("HT-LAY-20")
def test_coo_fields():
    data = encode(coo(is_sorted=1))
    start = layout_start(2)
    assert data[start:start + 16] == u64(2) + b"\x01" + bytes(7)
    roundtrip(coo(is_sorted=1))
    with raises_rule("HT-LAY-20", offset=start + 8):
        read_tensor_descriptor(patch(data, start + 8, u8(2)))
    with raises_rule("HT-LAY-21", offset=start + 9):
        read_tensor_descriptor(patch(data, start + 15, u8(1)))


@covers("HT-LAY-26")
def test_csr_fields_and_sizes():
    d = read_tensor_descriptor(CSR_VECTOR)
    assert d.layout == CSR(nnz=2)
    with raises_rule("HT-LAY-27", offset=52):
        read_tensor_descriptor(patch(CSR_VECTOR, 55, u8(1)))
    with raises_rule("HT-LAY-25"):
        write_tensor_descriptor(TensorDescriptor(type_tag=0x03, shape=(3, 3, 1), layout=CSR(nnz=2),
                                                 buffers=(handle(8), handle(16), handle(32))))


def csc(**kw):
    values = dict(type_tag=0x03, shape=(3, 5), layout=CSC(nnz=2), buffers=(handle(8), handle(16), handle(48)))
    values.update(kw)
    return TensorDescriptor(**values)


@covers("HT-LAY-34")
def test_csc_fields_and_sizes():
    data = encode(csc())
    roundtrip(csc())
    with raises_rule("HT-LAY-35", offset=layout_start(2) + 8):
        read_tensor_descriptor(patch(data, layout_start(2) + 15, u8(1)))
    with raises_rule("HT-LAY-33"):
        write_tensor_descriptor(csc(shape=(15,)))


def csf(mode_order=(0, 1, 2), nnz=0, sizes=(0, 16, 0, 8, 0, 8, 0), shape=(2, 3, 4)):
    return TensorDescriptor(type_tag=0x03, shape=shape, layout=CSF(nnz=nnz, mode_order=mode_order),
                            buffers=tuple(handle(s) for s in sizes))


@covers("HT-LAY-42", "HT-LAY-45")
def test_csf_fields_and_mode_order():
    data = encode(csf())
    start = layout_start(3)
    assert data[start:start + 8 + 12 + 8] == u64(0) + u32(0) + u32(1) + u32(2) + bytes(8)
    roundtrip(csf(mode_order=(2, 0, 1)))
    with raises_rule("HT-LAY-43", offset=start + 20):
        read_tensor_descriptor(patch(data, start + 27, u8(1)))
    with raises_rule("HT-LAY-44", offset=start + 8):
        read_tensor_descriptor(patch(data, start + 8, u32(1)))  # 1, 1, 2
    with raises_rule("HT-LAY-44"):
        read_tensor_descriptor(patch(data, start + 16, u32(3)))  # out of range
    d = read_tensor_descriptor(patch(data, start + 8, u32(1)), permissive=True)
    assert d.layout.mode_order == (1, 1, 2)
    with raises_rule("HT-LAY-41"):
        write_tensor_descriptor(csf(mode_order=(0, 1), shape=(2, 3), sizes=(0, 16, 0, 8, 0)))


# ---------------------------------------------------------------- block-paged


def paged(**kw):
    values = dict(page_size=4, num_pages=2, num_seqs=1)
    values.update(kw)
    layout = BlockPaged(**values)
    width = layout.index_width
    return TensorDescriptor(type_tag=0x03, shape=(8, 2, 4), layout=layout,
                            buffers=(handle(2 * 4 * 8 * 4), handle(2 * width), handle((layout.num_seqs + 1) * width)))


@covers("HT-LAY-53")
def test_block_paged_fields():
    data = encode(paged(kv_role=1, layer_index=7, block_table_index_type=1))
    start = layout_start(3)
    assert data[start:start + 32] == (u32(4) + u64(2) + u32(0) + u32(1) + b"\x01" + u32(7) + b"\x01" + bytes(6))
    roundtrip(paged(kv_role=1, layer_index=7, block_table_index_type=1))
    with raises_rule("HT-LAY-53", offset=start + 20):
        read_tensor_descriptor(patch(data, start + 20, u8(3)))
    with raises_rule("HT-LAY-53", offset=start + 25):
        read_tensor_descriptor(patch(data, start + 25, u8(2)))
    with raises_rule("HT-LAY-54", offset=start + 26):
        read_tensor_descriptor(patch(data, start + 31, u8(1)))
    with raises_rule("HT-LAY-55", offset=start):
        read_tensor_descriptor(patch(data, start, u32(0)))
    with raises_rule("HT-LAY-56", offset=start + 12):
        read_tensor_descriptor(patch(data, start + 12, u32(1)))
    assert read_tensor_descriptor(patch(data, start + 12, u32(1)), permissive=True).layout.paged_axis == 1
    with raises_rule("HT-LAY-52"):
        write_tensor_descriptor(paged().replace(shape=(8, 8)))


@covers("HT-LAY-61", "HT-LAY-62")
def test_block_paged_pool_and_index_width():
    """Writer-only rules: the reader accepts (and writes back) what only a writer must not emit."""
    pool = paged().replace(buffers=(handle(257), handle(8), handle(8)))
    assert encode(roundtrip(pool)) == encode(pool)
    with raises_rule("HT-LAY-61"):
        write_tensor_descriptor(pool, writer_rules=True)
    with raises_rule("HT-LAY-91"):
        write_tensor_descriptor(paged().replace(buffers=(handle(255), handle(8), handle(8))))
    big = paged(num_pages=(1 << 32) + 1).replace(shape=(8, 0, 4), buffers=(handle(0), handle(8), handle(8)))
    data = encode(big)  # page ids above 0xFFFFFFFF are never named by a u32 table: readable, written back
    assert encode(read_tensor_descriptor(data)) == data
    assert encode(read_tensor_descriptor(data, permissive=True), permissive=True) == data
    with raises_rule("HT-LAY-62"):
        write_tensor_descriptor(big, writer_rules=True)
    write_tensor_descriptor(big.replace(layout=big.layout.model_copy(update={"block_table_index_type": 1}),
                                        buffers=(handle(0), handle(16), handle(16))), writer_rules=True)


# Each sparse or paged component array whose length the descriptor fixes, as (layout, buffer
# index, its exact size): one byte fewer is refused (HT-LAY-87..91), more is read (HD-26
# revised) and written back, except by a writer applying its own rules (HT-LAY-92, HT-LAY-61).
COMPONENTS = [
    ("HT-LAY-87", "coo values", lambda: coo(), 0),
    ("HT-LAY-87", "coo indices", lambda: coo(), 1),
    ("HT-LAY-88", "csr values", lambda: read_tensor_descriptor(CSR_VECTOR), 0),
    ("HT-LAY-88", "csr col_indices", lambda: read_tensor_descriptor(CSR_VECTOR), 1),
    ("HT-LAY-88", "csr row_ptr", lambda: read_tensor_descriptor(CSR_VECTOR), 2),
    ("HT-LAY-89", "csc values", lambda: csc(), 0),
    ("HT-LAY-89", "csc row_indices", lambda: csc(), 1),
    ("HT-LAY-89", "csc col_ptr", lambda: csc(), 2),
    ("HT-LAY-90", "csf values", lambda: csf(nnz=1, sizes=(4, 16, 8, 16, 8, 16, 8)), 0),
    ("HT-LAY-90", "csf pos_0", lambda: csf(), 1),
    ("HT-LAY-90", "csf leaf crd", lambda: csf(nnz=1, sizes=(4, 16, 8, 16, 8, 16, 8)), 6),
    ("HT-LAY-91", "paged page_pool", lambda: paged(), 0),
    ("HT-LAY-91", "paged seq_ptr", lambda: paged(), 2),
]


@covers("HT-LAY-87", "HT-LAY-88", "HT-LAY-89", "HT-LAY-90", "HT-LAY-91", "HT-LAY-92")
@pytest.mark.parametrize("code, what, make, index", COMPONENTS, ids=[c[1] for c in COMPONENTS])
def test_component_arrays_are_lower_bounds(code, what, make, index):
    d = make()
    exact = d.buffers[index].byte_size
    write_tensor_descriptor(d, writer_rules=True)  # the base is sized exactly

    def sized(size):
        buffers = list(d.buffers)
        buffers[index] = handle(size)
        return d.replace(buffers=tuple(buffers))

    over = sized(exact + 8)
    data = encode(over)
    assert read_tensor_descriptor(data).buffers[index].byte_size == exact + 8
    assert encode(read_tensor_descriptor(data)) == data
    writer_code = "HT-LAY-61" if what == "paged page_pool" else "HT-LAY-92"
    with raises_rule(writer_code):
        write_tensor_descriptor(over, writer_rules=True)
    if exact:
        where = f"buffers[{index}].byte_size"
        with raises_rule(code, offset=field_offset(data, where), path=f"buffers -> {index} -> byte_size"):
            read_tensor_descriptor(patch(data, field_offset(data, where), u64(exact - 1)))


def test_quantized_block_paged():
    base = paged().replace(type_tag=0x10, buffers=(handle(64), handle(8), handle(8), handle(32)))
    roundtrip(base.replace(quantization=PerBlockAffine(axis=0, block_size=4, scale_buffer_index=3,
                                                                     symmetric=True)))
    with raises_rule("HT-LAY-63"):
        write_tensor_descriptor(base.replace(quantization=PerBlockAffine(
            axis=1, block_size=4, scale_buffer_index=3, symmetric=True)))
    with raises_rule("HT-LAY-64"):
        write_tensor_descriptor(base.replace(quantization=PerBlockAffine(
            axis=0, block_size=2, scale_buffer_index=3, symmetric=True)))
    with raises_rule("HT-LAY-65"):
        write_tensor_descriptor(base.replace(quantization=PerChannelAffine(
            axis=0, scale_buffer_index=3, symmetric=True)))
    roundtrip(base.replace(quantization=PerChannelAffine(axis=2, scale_buffer_index=3, symmetric=True),
                                      buffers=base.buffers[:3] + (handle(16),)))


# ---------------------------------------------------------------- composite head

HEAD = vector("composite_head_partition.bin")  # rule 44, op 45, reserved 46, member_count 48


@covers("HT-LAY-68")
def test_composite_head_fields():
    assert read_tensor_descriptor(HEAD).layout == CompositeHead(composition_rule=1, combine_op=0, member_count=2)


@pytest.mark.parametrize("code, offset, value", [
    ("HT-LAY-69", 44, u8(0x00)),
    ("HT-LAY-69", 44, u8(0x04)),
    ("HT-LAY-69", 44, u8(0xEF)),
    ("HT-LAY-69", 44, u8(0xFF)),
    ("HT-LAY-70", 44, u8(0xF0)),
    ("HT-LAY-71", 45, u8(0x01)),
    ("HT-LAY-73", 46, b"\x00\x01"),
    ("HT-LAY-74", 48, u32(0xFFFF_FFFF)),
])
def test_composite_head_refusals(code, offset, value):
    with raises_rule(code, offset=offset):
        read_tensor_descriptor(patch(HEAD, offset, value))


def test_private_composition_stays_refused_when_permissive():
    with raises_rule("HT-LAY-70"):
        read_tensor_descriptor(patch(HEAD, 44, u8(0xF3)), permissive=True)


def test_overlay_rules():
    overlay = patch(patch(HEAD, 44, u8(0x02)), 45, u8(0x02))
    assert read_tensor_descriptor(overlay).layout.combine_op == 2
    with raises_rule("HT-LAY-72", offset=45):
        read_tensor_descriptor(patch(overlay, 45, u8(0x03)))
    with raises_rule("HT-LAY-72"):
        read_tensor_descriptor(patch(overlay, 45, u8(0x00)))
    with raises_rule("HT-LAY-75", offset=48):
        read_tensor_descriptor(patch(overlay, 48, u32(0)))
    group = patch(HEAD, 44, u8(0x03))
    with raises_rule("HT-LAY-71"):
        read_tensor_descriptor(patch(group, 45, u8(0x02)))
    assert read_tensor_descriptor(patch(group, 48, u32(0))).layout.member_count == 0


def test_head_is_never_quantized():
    from hurray_decl.engine import encode_quantization
    from tests.hurray.tensor_support import with_length

    with raises_rule("HT-HDR-08"):  # the section is sliced first (Appendix A step 13), then the head rule
        read_tensor_descriptor(patch(HEAD, 10, u32(1)))
    from hurray_decl import PerTensorAffine

    payload = encode_quantization(PerTensorAffine(scale=1.0))
    with raises_rule("HT-LAY-76", offset=10):
        read_tensor_descriptor(with_length(patch(HEAD, 10, u32(1)) + u32(len(payload)) + payload))
    head = read_tensor_descriptor(HEAD)
    with raises_rule("HT-LAY-76"):
        write_tensor_descriptor(head.replace(quantization=PerTensorAffine(scale=1.0)))


# ---------------------------------------------------------------- Hilbert


def hilbert(order=2, hilbert_rank=2, shape=(4, 4), size=64):
    return TensorDescriptor(type_tag=0x03, shape=shape, layout=Hilbert(hilbert_order=order, hilbert_rank=hilbert_rank),
                            buffers=(handle(size),))


@covers("HT-LAY-77")
def test_hilbert_fields():
    data = encode(hilbert())
    assert data[layout_start(2):layout_start(2) + 8] == u32(2) + u32(2)
    roundtrip(hilbert())
    roundtrip(hilbert(order=1, hilbert_rank=3, shape=(2, 2, 2), size=32))


def test_hilbert_refusals():
    data = encode(hilbert())
    start = layout_start(2)
    with raises_rule("HT-LAY-78", offset=start):
        read_tensor_descriptor(patch(data, start, u32(0)))
    with raises_rule("HT-LAY-80", offset=start + 4):
        read_tensor_descriptor(patch(data, start + 4, u32(1)))
    with raises_rule("HT-LAY-79"):
        read_tensor_descriptor(patch(data, start + 4, u32(3)))
    with raises_rule("HT-LAY-81"):
        write_tensor_descriptor(hilbert(shape=(4, 5)))
    with raises_rule("HT-LAY-81"):
        write_tensor_descriptor(hilbert(order=64, shape=(4, 4)))
    with raises_rule("HT-LAY-82"):
        write_tensor_descriptor(hilbert(size=60))


# ---------------------------------------------------------------- private layouts


def private(layout_id=0x1234, data=b"\x01\x02\x03"):
    return TensorDescriptor(type_tag=0x03, shape=(2,), layout_tag=0xF5,
                            layout=PrivateLayout(extension_layout_id=layout_id, extension_data=data),
                            buffers=(handle(8),))


@covers("HT-LAY-84")
def test_private_layout_fields():
    PRIVATE_LAYOUTS.register(0x1234, "test layout")
    try:
        d = roundtrip(private())
        start = layout_start(1)
        assert encode(d)[start:start + 15] == u64(0x1234) + u32(3) + b"\x01\x02\x03"
    finally:
        PRIVATE_LAYOUTS.unregister(0x1234)


def test_unregistered_private_layouts():
    data = encode(private(), permissive=True)
    with raises_rule("HT-LAY-85", offset=layout_start(1)):
        read_tensor_descriptor(data)
    d = read_tensor_descriptor(data, permissive=True)
    assert d.layout.extension_data == b"\x01\x02\x03"
    assert encode(d, permissive=True) == data
    with raises_rule("HT-LAY-86"):
        write_tensor_descriptor(private())
    with raises_rule("HT-HDR-08"):  # extension_data_length beyond descriptor_length
        read_tensor_descriptor(patch(data, layout_start(1) + 8, u32(200)), permissive=True)


def test_layout_models_refuse_foreign_values():
    with pytest.raises(HurrayDeclError):
        RowMajor(extra=1)
    with pytest.raises(HurrayDeclError):
        Morton(morton_bits=(-1,))
    with raises_rule("HT-HDR-03"):
        write_tensor_descriptor(dense(layout_tag=0x02))


def test_bytes_past_a_component_array_are_never_read():
    """validate_buffers reads only the stated sizes: 0xFF after them breaks no invariant (HD-26)."""
    from hurray_decl.tensor import validate_buffers

    d = coo(nnz=2, is_sorted=1).replace(buffers=(handle(8), handle(40)))
    coords = u64(0) + u64(1) + u64(2) + u64(3)
    validate_buffers(read_tensor_descriptor(encode(d)), [bytes(8), coords + b"\xFF" * 8])
    with raises_rule("HT-LAY-22"):  # the same garbage inside the stated size is refused
        validate_buffers(read_tensor_descriptor(encode(d)), [bytes(8), b"\xFF" * 8 + coords])
    p = paged(num_seqs=1).replace(buffers=(handle(256), handle(8), handle(12)))
    validate_buffers(read_tensor_descriptor(encode(p)), [bytes(256), u32(0) + u32(1), u32(0) + u32(2) + u32(7)])
