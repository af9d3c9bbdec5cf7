"""The descriptor declaration's refusals, exactly: the buffer index in error paths, offsets at the
field (or the input's end), descriptor_length against the input and the sections, the payload's
errors at their byte in the descriptor, opaque layouts, and the fast paths agreeing with the
traced one."""

from __future__ import annotations

import pytest

from hurray_decl.declare.schema import compiled, field_offsets
from hurray_decl.declare.trace import positions_of
from hurray_decl.errors import HurrayDeclError, RuleViolation
from hurray_decl.hurray.tensor import (
    BufferHandle,
    ExtensionType,
    OpaqueLayout,
    Shard,
    TensorDescriptor,
    descriptor as declaration,
    read_tensor_descriptor,
    write_tensor_descriptor,
)
from hurray_decl.hurray.tensor.fields import field_span, with_field, with_length
from hurray_decl.hurray.tensor.header import HEADER, HEADER_LENGTH, MAGIC, PREAMBLE_LENGTH
from hurray_decl.hurray.tensor.sections import Statistics
from tests.hurray.tensor_support import dense, vector

QUANTIZED = "quant_per_block_int4_128x128.bin"  # two buffers, a per-block payload
DENSE = "row_major_f32_3x4.bin"  # one buffer, nothing after it


def refusal(data: bytes, **options: bool) -> HurrayDeclError:
    with pytest.raises(HurrayDeclError) as info:
        read_tensor_descriptor(data, **options)
    return info.value


@pytest.mark.parametrize("index", [0, 1])
@pytest.mark.parametrize(("field", "value", "code"), [("device_tag", 0xFF, "HT-BUFT-14"),
                                                      ("alignment", 3, "HT-BUFT-12")])
def test_a_handle_error_names_its_buffer_and_its_byte(index: int, field: str, value: int, code: str) -> None:
    data = vector(QUANTIZED)
    err = refusal(with_field(data, f"buffers.{index}.{field}", value))
    assert (err.code, err.path, err.offset) == (code, f"descriptor -> buffers -> {index} -> {field}",
                                                field_span(data, f"buffers.{index}.{field}")[0])
    assert err.actual == value


@pytest.mark.parametrize("index", [0, 1])
def test_an_input_ending_inside_a_handle_names_that_handle(index: int) -> None:
    data = vector(QUANTIZED)
    start, size = field_span(data, f"buffers.{index}")
    cut = start + size // 2
    err = refusal(data[:cut])
    assert (err.code, err.path, err.offset) == ("HT-HDR-08", f"descriptor -> buffers -> {index}", cut)
    assert err.actual == f"{cut} bytes"
    assert err.expected == "more bytes inside descriptor_length"
    assert err.detail == "a section ends past descriptor_length"


def test_an_input_one_byte_shorter_than_descriptor_length_is_ht_hdr_08_at_its_end() -> None:
    """Every section is whole; descriptor_length claims one byte more than the input holds."""
    data = with_field(vector(DENSE), "descriptor_length", len(vector(DENSE)) + 1)
    err = refusal(data)
    assert (err.code, err.path, err.offset) == ("HT-HDR-08", "descriptor", len(data))
    assert (err.actual, err.expected) == (f"{len(data)} bytes", f"{len(data) + 1} bytes")


def test_an_input_cut_inside_the_payload_is_ht_hdr_08_at_its_end() -> None:
    data = vector(QUANTIZED)
    _, length = field_span(data, "quantization")
    err = refusal(data[:-1])
    assert (err.code, err.path, err.offset) == ("HT-HDR-08", "descriptor -> quantization", len(data) - 1)
    assert (err.actual, err.expected) == (f"{length - 1} bytes left", f"{length} bytes")
    assert err.detail == "a section ends past descriptor_length"


