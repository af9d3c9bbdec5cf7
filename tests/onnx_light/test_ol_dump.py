"""The annotated hex dump of onnx-light inputs (hurray_decl.onnx_light.dump).

Every DIGEST.md § 14 vector and every bundled onnx-light example is dumped: the JSON rows cover
every byte exactly once, in order, each with a field path, and their hex is the input. Payload
rows are checked against the vectors' bytes written here; invalid inputs mark the failing field
with the rule code.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from google.protobuf.message import DecodeError
from hypothesis import given, settings, strategies as st

from hurray_decl.dump import rows as dump_rows
from hurray_decl.dump.render import json_schema
from hurray_decl.onnx_light import (
    EncodedValueProto,
    ModelProto,
    QuantizationFormat as F,
    add_quantization_parameters,
    make_matmul_nbits_plan,
    make_quantization_plan,
    make_quantization_type,
    quantize_array,
    quantize_tensor_shared,
)
from hurray_decl.onnx_light.corpus import bundled, examples, read_manifest
from hurray_decl.onnx_light.dump import dump, hexdump
from hurray_decl.onnx_light.inputs import MESSAGES, detect_kind
from hurray_decl.onnx_light.protowire import walk
from hurray_decl.onnx_light.wire import make_logical_type
from tests.helpers import covers
from tests.onnx_light.support import D, edit_blocks, edit_layout, hx

CORPUS = examples()
MANIFEST = read_manifest(bundled())


def assert_covers(data: bytes, rows) -> None:
    """Rows follow each other from byte 0 to the end, each with a path, and spell the input."""
    at = 0
    for row in rows:
        row = row if isinstance(row, dict) else row.__dict__
        assert row["offset"] == at, f"gap or overlap at {at}: {row}"
        assert row["size"] >= 1 and row["field"]
        assert bytes.fromhex(row["hex"]) == data[at:at + row["size"]]
        at += row["size"]
    assert at == len(data)


def json_dump(data: bytes, **options) -> dict:
    result = json.loads(hexdump(data, format="json", **options))
    assert_covers(data, result["rows"])
    return result


def by_field(result: dict) -> dict[str, dict]:
    return {row["field"]: row for row in result["rows"]}


def marked(result: dict) -> dict:
    """The row the error's offset falls in (the one the renderers mark)."""
    offset = result["error"]["offset"]
    return next(r for r in result["rows"] if r["offset"] <= offset < r["offset"] + r["size"])


# --- the protobuf framing -----------------------------------------------------------------------

def test_every_field_key_length_and_value_is_named():
    value = quantize_array(np.array([-9, -7.5, -0.5, 0.5, 1.5, 6.5, 8], np.float32), make_quantization_plan(F.INT4, 7))
    data = value.SerializeToString()
    rows = json_dump(data)["rows"]
    fields = by_field({"rows": rows})
    # DIGEST.md § 3.1: struct_type = 2, logical_type = 3, raw_data = 4, all length-delimited.
    assert rows[0]["field"] == "struct_type:key" and rows[0]["hex"] == "12"
    assert rows[0]["text"] == "field 2 (struct_type), wire type 2 (length-delimited)"
    assert fields["logical_type:key"]["hex"] == "1A" and fields["raw_data:key"]["hex"] == "22"
    assert fields["raw_data:length"]["text"] == "29 bytes"
    assert fields["struct_type:length"]["text"] == "404 bytes (StructTypeProto 'onnx_light.quantization.v1/int4')"
    assert fields["struct_type.name"]["text"] == "'onnx_light.quantization.v1/int4'"
    root = "struct_type.structure.field"
    assert fields[f"{root}[0]:length"]["text"].endswith("(Field 'reserved')")
    assert fields[f"{root}[1].type.tensor_type.elem_type"]["text"] == "7 (INT64)"
    run = f"{root}[6].type.struct_type.structure.field[1]"
    assert fields[f"{run}:length"]["text"].endswith("(Field 'run_0')")
    assert fields[f"{run}.type.struct_type.array.dimension"]["text"] == "1"
    header = f"{run}.type.struct_type.array.element_type.struct_type.structure.field[0].constant.int64_data"
    assert fields[f"{header}:key"]["hex"] == "3A"  # int64_data = 7, packed (wire type 2)
    assert [fields[f"{header}[{k}]"]["text"] for k in range(9)] == [
        "7 (count)", "0 (method)", "4 (bits)", "1 (signed_codes)", "1 (books)", "0 (entries)", "1 (vector_size)",
        "0 (base3)", "10 (cast_type)"]
    assert fields["logical_type.tensor_type.shape.dim[0].dim_value"]["text"] == "7"


