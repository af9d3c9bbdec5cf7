"""Promises kept exactly: one traced parse for a descriptor and its quantization payload, coded
errors from the JSON and bytes entry points, no warning from a documented result, messages in
plain words, and the writer keeping what an opaque descriptor carries."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from hurray_decl.declare import trace as trace_module
from hurray_decl.errors import ARGUMENT, HurrayDeclError
from hurray_decl.hurray import dump as dump_module, quantization
from hurray_decl.hurray.dump import tensor_dump
from hurray_decl.hurray.schemes.mxfp import MXFP
from hurray_decl.hurray.tensor import (
    BufferHandle,
    TensorDescriptor,
    descriptor as descriptor_module,
    fields as fields_module,
    read_tensor_descriptor,
    reader as reader_module,
    write_tensor_descriptor,
)
from hurray_decl.hurray.tensor.reader import field_positions

# ------------------------------------------------------------------ one trace


def _mxfp(padding: bytes = b"\x00\x07\x00", **fields) -> bytes:
    q = MXFP(axis=1, block_size=16, scale_buffer_index=1, padding=padding)
    d = TensorDescriptor(type_tag=0x10, shape=(4, 32), quantization=q,
                         buffers=(BufferHandle(byte_size=128), BufferHandle(byte_size=8)))
    return write_tensor_descriptor(d)


@pytest.fixture
def parses(monkeypatch):
    """Counts traced parses (the one entry point, parse_tree, as the descriptor and the bare
    payload reach it), every parse of a payload's fields inside them, and untraced decodes of a
    payload; a separate trace of a scheme's declaration fails the test."""
    counts = {"traced": 0, "payload parts": 0, "untraced": 0}
    tree = trace_module.parse_tree
    inside = trace_module.parse_inside

    def counted_tree(*args, **kwargs):
        counts["traced"] += 1
        return tree(*args, **kwargs)

    def counted_inside(*args, **kwargs):
        counts["payload parts"] += 1
        return inside(*args, **kwargs)

    decode = quantization.decode_quantization

    def untraced(*args, **kwargs):
        counts["untraced"] += 1
        return decode(*args, **kwargs)

    def forbidden(*args, **kwargs):
        raise AssertionError("a declaration was traced outside the descriptor's traced parse")

    monkeypatch.setattr(trace_module, "parse_tree", counted_tree)
    monkeypatch.setattr(descriptor_module, "parse_tree", counted_tree)
    monkeypatch.setattr(dump_module, "parse_tree", counted_tree)
    monkeypatch.setattr(reader_module, "parse_tree", counted_tree)  # a refusal's positions-only trace
    monkeypatch.setattr(quantization, "parse_inside", counted_inside)
    monkeypatch.setattr(quantization, "decode_quantization", untraced)
    monkeypatch.setattr(descriptor_module, "decode_quantization", untraced)  # the compiled parse's own name for it
    monkeypatch.setattr(trace_module, "trace", forbidden)
    fields_module._spans.cache_clear()
    yield counts
    fields_module._spans.cache_clear()


def test_dump_field_spans_and_positions_each_come_from_one_traced_parse(parses):
    data = _mxfp()
    rows = tensor_dump(data).rows
    assert parses == {"traced": 1, "payload parts": 2, "untraced": 0}  # the fields, the padding
    spans = fields_module.field_spans(data)
    assert parses == {"traced": 2, "payload parts": 4, "untraced": 0}
    positions = field_positions(data)
    assert parses == {"traced": 3, "payload parts": 6, "untraced": 0}
    by_field = {r.field: r.offset for r in rows}
    for name in ("scheme_tag", "flags", "axis", "block_size", "scale_buffer_index", "padding"):
        offset = spans[f"quantization.{name}"][0]
        assert by_field[f"quantization.{name}"] == offset == positions[f"descriptor -> quantization -> {name}"]
    assert data[spans["quantization.padding"][0]:][:3] == b"\x00\x07\x00"


@pytest.mark.rules("HQ-MX-03")
def test_a_payload_rule_error_is_located_by_the_same_parse(parses):
    good = _mxfp()
    offset, width = fields_module.field_span(good, "quantization.block_size")
    parses["traced"] = parses["payload parts"] = 0
    bad = good[:offset] + (24).to_bytes(width, "little") + good[offset + width:]  # not a power of two
    dump = tensor_dump(bad)
    assert parses["traced"] == 1 and parses["untraced"] == 0
    assert dump.error is not None and dump.error.offset == offset
    assert dump.error.path == "descriptor -> quantization -> block_size"
    failing = [r for r in dump.rows if r.field == "quantization.block_size"]
    assert failing and failing[0].offset == offset


