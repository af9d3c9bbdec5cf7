"""Mutants of the ORT MatMulNBits layouts: padding codes, packed zero points, parameters, the canonical
schema and the payload length (OL-ORT)."""

from __future__ import annotations

from hurray_decl.onnx_light.mutants.base import mutant, patched, payload_rows, value_case, value_fields
from hurray_decl.onnx_light.mutants.valid import ORT, Case, Source, ort_value
from hurray_decl.onnx_light.ort import FLOATING, PACKED
from hurray_decl.onnx_light.wire import pb


def _ort(src: Source, storage: str | None = None, ragged: bool = False) -> pb.EncodedValueProto:
    while True:
        value = ort_value(src.choice(ORT), src, storage)
        k = value.logical_type.tensor_type.shape.dim[0].dim_value
        block = value_fields(value)[0].constant.int64_data[1]
        if not ragged or k % block:
            return value


@mutant("OL-ORT-23", "a non-zero code in a column's padding rows")
def _(src: Source) -> Case:
    value = _ort(src, ragged=True)
    bits = value_fields(value)[0].constant.int64_data[0]
    block = value_fields(value)[0].constant.int64_data[1]
    k = value.logical_type.tensor_type.shape.dim[0].dim_value
    groups = -(-k // block)
    column = src.integer(0, value_fields(value)[1].type.tensor_type.shape.dim[0].dim_value - 1)
    (at, row), = payload_rows(value, f"raw_data.B[{column}][{groups - 1}]")
    w = src.integer(k % block, block - 1)
    byte, shift = divmod(w * bits, 8)
    raw = value.raw_data[at + byte]
    return value_case(patched(value, at + byte, bytes([raw | (1 << shift)])), "OL-ORT-23", row.field,
                       "padding code set")


@mutant("OL-ORT-24", "non-zero unused bits in packed zero points")
def _(src: Source) -> Case:
    while True:
        value = _ort(src, PACKED)
        bits = value_fields(value)[0].constant.int64_data[0]
        groups = value_fields(value)[2].type.tensor_type.shape.dim[1].dim_value
        if (groups * bits) % 8:
            break
    rows = payload_rows(value, "raw_data.zero_points[")
    at, row = src.choice(rows)
    last = at + row.size - 1
    bit = 1 << src.integer((groups * bits) % 8, 7)
    return value_case(patched(value, last, bytes([value.raw_data[last] | bit])), "OL-ORT-24", row.field,
                       "zero-point padding set")


@mutant("OL-ORT-25", "parameters[0] differs from the profile's bits")
def _(src: Source) -> Case:
    value = _ort(src)
    bits = value_fields(value)[0].constant.int64_data[0]
    value_fields(value)[0].constant.int64_data[0] = src.choice([b for b in (1, 2, 3, 4, 8, 16) if b != bits])
    return value_case(value, "OL-ORT-25", "struct_type.structure.field[0]", "bits constant changed")


@mutant("OL-ORT-26", "a fourth field not named zero_points")
def _(src: Source) -> Case:
    value = _ort(src, src.choice((PACKED, FLOATING)))
    value_fields(value)[3].name = src.choice(("zero_point", "zp", "offsets", ""))
    return value_case(value, "OL-ORT-26", "struct_type.structure.field[3]", "zero_points renamed")


@mutant("OL-ORT-27", "a descriptor that is not the canonical ORT schema")
def _(src: Source) -> Case:
    value = _ort(src)
    how = src.integer(0, 2)
    if how == 0:
        value_fields(value)[1].name = src.choice(("b", "weights", "B_"))
    elif how == 1:
        value_fields(value)[1].type.tensor_type.shape.dim[2].dim_value += src.integer(1, 4)
    else:
        value_fields(value)[2].doc_string = "not canonical"
    return value_case(value, "OL-ORT-27", "struct_type", "non-canonical ORT descriptor")


@mutant("OL-ORT-28", "an ORT payload whose length differs from B + scales + zero_points")
def _(src: Source) -> Case:
    value = _ort(src)
    if src.coin():
        value.raw_data = value.raw_data[:src.integer(0, len(value.raw_data) - 1)]
    else:
        value.raw_data += bytes(src.integer(1, 8))
    return value_case(value, "OL-ORT-28", "raw_data", "ORT payload length")


# --- parameter sets and compact values ----------------------------------------------------------------