def test_unknown_fields_and_groups_are_named_by_number():
    value = quantize_array(np.zeros(2, np.float32), make_quantization_plan(F.INT8, 2))
    extra = bytes([0x98, 0x06, 0x05]) + bytes([0x9B, 0x06, 0x08, 0x01, 0x9C, 0x06])  # field 99 varint, field 99 group
    data = value.SerializeToString() + extra
    EncodedValueProto.FromString(data)  # the runtime keeps them as unknown fields
    rows = json_dump(data)["rows"]
    assert [r["field"] for r in rows[-6:]] == ["[99]:key", "[99]", "[99]:key", "[99].[1]:key", "[99].[1]",
                                               "[99]:end_group"]


@covers("OL-WIRE-03")
def test_bytes_that_are_not_a_message_stop_at_the_failure():
    data = quantize_array(np.zeros(3, np.float32), make_quantization_plan(F.INT4, 3)).SerializeToString()
    cut = data[:40]
    with pytest.raises(DecodeError):
        EncodedValueProto.FromString(cut)
    result = json_dump(cut, kind="value")
    assert result["error"]["code"] == "OL-WIRE-03"
    assert result["rows"][-1]["field"] == dump_rows.UNDECODED


@pytest.mark.parametrize("blob", [
    bytes.fromhex("3a0174" "e5f5f5f7f7fe12" "040a020809"),   # field number 10440794943324 (atheris)
    bytes.fromhex("f8ffffff0f01"), bytes.fromhex("f8ffffff0701"),   # field numbers 2^29 and 2^29 - 1
    bytes.fromhex("0b1c"), bytes.fromhex("0c"), bytes.fromhex("1e"),   # group, stray end group, wire type 6
])
def test_the_walker_accepts_exactly_what_protobuf_accepts_on_edges(blob):
    for message in MESSAGES.values():
        try:
            message.FromString(blob)
            parsed = True
        except DecodeError:
            parsed = False
        assert (walk(blob, message.DESCRIPTOR).error is None) == parsed, blob.hex()


@settings(max_examples=40)
@given(st.data())
def test_the_walker_accepts_exactly_what_protobuf_accepts(data):
    base = data.draw(st.sampled_from([e.data for e in CORPUS if e.kind == "value"][:12]))
    blob = bytearray(base)
    for _ in range(data.draw(st.integers(1, 4))):
        where = data.draw(st.integers(0, len(blob) - 1))
        blob[where] = data.draw(st.integers(0, 255))
    for kind, message in MESSAGES.items():
        try:
            message.FromString(bytes(blob))
            parsed = True
        except DecodeError:
            parsed = False
        assert (walk(bytes(blob), message.DESCRIPTOR).error is None) == parsed, kind


# --- DIGEST.md § 14 vectors --------------------------------------------------------------------

def test_14_1_int4_golden():
    value = quantize_array(np.array([-9, -7.5, -0.5, 0.5, 1.5, 6.5, 8], np.float32), make_quantization_plan(F.INT4, 7))
    fields = by_field(json_dump(value.SerializeToString()))
    block = "raw_data.runs[0].blocks[0]"
    assert fields["raw_data.reserved"]["hex"] == "00"
    assert fields[f"{block}.scale"]["hex"] == D(1.0).hex(" ").upper() and fields[f"{block}.scale"]["text"] == "1.0"
    assert fields[f"{block}.zero_point"]["hex"] == fields[f"{block}.offset"]["hex"] == "00 " * 7 + "00"
    assert fields[f"{block}.codes"]["hex"] == "88 00 62 07"
    assert fields[f"{block}.codes"]["text"] == "7 codes [-8, -8, 0, 0, 2, 6, 7]"