@pytest.mark.rules("HQ-BUF-01")
def test_a_context_error_inside_the_payload_is_located_by_the_trace(parses):
    good = _mxfp()
    offset, width = fields_module.field_span(good, "quantization.scale_buffer_index")
    parses["traced"] = parses["untraced"] = 0
    bad = good[:offset] + (5).to_bytes(width, "little") + good[offset + width:]
    with pytest.raises(HurrayDeclError) as info:
        read_tensor_descriptor(bad)
    # The compiled parse refused it, the untraced parse in rule order named the rule without a
    # position (a context rule), and one traced parse (positions only) says where.
    assert parses["traced"] == 1
    assert parses["untraced"] == 2
    assert info.value.offset == offset, info.value


def test_a_bare_payload_dump_is_one_traced_parse(parses):
    data = _mxfp()
    start = fields_module.field_span(data, "quantization.scheme_tag")[0]
    parses["traced"] = parses["payload parts"] = 0
    rows = dump_module.quantization_dump(data[start:start + 16 + 3]).rows
    assert parses == {"traced": 1, "payload parts": 2, "untraced": 0}
    assert [r.field for r in rows] == ["scheme_tag", "scheme_version", "flags", "axis", "block_size",
                                       "scale_buffer_index", "padding"]


# ------------------------------------------------------------------ JSON and bytes entry points


@pytest.mark.rules("HQ-HDR-02")
def test_deep_json_is_refused_with_a_code_at_a_fixed_depth():
    from hurray_decl.declare import json_text
    from hurray_decl.hurray.quantization import load_quantization

    with pytest.raises(HurrayDeclError) as info:
        load_quantization("[" * 100000 + "]" * 100000)
    assert info.value.code == "HQ-HDR-02" and "nests too deeply" in str(info.value)
    limit = json_text.MAX_DEPTH
    with pytest.raises(HurrayDeclError, match="nests too deeply"):
        load_quantization("[" * (limit + 1) + "]" * (limit + 1))
    with pytest.raises(HurrayDeclError, match="integer scheme_tag"):  # deep but within the bound: read
        load_quantization("[" * limit + "]" * limit)
    # brackets inside strings do not count; escaped quotes do not end a string
    assert json_text.depth('{"a": "[[[[\\"[[[", "b": [[1], {"c": []}]}') == 4
    assert json_text.depth(b"[" * 10 + b"]" * 10 + b"[[]]") == 10


def test_deep_json_counts_across_chunks(monkeypatch):
    from hurray_decl.declare import json_text

    monkeypatch.setattr(json_text, "CHUNK", 7)
    text = "[" * 30 + '"]]]"' + "]" * 30 + "[" * 12 + "]" * 12
    assert json_text.depth(text) == 30


def test_non_bytes_payloads_and_descriptors_are_argument_errors():
    from hurray_decl.hurray.quantization import decode_quantization

    for value in ("abc", None, 5, [1, 2]):
        for read in (decode_quantization, read_tensor_descriptor):
            with pytest.raises(HurrayDeclError) as info:
                read(value)
            assert info.value.code == ARGUMENT, info.value
    from hurray_decl.hurray.quantization import encode_quantization
    from hurray_decl.hurray.schemes.per_tensor_affine import PerTensorAffine

    payload = encode_quantization(PerTensorAffine(scale=0.5, zero_point=3))
    assert decode_quantization(memoryview(payload)) == decode_quantization(bytearray(payload))


@pytest.mark.rules("HT-HDR-03", "HQ-PT-01", "HQ-HDR-02", "HF-IDX-08")
def test_a_boolean_is_refused_where_an_integer_is_declared():
    from hurray_decl.hurray.container.model import IndexEntry
    from hurray_decl.hurray.quantization import load_quantization

    with pytest.raises(HurrayDeclError) as info:
        TensorDescriptor.load('{"type_tag": true, "shape": [2]}')
    assert info.value.code == "HT-HDR-03" and info.value.path == "descriptor -> type_tag"
    for document in ({"type_tag": 3, "shape": [2, True]}, {"type_tag": 1, "shape": [2]}):
        if True in document["shape"]:
            with pytest.raises(HurrayDeclError, match="a boolean where an integer is declared"):
                TensorDescriptor.load(document)
        else:
            assert TensorDescriptor.load(document).type_tag == 1  # the integer 1 is still read
    with pytest.raises(HurrayDeclError, match="HQ-PT-01"):
        load_quantization('{"scheme_tag": 1, "scale": 1.0, "zero_point": true}')
    with pytest.raises(HurrayDeclError, match="HQ-HDR-02"):
        load_quantization('{"scheme_tag": true, "scale": 1.0, "zero_point": 0}')
    with pytest.raises(HurrayDeclError, match="HF-IDX-08"):
        IndexEntry(name="w", descriptor_offset=64, descriptor_length=True, data_offset=4096, data_length=0)


def test_the_cli_refuses_deep_json_with_exit_2(tmp_path):
    from hurray_decl import cli

    nested = tmp_path / "nested.json"
    nested.write_text("[" * 100000 + "]" * 100000)
    assert cli.main(["encode", "--quantization", str(nested)]) == 2
    assert cli.main(["encode", str(nested)]) == 2
    boolean = tmp_path / "boolean.json"
    boolean.write_text('{"type_tag": true, "shape": [2]}')
    assert cli.main(["encode", str(boolean)]) == 1