def test_bytes_after_the_sections_are_ht_hdr_09_in_minor_0_and_kept_in_a_newer_minor() -> None:
    data = vector(DENSE)
    longer = with_field(data + b"\x07", "descriptor_length", len(data) + 1)
    err = refusal(longer)
    assert (err.code, err.path, err.offset) == ("HT-HDR-09", "descriptor -> descriptor_length",
                                                field_span(data, "descriptor_length")[0])
    assert (err.actual, err.expected) == (len(data) + 1, len(data))
    newer = read_tensor_descriptor(with_field(longer, "version_minor", 1))
    assert newer.trailing == b"\x07" and newer.descriptor_length == len(data) + 1
    assert read_tensor_descriptor(data).trailing == b""


def test_bytes_past_descriptor_length_are_not_read() -> None:
    data = vector(DENSE)
    assert read_tensor_descriptor(data + b"\xFF" * 5) == read_tensor_descriptor(data)


@pytest.mark.parametrize(("field", "value", "code"), [("quantization.scale_type_tag", 0x05, "HQ-PB-08"),
                                                      ("quantization.reserved", b"\x00\x01\x00", None)])
def test_a_payload_error_is_at_its_byte_in_the_descriptor(field: str, value: int | bytes, code: str | None) -> None:
    data = vector(QUANTIZED)
    err = refusal(with_field(data, field, value))
    assert err.offset == field_span(data, field)[0]
    assert err.path.startswith("descriptor -> quantization -> ")
    assert code is None or err.code == code


def test_the_writer_fills_descriptor_length_and_refuses_a_wrong_one() -> None:
    d = dense()
    raw = write_tensor_descriptor(d)
    at, size = field_span(raw, "descriptor_length")
    assert int.from_bytes(raw[at:at + size], "little") == len(raw) == len(vector(DENSE))
    assert raw == vector(DENSE)
    with pytest.raises(HurrayDeclError) as info:
        write_tensor_descriptor(d.model_copy(update={"descriptor_length": len(raw) + 8}))
    assert (info.value.code, info.value.path) == ("HT-HDR-09", "descriptor -> descriptor_length")
    assert (info.value.actual, info.value.expected) == (len(raw) + 8, len(raw))
    assert info.value.detail == "descriptor_length disagrees with the sections it holds"


def test_an_unrecognised_layout_keeps_its_bytes_only_when_permissive() -> None:
    data = vector(DENSE)
    rest, _ = field_span(data, "buffer_count")  # row-major has no layout fields: the payload starts here
    opaque = with_field(data, "layout_tag", 0xEE)
    strict = refusal(opaque)
    assert strict.path == "descriptor -> layout_tag" and strict.offset == field_span(data, "layout_tag")[0]
    d = read_tensor_descriptor(opaque, permissive=True)
    assert isinstance(d.layout, OpaqueLayout) and d.layout.payload == data[rest:] and d.buffers == ()
    assert write_tensor_descriptor(d, permissive=True) == opaque
    with pytest.raises(HurrayDeclError) as info:
        write_tensor_descriptor(d)
    assert (info.value.code, info.value.path, info.value.offset) == (strict.code, strict.path, strict.offset)


def test_the_fast_parses_agree_with_the_traced_one() -> None:
    for name in (DENSE, QUANTIZED, "sharded_f32_8x4.bin", "csr_f32_3x3.bin"):
        data = vector(name)
        fast = declaration.parse_fast(data + b"\x00", False)
        _, traced, error = declaration.parse_traced(data, False)
        assert error is None and fast is not None and fast == traced
        assert declaration.preamble_fast(data[:PREAMBLE_LENGTH], False) == len(data)
    assert declaration.parse_fast(vector(QUANTIZED)[:-1], False) is None
    assert declaration.preamble_fast(b"HRRX" + vector(DENSE)[len(MAGIC):PREAMBLE_LENGTH], False) is None
    _, none, error = declaration.parse_traced(vector(QUANTIZED)[:-1], False)
    assert none is None and error is not None and error.offset == len(vector(QUANTIZED)) - 1