def test_14_2_base3():
    value = quantize_array(np.array([-1, 0, 1, -1, 1, 1, 0], np.float32), make_quantization_plan(F.TQ1_0, 7))
    fields = by_field(json_dump(value.SerializeToString()))
    block = "raw_data.runs[0].blocks[0]"
    assert [fields[f"{block}.codebook[{k}]"]["text"] for k in range(3)] == ["-1.0", "0.0", "1.0"]
    assert fields[f"{block}.codes"]["hex"] == "B7 05"
    assert fields[f"{block}.codes"]["text"] == "7 codes [0, 1, 2, 0, 2, 2, 1]"


def test_14_3_nf4_and_binary():
    nf4 = quantize_array(np.array([-1, 0, 1], np.float32), make_quantization_plan(F.NF4, 3)).SerializeToString()
    fields = by_field(json_dump(nf4))
    assert fields["raw_data.runs[0].blocks[0].codes"]["hex"] == "70 0F"
    assert fields["raw_data.runs[0].blocks[0].codebook[1]"]["hex"] == "00 00 00 20 36 47 E6 BF"
    binary = quantize_array(np.array([-1, 1, 0, 1], np.float32), make_quantization_plan(F.BINARY, 4))
    assert by_field(json_dump(binary.SerializeToString()))["raw_data.runs[0].blocks[0].codes"]["hex"] == "0A"


def test_14_4_additive_vector_codebook():
    plan = edit_layout(make_quantization_plan(F.AQLM, 3, 3), entries=2, bits=1, vector_size=2)
    plan = edit_blocks(plan, codebook=[0, 0, 10, 20, 0, 0, 1, 2])
    value = quantize_array(np.array([11, 22, 1], np.float32), plan)
    assert len(value.raw_data) == 90
    fields = by_field(json_dump(value.SerializeToString()))
    assert fields["raw_data.runs[0].blocks[0].codes"]["hex"] == "0B"
    assert [fields[f"raw_data.runs[0].blocks[0].codebook[{k}]"]["text"] for k in range(8)] == [
        "0.0", "0.0", "10.0", "20.0", "0.0", "0.0", "1.0", "2.0"]


@pytest.mark.parametrize("fmt", [F.LOG, F.MXFP4, F.NVFP4, F.MXFP6, F.FP6_LLM, F.FP8_E4M3])
def test_14_5_log_and_float_profiles(fmt):
    x = np.array([0.125, -0.25, 4, -8] if fmt == F.LOG else [-12, -3, -1, 0, 1, 12], np.float32)
    plan = make_quantization_plan(fmt, x.size)
    if fmt != F.LOG:
        plan = edit_blocks(plan, scale=2.0)
    result = json_dump(quantize_array(x, plan).SerializeToString())
    entries = [r for r in result["rows"] if ".codebook[" in r["field"]]
    assert len(entries) == {F.LOG: 15, F.FP8_E4M3: 254, F.MXFP6: 64, F.FP6_LLM: 64}.get(fmt, 16)


def test_14_6_permutation_rotation_outlier():
    plan = make_quantization_plan(F.QUAROT, 4)
    plan.permutation, plan.transform_size, plan.outliers = [2, 3, 0, 1], 2, [1]
    plan.forward, plan.inverse = [1, 1, 1, -1], [0.5, 0.5, 0.5, -0.5]
    value = quantize_array(np.array([[1, 1000], [2, 3]], np.float32), plan)
    fields = by_field(json_dump(value.SerializeToString()))
    assert [fields[f"raw_data.permutation[{k}]"]["text"] for k in range(4)] == ["2", "3", "0", "1"]
    assert [fields[f"raw_data.forward[{k}]"]["text"] for k in range(4)] == ["1.0", "1.0", "1.0", "-1.0"]
    assert [fields[f"raw_data.inverse[{k}]"]["text"] for k in range(4)] == ["0.5", "0.5", "0.5", "-0.5"]
    assert fields["raw_data.outlier_indices[0]"]["text"] == "1"
    assert fields["raw_data.outlier_values[0]"]["hex"] == D(1000.0).hex(" ").upper()
    assert fields["raw_data.permutation[0]"]["offset"] == fields["raw_data.reserved"]["offset"] + 1