# ------------------------------------------------------------------ no warning from a documented result


@pytest.mark.rules("HQ-MX-11")
@pytest.mark.parametrize("storage", ["int8", "int4", "float4_e2m1"])
def test_mxfp_overflow_to_infinity_gives_no_warning(storage):
    """2^(e - 127) * value(q) beyond float32 is an infinity (HQ-MX-11): with warnings as errors,
    the block with exponent byte 0xFE dequantizes to infinities, the other block to finite values."""
    script = textwrap.dedent(f"""
        import numpy as np
        from hurray_decl.hurray.numerics import dequantize
        from hurray_decl.hurray.schemes.mxfp import MXFP
        from hurray_decl.hurray.tables.element_types import BY_NAME
        from hurray_decl.hurray.tensor import BufferHandle, TensorDescriptor

        element = BY_NAME[{storage!r}]
        size = 32 * element.bits // 8
        d = TensorDescriptor(type_tag=element.tag, shape=(2, 16),
                             quantization=MXFP(axis=1, block_size=16, scale_buffer_index=1),
                             buffers=(BufferHandle(byte_size=size), BufferHandle(byte_size=2)))
        code = 0x7F if element.bits == 8 else 0x77  # 127, 7 or 6.0 (e2m1 0b0111) in every element
        x = dequantize(d, [bytes([code]) * size, bytes([0xFE, 0x7F])])
        assert np.isposinf(x[0]).all() and np.isfinite(x[1]).all() and (x[1] > 0).all(), x
        print("ok", int(np.isinf(x).sum()))
    """)
    done = subprocess.run([sys.executable, "-W", "error", "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split() == ["ok", "16"], done.stderr[-2000:]
    assert not done.stderr


# ------------------------------------------------------------------ messages in plain words


@pytest.mark.rules("HQ-BUF-12", "HQ-BUF-04", "HT-HDR-20")
def test_messages_say_what_is_wrong_with_the_field_and_the_values():
    from hurray_decl.hurray.schemes.per_channel_affine import PerChannelAffine
    from hurray_decl.hurray.tensor.layouts import CSR

    cases = [
        (TensorDescriptor(type_tag=0x10, shape=(2, 16), quantization=MXFP(axis=1, block_size=16, scale_buffer_index=1),
                          buffers=(BufferHandle(byte_size=32), BufferHandle(byte_size=3))),
         "HQ-BUF-12", "buffer 1, named by scale_buffer_index, holds 3 bytes, but its parameters take exactly 2 bytes"),
        (TensorDescriptor(type_tag=0x10, shape=(4, 8), quantization=PerChannelAffine(
            axis=0, scale_buffer_index=1, zero_point_buffer_index=1), buffers=(BufferHandle(byte_size=32),
                                                                               BufferHandle(byte_size=30))),
         "HQ-BUF-04", "buffer 1, named by scale_buffer_index and zero_point_buffer_index, holds 30 bytes, but its "
                      "parameters take exactly 32 bytes (16 for scale_buffer_index, 16 for zero_point_buffer_index)"),
        (TensorDescriptor(type_tag=0x03, shape=(3, 3), byte_offset=8, layout=CSR(nnz=2),
                          buffers=tuple(BufferHandle(byte_size=s) for s in (8, 16, 8))),
         "HT-HDR-20", "byte_offset is 8, but a CSR tensor must have byte_offset 0"),
    ]
    for descriptor, code, message in cases:
        with pytest.raises(HurrayDeclError) as info:
            write_tensor_descriptor(descriptor)
        assert info.value.code == code and info.value.detail == message, info.value


# ------------------------------------------------------------------ the writer keeps what an opaque descriptor carries


@pytest.mark.rules("HT-HDR-17", "HT-HDR-11")
def test_the_writer_keeps_trailing_bytes_of_an_opaque_descriptor():
    from hurray_decl.hurray.tensor.layouts import OpaqueLayout

    d = TensorDescriptor(version_minor=1, type_tag=0x03, shape=(2,), layout_tag=0x30,
                         layout=OpaqueLayout(payload=b"\x01\x02\x03\x04"), trailing=b"\xaa\xbb")
    raw = write_tensor_descriptor(d, permissive=True)
    assert raw.endswith(b"\x01\x02\x03\x04\xaa\xbb") and len(raw) == len(
        write_tensor_descriptor(d.replace(trailing=b""), permissive=True)) + 2
    back = read_tensor_descriptor(raw, permissive=True)  # the reader reads them as the layout's own bytes
    assert back.layout.payload == b"\x01\x02\x03\x04\xaa\xbb" and back.trailing == b""
    assert write_tensor_descriptor(back, permissive=True) == raw