def test_a_quantized_composite_head_is_refused_at_its_flags() -> None:
    head = vector("composite_head_partition.bin")
    payload = bytes.fromhex("0201000000000000010000000200000003000000")
    quantized = with_length(with_field(head + len(payload).to_bytes(4, "little") + payload, "flags", 0x1))
    err = refusal(quantized)
    assert (err.code, err.path, err.offset) == ("HT-LAY-76", "descriptor -> flags", field_span(head, "flags")[0])
    assert (err.actual, err.expected) == ("0x00000001", "HAS_QUANTIZATION clear")


def test_the_declaration_compiles_and_its_checkpoints_take_no_bytes() -> None:
    """The fast path is Construct's compiled parser of the same declaration (not a fallback), and
    the zero-width checkpoints leave every fixed field where the header declares it."""
    assert compiled(declaration.DESCRIPTOR) is not None
    assert {name: span for name, span in field_offsets(declaration.DESCRIPTOR.subcon).items() if name != "shape"} \
        == field_offsets(HEADER)
    assert field_offsets(declaration.DESCRIPTOR.subcon)["shape"][0] == HEADER_LENGTH



def test_the_optional_sections_are_read_back() -> None:
    sharded = read_tensor_descriptor(vector("sharded_f32_8x4.bin"))  # column offset 4 of an [8, 8] parent
    assert sharded.shard is not None and sharded.shard.parent_shape == (8, 8) and sharded.shard.shard_offset == (0, 4)
    assert sharded.statistics is None and sharded.quantization is None
    stats = Statistics(computed_mask=0, nnz=7, value_min=5.0, value_max=-5.0)
    shard = Shard(parent_shape=(6, 4), shard_offset=(3, 0))
    for d in (dense(statistics=stats), dense(shard=shard), dense(shard=shard, statistics=stats)):
        back = read_tensor_descriptor(write_tensor_descriptor(d))
        assert (back.shard, back.statistics) == (d.shard, d.statistics)
        assert declaration.parse_fast(write_tensor_descriptor(d), False) == back


def test_an_extension_type_is_read_back() -> None:
    d = TensorDescriptor(type_tag=0xF0, shape=(4,), buffers=(BufferHandle(byte_size=4),),
                         extension_type=ExtensionType(bit_width=8, is_signed=1))
    raw = write_tensor_descriptor(d)
    back = read_tensor_descriptor(raw)
    assert back.extension_type == d.extension_type and declaration.parse_fast(raw, False) == back


@pytest.mark.parametrize(("path", "field"), [
    ("descriptor -> buffers -> 1 -> reserved", "buffers.1.reserved"),  # a field the parse recorded
    ("descriptor -> buffers -> 1 -> reserved -> [2]", "buffers.1.reserved"),  # inside it: four of five parts
    ("descriptor -> quantization -> block_size -> x -> y", "quantization.block_size"),  # three of five parts
    ("descriptor -> shard -> shard_offset", None),  # no shard section here: the descriptor itself
])
def test_an_error_without_an_offset_gets_that_of_its_longest_recorded_prefix(path: str, field: str | None) -> None:
    data = vector(QUANTIZED)
    root, _, _ = declaration.parse_traced(data, False)
    err = declaration.locate(RuleViolation("HT-BUFT-12", "refused", path=path), positions_of(root))
    assert (err.path, err.offset) == (path, field_span(data, field)[0] if field else 0)
    placed = RuleViolation("HT-BUFT-12", "refused", path=path, offset=3)
    assert declaration.locate(placed, positions_of(root)).offset == 3  # an offset it has is kept


def test_a_payload_the_writer_refuses_names_the_quantization_field_and_its_offset() -> None:
    """A reserved scheme_tag read permissively is refused when written strictly, at its field's path."""
    data = with_field(vector(QUANTIZED), "quantization.scheme_tag", 0x7F)
    d = read_tensor_descriptor(data, permissive=True)
    with pytest.raises(HurrayDeclError) as info:
        write_tensor_descriptor(d)
    assert (info.value.code, info.value.path) == ("HQ-HDR-09", "descriptor -> quantization -> scheme_tag")
    # at the byte of the descriptor being written, which is where the reader found it
    assert info.value.offset == field_span(data, "quantization.scheme_tag")[0] > 0