def test_14_7_mixed_precision_runs_are_named_by_index():
    plan = edit_blocks(make_quantization_plan(F.INT4, 10, 4), scale=[0.5, 2])
    plan = edit_blocks(plan, 1, scale=4)
    value = quantize_array(np.array([0.5, 1, 1.5, 2, 2, 4, 6, 8, 4, 8], np.float32), plan)
    fields = by_field(json_dump(value.SerializeToString()))
    assert [fields[f"raw_data.runs[0].blocks[{j}].scale"]["text"] for j in range(2)] == ["0.5", "2.0"]
    assert fields["raw_data.runs[1].blocks[0].scale"]["text"] == "4.0"
    assert "raw_data.runs[0].blocks[2].scale" not in fields


def test_14_8_merged_run_of_100_blocks():
    value = quantize_array(np.zeros(100 * 128, np.float32), make_quantization_plan(F.INT4, 100 * 128))
    result = json_dump(value.SerializeToString())
    scales = [r for r in result["rows"] if r["field"].endswith(".scale")]
    assert len(scales) == 100 and scales[-1]["field"] == "raw_data.runs[0].blocks[99].scale"


@pytest.mark.parametrize("bits", [1, 3, 5, 8, 13, 16])
def test_14_9_every_index_width(bits):
    lo = -(1 << (bits - 1))
    codes = lo + (np.arange(19) % (1 << bits))
    value = quantize_array((codes * 0.25).astype(np.float64),
                           edit_blocks(edit_layout(make_quantization_plan(F.EXL2, 19, 19), bits=bits), scale=0.25))
    fields = by_field(json_dump(value.SerializeToString()))
    row = fields["raw_data.runs[0].blocks[0].codes"]
    assert row["size"] == -(-19 * bits // 8)
    assert row["text"].startswith(f"19 codes [{', '.join(str(int(c)) for c in codes[:19])}")


def test_14_10_cast_codes_read_as_the_cast_dtype():
    plan = make_quantization_plan(F.COLUMN_MAJOR, 6, 6)
    plan.permutation = [0, 3, 1, 4, 2, 5]
    value = quantize_array(np.arange(6, dtype=np.float32).reshape(2, 3), plan)
    row = by_field(json_dump(value.SerializeToString()))["raw_data.runs[0].blocks[0].codes"]
    assert bytes.fromhex(row["hex"]) == np.array([0, 3, 1, 4, 2, 5], "<f4").tobytes()
    assert row["text"] == "6 codes [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]"


def test_14_11_calibrated_scales_and_zero_points_are_named():
    from hurray_decl.onnx_light import quantize_with_type

    x = np.array([-8, -4, 0, 7, -16, 0, 8, 14], np.float32)
    calibrated = quantize_with_type(x, make_quantization_type(make_quantization_plan(F.INT4, 8, block_size=4)))
    fields = by_field(json_dump(calibrated.SerializeToString()))
    assert [fields[f"raw_data.runs[0].blocks[{j}].scale"]["text"] for j in range(2)] == ["1.0", "2.0"]
    plan = edit_blocks(make_quantization_plan(F.INT8, 7), scale=0.25, zero_point=-3.0)
    value = quantize_array(np.array([-40, -1, -0.6, 0, 0.6, 1, 40]), plan)
    fields = by_field(json_dump(value.SerializeToString()))
    assert fields["raw_data.runs[0].blocks[0].zero_point"]["text"] == "-3.0"
    assert fields["raw_data.runs[0].blocks[0].codes"]["text"] == "7 codes [-128, -7, -5, -3, -1, 1, 127]"


def test_14_14_affine_reference_codes_are_listed():
    x = np.linspace(-2, 8, 201)
    plan = edit_blocks(make_quantization_plan(F.GPTQ, x.size, block_size=x.size), scale=0.125, zero_point=3.0,
                       offset=3.141)
    fields = by_field(json_dump(quantize_array(x, plan).SerializeToString()))
    codes = np.clip(np.rint((x - 3.141) / 0.125 + 3), 0, 15).astype(int)
    row = fields["raw_data.runs[0].blocks[0].codes"]
    assert row["size"] == -(-201 * 4 // 8) and row["text"].startswith(
        f"201 codes [{', '.join(str(c) for c in codes[:32])}, ...]")
    assert fields["raw_data.runs[0].blocks[0].offset"]["text"] == "3.141"


def _shared_model() -> ModelProto:
    model = ModelProto(ir_version=10)
    storage = make_quantization_type(make_quantization_plan(F.INT4, 4, block_size=4))
    add_quantization_parameters(model, "common", storage, make_logical_type(1, [4]), scales=np.array(0.5, np.float32))
    q0 = quantize_tensor_shared(np.array([-4, -0.5, 0.5, 3.5], np.float32), model, "common").encoded
    q0.name = "Q0"
    model.graph.encoded_initializer.add().CopyFrom(q0)
    return model


@covers("OL-SHR-18")
def test_14_12_compact_value_named_by_its_set():
    model = _shared_model()
    assert model.graph.encoded_initializer[0].raw_data == hx("00 F8 71")
    data = model.SerializeToString()
    fields = by_field(json_dump(data))
    prefix = "graph.encoded_initializer[0].raw_data"
    assert fields[f"{prefix}.reserved"]["hex"] == "00"
    assert fields[f"{prefix}.runs[0].blocks[0].codes"]["hex"] == "F8 71"
    assert fields["graph.encoded_initializer[0].parameter_ref:key"]["hex"] == "4A"  # field 9 (OD-01), wire type 2
    alone = model.graph.encoded_initializer[0].SerializeToString()
    lone = by_field(json_dump(alone))
    assert lone["raw_data.local"]["hex"] == "F8 71"   # without the model the layout is unknown
    assert json_dump(alone)["error"]["code"] == "OL-SHR-29"


@pytest.mark.parametrize("bits, first, zero_points", [
    (2, "E4", {"raw_data.zero_points[0]": "39", "raw_data.zero_points[1]": "0E"}),
    (4, "10", {"raw_data.zero_points[0]": "21 03", "raw_data.zero_points[1]": "32 04"}),
    (8, "00", {"raw_data.zero_points[0]": "01 02 03", "raw_data.zero_points[1]": "02 03 04"}),
])
def test_14_13_ort_goldens(bits, first, zero_points):
    fmt = {2: F.ORT_MATMULNBITS_INT2, 4: F.ORT_MATMULNBITS_INT4, 8: F.ORT_MATMULNBITS_INT8}[bits]
    k, n, block, groups, mask = 35, 2, 16, 3, (1 << bits) - 1
    plan = make_matmul_nbits_plan(fmt, k, n, block)
    scale = [0.5 * (g + 1) for c in range(n) for g in range(groups)]
    zp = [float((c + g + 1) & mask) for c in range(n) for g in range(groups)]
    plan = edit_blocks(plan, scale=scale, zero_point=zp)
    x = np.array([[((r + c) & mask) - zp[c * groups + r // block] for c in range(n)] for r in range(k)]) \
        * np.array([[scale[c * groups + r // block] for c in range(n)] for r in range(k)])
    value = quantize_array(x.astype(np.float32), plan)
    fields = by_field(json_dump(value.SerializeToString()))
    assert fields["raw_data.B[0][0]"]["hex"].split()[0] == first
    assert fields["raw_data.B[1][2]"]["size"] == block * bits // 8
    assert [fields[f"raw_data.scales[{c}][{g}]"]["text"] for c in range(n) for g in range(groups)] == \
        ["0.5", "1.0", "1.5", "0.5", "1.0", "1.5"]
    for field, hex_ in zero_points.items():
        assert fields[field]["hex"] == hex_


# --- invalid inputs -----------------------------------------------------------------------------

@covers("OL-WIRE-30")
def test_failing_field_is_marked_and_the_rest_is_raw():
    value = quantize_array(np.array([-9, -7.5, -0.5, 0.5, 1.5, 6.5, 8], np.float32), make_quantization_plan(F.INT4, 7))
    raw = bytearray(value.raw_data)
    raw[0] = 0x01
    value.raw_data = bytes(raw)
    data = value.SerializeToString()
    result = json_dump(data)
    assert result["error"]["code"] == "OL-WIRE-30"
    row = marked(result)
    assert row["field"] == "raw_data.reserved" and row["hex"] == "01"
    after = result["rows"][result["rows"].index(row) + 1:]
    assert after and {r["field"] for r in after} == {dump_rows.UNDECODED}
    lines = hexdump(data).splitlines()  # the marked row's lines: its first (its offset) up to the next row's
    first = next(i for i, line in enumerate(lines) if line.startswith(f"{row['offset']} "))
    block = lines[first:first + 1] + list(itertools.takewhile(lambda line: line.startswith(" "), lines[first + 1:]))
    assert "raw_data.reserved" in block[0] and sum("<-- OL-WIRE-30" in line for line in block) == 1


# --- the bundled corpus -------------------------------------------------------------------------

@pytest.mark.parametrize("example", CORPUS, ids=lambda e: e.name)
def test_every_bundled_example_dumps_every_byte(example):
    result = json_dump(example.data)
    entry = MANIFEST[example.file]
    assert detect_kind(example.data) == entry["kind"]
    if entry["expect"] is None:
        assert result["error"] is None
        assert dump_rows.UNDECODED not in {r["field"] for r in result["rows"]}
    else:
        assert result["error"]["code"] == entry["expect"]
        assert marked(result)["field"].startswith(entry["field"]), (marked(result)["field"], entry["field"])


def test_dumps_follow_the_shipped_json_schema():
    import jsonschema

    validator = jsonschema.Draft202012Validator(json_schema())
    for example in CORPUS[::7]:
        validator.validate(json.loads(hexdump(example.data, format="json")))


def test_dump_of_one_named_value_of_a_model():
    model = _shared_model()
    other = quantize_array(np.zeros(3, np.float32), make_quantization_plan(F.INT8, 3))
    other.name = "other"
    model.graph.encoded_initializer.add().CopyFrom(other)
    data = model.SerializeToString()
    whole = dump(data)
    picked = dump(data, name="other")
    inside = [r for r in whole.rows if r.field.startswith("graph.encoded_initializer[1]")]
    assert picked.error is None and picked.rows == inside


def _covering_row_by_row(rows, start, end, data, label):
    """The rows in order, then raw rows for the gaps: one row at a time (what ``_covering`` gives)."""
    from hurray_decl.onnx_light.dump import _raw

    out, at = [], start
    for row in rows:
        if row.offset < at or row.offset + row.size > end:
            break
        out += _raw(data, at, row.offset, label=label) + [row]
        at = row.offset + row.size
    return out + _raw(data, at, end, label=label)


@pytest.mark.parametrize("spans, start, end", [
    ([], 0, 40), ([(0, 4), (4, 2), (6, 34)], 0, 40), ([(3, 4), (7, 1)], 3, 40),   # in a row, then the tail
    ([(0, 4), (4, 0), (4, 2)], 0, 6),                                          # an empty row
    ([(0, 4), (9, 2)], 0, 40), ([(2, 4)], 0, 40),                              # gaps
    ([(0, 4), (3, 2), (5, 1)], 0, 40), ([(0, 4), (4, 40)], 0, 40),             # an overlap, past the end
])
def test_covering_rows_read_by_columns_agree_with_the_row_by_row_reading(spans, start, end):
    from hurray_decl.onnx_light.dump import _covering

    data = bytes(range(40))
    rows = [dump_rows.Row(offset, size, data[offset:offset + size].hex(" ").upper(), f"f{offset}", "")
            for offset, size in spans]
    assert _covering(rows, start, end, data, "x") == _covering_row_by_row(rows, start, end, data, "x")
