"""Layout-specific fields and their tensor and buffer constraints, layout by layout (HT-LAY)."""

from __future__ import annotations

import pytest

from hurray_decl import PerBlockAffine, PerChannelAffine
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray.tensor import (
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
from hurray_decl.hurray.tensor.layouts import PRIVATE_LAYOUTS
from tests.helpers import covers, raises_rule
from tests.hurray.tensor_support import (
    at,
    dense,
    encode,
    end,
    field_bytes,
    fields,
    handle,
    patch_field,
    roundtrip,
    u32,
    u64,
    vector,
)


def test_one_row_per_assigned_layout_tag():
    assert sorted(LAYOUTS.keys()) == [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x40]


@covers("HT-LAY-01", "HT-LAY-02")
def test_row_and_column_major_have_no_fields():
    for data in (encode(dense()), encode(dense(layout=ColumnMajor()))):
        assert not [name for name in fields(data) if name.startswith("layout.")]
        assert at(data, "buffer_count") == end(data, "byte_offset")  # nothing between them
        assert end(data, "buffers") == len(data)
    roundtrip(dense(layout=ColumnMajor()))


# ---------------------------------------------------------------- strided

STRIDED = vector("strided_f32_3x4.bin")


@covers("HT-LAY-03", "HT-LAY-04")
def test_strided_fields_and_signs():
    d = read_tensor_descriptor(STRIDED)
    assert d.layout == Strided(strides=(4, 1)) and field_bytes(STRIDED, "layout.strides.0") == u64(4)
    roundtrip(dense(layout=Strided(strides=(-4, 1)), byte_offset=32))  # rows reversed
    roundtrip(dense(layout=Strided(strides=(0, 1)), sizes=(16,)))  # rows broadcast


def test_strided_addresses_stay_inside_buffer_0():
    with raises_rule("HT-LAY-05"):
        read_tensor_descriptor(patch_field(STRIDED, "buffers.0.byte_size", 44))
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
    assert field_bytes(data, "layout") == u64(2) + u64(2) + b"\x01\x01\x00\x00"
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


@pytest.mark.parametrize("code, field, value", [
    ("HT-LAY-08", "layout.tile_shape.1", 0),
    ("HT-LAY-09", "layout.outer_layout", 4),
    ("HT-LAY-09", "layout.outer_layout", 0),
    ("HT-LAY-10", "layout.inner_layout", 5),
    ("HT-LAY-11", "layout.reserved", b"\x00\x01"),
])
def test_tiled_refusals(code, field, value):
    data = encode(tiled(Tiled(tile_shape=(2, 2))))
    with raises_rule(code, offset=at(data, field)):
        read_tensor_descriptor(patch_field(data, field, value))


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
    deepest = "layout" + ".nested" * 7 + ".inner_layout"  # inner_layout of the 8th payload
    with raises_rule("HT-LAY-12", offset=at(data, deepest)):
        read_tensor_descriptor(patch_field(data, deepest, 4))


def test_tiled_buffer_holds_whole_tiles():
    with raises_rule("HT-LAY-13"):  # ceil(3/2) x ceil(4/2) tiles of 4 float32 = 64 bytes
        write_tensor_descriptor(tiled(Tiled(tile_shape=(2, 2)), sizes=(63,)))


# ---------------------------------------------------------------- Morton

MORTON = vector("morton_f32_4x4.bin")


@covers("HT-LAY-16")
def test_morton_fields():
    assert read_tensor_descriptor(MORTON).layout == Morton(morton_bits=(2, 2))


def test_morton_refusals():
    with raises_rule("HT-LAY-17", offset=at(MORTON, "layout.morton_bits.1")):
        read_tensor_descriptor(patch_field(MORTON, "layout.morton_bits.1", 0))
    with raises_rule("HT-LAY-18"):
        read_tensor_descriptor(patch_field(MORTON, "layout.morton_bits.0", 1))
    with raises_rule("HT-LAY-19"):
        read_tensor_descriptor(patch_field(MORTON, "buffers.0.byte_size", 60))
    roundtrip(TensorDescriptor(type_tag=0x03, shape=(3, 2), layout=Morton(morton_bits=(2, 1)), buffers=(handle(32),)))


# ---------------------------------------------------------------- sparse

CSR_VECTOR = vector("csr_f32_3x3.bin")


def coo(nnz=2, rank=2, **kw):
    return TensorDescriptor(type_tag=0x03, shape=(4,) * rank, layout=COO(nnz=nnz, **kw),
                            buffers=(handle(4 * nnz), handle(8 * nnz * rank)))


@covers("HT-LAY-20")
def test_coo_fields():
    data = encode(coo(is_sorted=1))
    assert field_bytes(data, "layout") == u64(2) + b"\x01" + bytes(7)
    roundtrip(coo(is_sorted=1))
    with raises_rule("HT-LAY-20", offset=at(data, "layout.is_sorted")):
        read_tensor_descriptor(patch_field(data, "layout.is_sorted", 2))
    with raises_rule("HT-LAY-21", offset=at(data, "layout.reserved")):  # its last byte set
        read_tensor_descriptor(patch_field(data, "layout.reserved", bytes(6) + b"\x01"))


@covers("HT-LAY-26")
def test_csr_fields_and_sizes():
    d = read_tensor_descriptor(CSR_VECTOR)
    assert d.layout == CSR(nnz=2)
    with raises_rule("HT-LAY-27", offset=at(CSR_VECTOR, "layout.reserved")):  # its fourth byte set
        read_tensor_descriptor(patch_field(CSR_VECTOR, "layout.reserved", bytes(3) + b"\x01" + bytes(4)))
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
    with raises_rule("HT-LAY-35", offset=at(data, "layout.reserved")):  # its last byte set
        read_tensor_descriptor(patch_field(data, "layout.reserved", bytes(7) + b"\x01"))
    with raises_rule("HT-LAY-33"):
        write_tensor_descriptor(csc(shape=(15,)))


def csf(mode_order=(0, 1, 2), nnz=0, sizes=(0, 16, 0, 8, 0, 8, 0), shape=(2, 3, 4)):
    return TensorDescriptor(type_tag=0x03, shape=shape, layout=CSF(nnz=nnz, mode_order=mode_order),
                            buffers=tuple(handle(s) for s in sizes))


@covers("HT-LAY-42", "HT-LAY-45")
def test_csf_fields_and_mode_order():
    data = encode(csf())
    assert field_bytes(data, "layout") == u64(0) + u32(0) + u32(1) + u32(2) + bytes(8)
    roundtrip(csf(mode_order=(2, 0, 1)))
    with raises_rule("HT-LAY-43", offset=at(data, "layout.reserved")):  # its last byte set
        read_tensor_descriptor(patch_field(data, "layout.reserved", bytes(7) + b"\x01"))
    with raises_rule("HT-LAY-44", offset=at(data, "layout.mode_order")):
        read_tensor_descriptor(patch_field(data, "layout.mode_order.0", 1))  # 1, 1, 2
    with raises_rule("HT-LAY-44"):
        read_tensor_descriptor(patch_field(data, "layout.mode_order.2", 3))  # out of range
    d = read_tensor_descriptor(patch_field(data, "layout.mode_order.0", 1), permissive=True)
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
    assert field_bytes(data, "layout") == (u32(4) + u64(2) + u32(0) + u32(1) + b"\x01" + u32(7) + b"\x01" + bytes(6))
    roundtrip(paged(kv_role=1, layer_index=7, block_table_index_type=1))
    with raises_rule("HT-LAY-53", offset=at(data, "layout.kv_role")):
        read_tensor_descriptor(patch_field(data, "layout.kv_role", 3))
    with raises_rule("HT-LAY-53", offset=at(data, "layout.block_table_index_type")):
        read_tensor_descriptor(patch_field(data, "layout.block_table_index_type", 2))
    with raises_rule("HT-LAY-54", offset=at(data, "layout.reserved")):  # its last byte set
        read_tensor_descriptor(patch_field(data, "layout.reserved", bytes(5) + b"\x01"))
    with raises_rule("HT-LAY-55", offset=at(data, "layout.page_size")):
        read_tensor_descriptor(patch_field(data, "layout.page_size", 0))
    with raises_rule("HT-LAY-56", offset=at(data, "layout.paged_axis")):
        read_tensor_descriptor(patch_field(data, "layout.paged_axis", 1))
    assert read_tensor_descriptor(patch_field(data, "layout.paged_axis", 1), permissive=True).layout.paged_axis == 1
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
        where = f"buffers.{index}.byte_size"
        with raises_rule(code, offset=at(data, where), path=f"buffers -> {index} -> byte_size"):
            read_tensor_descriptor(patch_field(data, where, exact - 1))


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

HEAD = vector("composite_head_partition.bin")


@covers("HT-LAY-68")
def test_composite_head_fields():
    assert read_tensor_descriptor(HEAD).layout == CompositeHead(composition_rule=1, combine_op=0, member_count=2)


@pytest.mark.parametrize("code, field, value", [
    ("HT-LAY-69", "layout.composition_rule", 0x00),
    ("HT-LAY-69", "layout.composition_rule", 0x04),
    ("HT-LAY-69", "layout.composition_rule", 0xEF),
    ("HT-LAY-69", "layout.composition_rule", 0xFF),
    ("HT-LAY-70", "layout.composition_rule", 0xF0),
    ("HT-LAY-71", "layout.combine_op", 0x01),
    ("HT-LAY-73", "layout.reserved", b"\x00\x01"),
    ("HT-LAY-74", "layout.member_count", 0xFFFF_FFFF),
])
def test_composite_head_refusals(code, field, value):
    with raises_rule(code, offset=at(HEAD, field)):
        read_tensor_descriptor(patch_field(HEAD, field, value))


def test_private_composition_stays_refused_when_permissive():
    with raises_rule("HT-LAY-70"):
        read_tensor_descriptor(patch_field(HEAD, "layout.composition_rule", 0xF3), permissive=True)


def test_overlay_rules():
    overlay = patch_field(patch_field(HEAD, "layout.composition_rule", 0x02), "layout.combine_op", 0x02)
    assert read_tensor_descriptor(overlay).layout.combine_op == 2
    with raises_rule("HT-LAY-72", offset=at(HEAD, "layout.combine_op")):
        read_tensor_descriptor(patch_field(overlay, "layout.combine_op", 0x03))
    with raises_rule("HT-LAY-72"):
        read_tensor_descriptor(patch_field(overlay, "layout.combine_op", 0x00))
    with raises_rule("HT-LAY-75", offset=at(HEAD, "layout.member_count")):
        read_tensor_descriptor(patch_field(overlay, "layout.member_count", 0))
    group = patch_field(HEAD, "layout.composition_rule", 0x03)
    with raises_rule("HT-LAY-71"):
        read_tensor_descriptor(patch_field(group, "layout.combine_op", 0x02))
    assert read_tensor_descriptor(patch_field(group, "layout.member_count", 0)).layout.member_count == 0


def test_head_is_never_quantized():
    from hurray_decl.hurray.quantization import encode_quantization
    from tests.hurray.tensor_support import with_length

    with raises_rule("HT-HDR-08"):  # the section is sliced first (Appendix A step 13), then the head rule
        read_tensor_descriptor(patch_field(HEAD, "flags", 1))
    from hurray_decl import PerTensorAffine

    payload = encode_quantization(PerTensorAffine(scale=1.0))
    with raises_rule("HT-LAY-76", offset=at(HEAD, "flags")):
        read_tensor_descriptor(with_length(patch_field(HEAD, "flags", 1) + u32(len(payload)) + payload))
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
    assert field_bytes(data, "layout") == u32(2) + u32(2)
    roundtrip(hilbert())
    roundtrip(hilbert(order=1, hilbert_rank=3, shape=(2, 2, 2), size=32))


def test_hilbert_refusals():
    data = encode(hilbert())
    with raises_rule("HT-LAY-78", offset=at(data, "layout.hilbert_order")):
        read_tensor_descriptor(patch_field(data, "layout.hilbert_order", 0))
    with raises_rule("HT-LAY-80", offset=at(data, "layout.hilbert_rank")):
        read_tensor_descriptor(patch_field(data, "layout.hilbert_rank", 1))
    with raises_rule("HT-LAY-79"):
        read_tensor_descriptor(patch_field(data, "layout.hilbert_rank", 3))
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
        assert field_bytes(encode(d), "layout") == u64(0x1234) + u32(3) + b"\x01\x02\x03"
    finally:
        PRIVATE_LAYOUTS.unregister(0x1234)


def test_unregistered_private_layouts():
    data = encode(private(), permissive=True)
    with raises_rule("HT-LAY-85", offset=at(data, "layout.extension_layout_id")):
        read_tensor_descriptor(data)
    d = read_tensor_descriptor(data, permissive=True)
    assert d.layout.extension_data == b"\x01\x02\x03"
    assert encode(d, permissive=True) == data
    with raises_rule("HT-LAY-86"):
        write_tensor_descriptor(private())
    with raises_rule("HT-HDR-08"):  # extension_data_length beyond descriptor_length
        read_tensor_descriptor(patch_field(data, "layout.extension_data_length", 200), permissive=True)


def test_layout_models_refuse_foreign_values():
    with pytest.raises(HurrayDeclError):
        RowMajor(extra=1)
    with pytest.raises(HurrayDeclError):
        Morton(morton_bits=(-1,))
    with raises_rule("HT-HDR-03"):
        write_tensor_descriptor(dense(layout_tag=0x02))


def test_bytes_past_a_component_array_are_never_read():
    """validate_buffers reads only the stated sizes: 0xFF after them breaks no invariant (HD-26)."""
    from hurray_decl.hurray.tensor import validate_buffers

    d = coo(nnz=2, is_sorted=1).replace(buffers=(handle(8), handle(40)))
    coords = u64(0) + u64(1) + u64(2) + u64(3)
    validate_buffers(read_tensor_descriptor(encode(d)), [bytes(8), coords + b"\xFF" * 8])
    with raises_rule("HT-LAY-22"):  # the same garbage inside the stated size is refused
        validate_buffers(read_tensor_descriptor(encode(d)), [bytes(8), b"\xFF" * 8 + coords])
    p = paged(num_seqs=1).replace(buffers=(handle(256), handle(8), handle(12)))
    validate_buffers(read_tensor_descriptor(encode(p)), [bytes(256), u32(0) + u32(1), u32(0) + u32(2) + u32(7)])
