"""Mutants of the portable wire form: profile names, type references and catalogues, the descriptor,
the payload extent, block headers, packed codes, base-3 bytes and codebook indices (OL-PROF, OL-WIRE,
OL-NUM-18)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hurray_decl.onnx_light.mutants.base import (
    RUN,
    block_header,
    model_case,
    mutant,
    patched,
    payload_rows,
    portable_value,
    run_fields,
    value_case,
    value_fields,
)
from hurray_decl.onnx_light.mutants.valid import PORTABLE, Case, Source, catalogue_model, model_with, valid_value
from hurray_decl.onnx_light.profiles import PROFILES, WIRE_PREFIX, QuantizationFormat, QuantizationMethod
from hurray_decl.onnx_light.wire import pb


@mutant("OL-PROF-02", "the root name carries an unknown or mis-cased profile name")
def _(src: Source) -> Case:
    value = portable_value(src)
    wire = value.struct_type.name[len(WIRE_PREFIX):]
    value.struct_type.name = WIRE_PREFIX + src.choice((wire.upper(), wire + "x", "unknown", ""))
    if value.struct_type.name == WIRE_PREFIX + wire:
        value.struct_type.name = WIRE_PREFIX + "unknown"
    return value_case(value, "OL-PROF-02", "struct_type.name", "unknown profile name")


@mutant("OL-WIRE-04", "a type_ref with another field set beside it")
def _(src: Source) -> Case:
    value = portable_value(src)
    value.struct_type.Clear()
    value.struct_type.type_ref = src.integer(1, 1000)
    value.struct_type.name = src.choice(("x", WIRE_PREFIX + "int4"))
    return value_case(value, "OL-WIRE-04", "struct_type", "type_ref with a name")


@mutant("OL-WIRE-05", "a type_ref that the (absent) model catalogue does not declare")
def _(src: Source) -> Case:
    value = portable_value(src)
    value.struct_type.Clear()
    value.struct_type.type_ref = src.integer(1, 1 << 40)
    return value_case(value, "OL-WIRE-05", "struct_type", "unresolved type_ref")


@mutant("OL-WIRE-06", "a model catalogue entry with type_id 0")
def _(src: Source) -> Case:
    model = catalogue_model(src)
    model.struct_types[0].type_id = 0
    return model_case(model, "OL-WIRE-06", "struct_types[0]", "catalogue type_id 0")


@mutant("OL-WIRE-07", "two model catalogue entries with the same type_id")
def _(src: Source) -> Case:
    model = catalogue_model(src)
    model.struct_types.add().CopyFrom(model.struct_types[0])
    return model_case(model, "OL-WIRE-07", "struct_types[1]", "duplicate catalogue type_id")


@mutant("OL-WIRE-08", "an inline struct_type that carries a type_id")
def _(src: Source) -> Case:
    value = portable_value(src)
    value.struct_type.type_id = src.integer(1, 1 << 40)
    return value_case(value, "OL-WIRE-08", "struct_type.type_id", "inline type_id")


@mutant("OL-WIRE-09", "raw_data and external_data both present")
def _(src: Source) -> Case:
    value = portable_value(src)
    value.external_data.add(key="location", value=src.choice(("w.bin", "data")))
    return value_case(value, "OL-WIRE-09", "external_data", "raw_data and external_data")


@mutant("OL-WIRE-10", "an external payload that is not loaded")
def _(src: Source) -> Case:
    value = portable_value(src)
    value.ClearField("raw_data")
    if src.coin():
        value.external_data.add(key="location", value="w.bin")
    else:
        value.data_location = pb.TensorProto.EXTERNAL
    return value_case(value, "OL-WIRE-10", "", "external payload not loaded")


@mutant("OL-WIRE-11", "a descriptor dimension whose size overflows 64 bits")
def _(src: Source) -> Case:
    value = portable_value(src)
    index = src.choice((1, 4, 5))
    dim = value_fields(value)[index].type.tensor_type.shape.dim[0]
    dim.dim_value = (1 << 61) + src.integer(0, 1 << 20)
    return value_case(value, "OL-WIRE-11", "struct_type", "size overflow")


@mutant("OL-WIRE-12", "a root struct whose payload size is 0 bits")
def _(src: Source) -> Case:
    value = valid_value(src, src.choice([f for f in PORTABLE if not PROFILES[f].needs_transform]), count=0)
    value_fields(value)[0].type.tensor_type.shape.dim[0].dim_value = 0
    return value_case(value, "OL-WIRE-12", "struct_type", "root size 0")


@mutant("OL-WIRE-13", "raw_data holding more than one record")
def _(src: Source) -> Case:
    value = portable_value(src)
    value.raw_data = value.raw_data * src.integer(2, 3)
    return value_case(value, "OL-WIRE-13", "raw_data", "two records")


@mutant("OL-WIRE-14", "a root name without the onnx_light.quantization.v1/ prefix")
def _(src: Source) -> Case:
    value = portable_value(src)
    wire = value.struct_type.name[len(WIRE_PREFIX):]
    value.struct_type.name = src.choice(("onnx_light.quantization.v2/", "quantization.v1/", "")) + wire
    return value_case(value, "OL-WIRE-14", "struct_type.name", "wrong root prefix")


@mutant("OL-WIRE-15", "a logical type that is not a floating tensor")
def _(src: Source) -> Case:
    value = portable_value(src)
    if src.coin():
        value.logical_type.tensor_type.elem_type = src.choice((0, 2, 3, 6, 7, 8, 9, 12))
    else:
        value.logical_type.Clear()
        value.logical_type.opaque_type.name = "x"
    return value_case(value, "OL-WIRE-15", "logical_type", "logical type not floating")


@mutant("OL-WIRE-16", "a logical dimension that is not a concrete dim_value >= 0")
def _(src: Source) -> Case:
    value = portable_value(src, minimum=1)
    dim = value.logical_type.tensor_type.shape.dim[0]
    if src.coin():
        dim.dim_param = "N"
    else:
        dim.dim_value = -src.integer(1, 100)
    return value_case(value, "OL-WIRE-16", "logical_type", "symbolic logical dimension")


@mutant("OL-WIRE-21", "a block-header value outside [0, 2^32 - 1]")
def _(src: Source) -> Case:
    value = portable_value(src, minimum=1)
    header = block_header(value)
    position = src.integer(0, 8)
    header.int64_data[position] = src.choice((-1, -(1 << 40), (1 << 32) + src.integer(0, 1000)))
    return value_case(value, "OL-WIRE-21", f"{RUN}[1]", "header value out of range")


@mutant("OL-WIRE-22", "a signed or base3 flag above 1")
def _(src: Source) -> Case:
    value = portable_value(src, minimum=1)
    block_header(value).int64_data[src.choice((3, 7))] = src.integer(2, (1 << 32) - 1)
    return value_case(value, "OL-WIRE-22", f"{RUN}[1]", "flag above 1")


@mutant("OL-WIRE-23", "a run array of dimension 0 (its block records removed)")
def _(src: Source) -> Case:
    value = portable_value(src, minimum=1)
    runs = run_fields(value)
    index = src.integer(0, len(runs) - 1)
    records = payload_rows(value, f"raw_data.runs[{index}].")
    start = records[0][0]
    end = records[-1][0] + records[-1][1].size
    runs[index].type.struct_type.array.dimension = 0
    value.raw_data = value.raw_data[:start] + value.raw_data[end:]
    return value_case(value, "OL-WIRE-23", f"{RUN}[{index + 1}]", "empty run")


@mutant("OL-WIRE-26", "a descriptor that differs from the canonical schema of its own runs")
def _(src: Source) -> Case:
    value = portable_value(src, minimum=1)
    how = src.integer(0, 3)
    if how == 0:
        value_fields(value)[src.choice((0, 3, 5))].name += "_"
    elif how == 1:
        run_fields(value)[0].name = f"run_{src.integer(1, 99)}"
    elif how == 2:
        value_fields(value)[src.integer(0, 6)].doc_string = "not canonical"
    else:
        value.struct_type.doc_string = "not canonical"
    return value_case(value, "OL-WIRE-26", "struct_type", "non-canonical descriptor")


@mutant("OL-WIRE-28", "raw_data shorter than the descriptor's size")
def _(src: Source) -> Case:
    value = portable_value(src, minimum=1)
    value.raw_data = value.raw_data[:src.integer(0, len(value.raw_data) - 1)]
    return value_case(value, "OL-WIRE-28", "raw_data", "truncated payload")


@mutant("OL-WIRE-29", "trailing bytes after the payload")
def _(src: Source) -> Case:
    value = portable_value(src, minimum=1)
    while len(value.raw_data) < 2:
        value = portable_value(src, minimum=1)
    extra = src.integer(1, len(value.raw_data) - 1)
    value.raw_data = value.raw_data + bytes(src.integer(0, 255) for _ in range(extra))
    return value_case(value, "OL-WIRE-29", "raw_data", "trailing bytes")


@mutant("OL-WIRE-30", "a reserved byte other than 0x00 (in a value file, or in a model's nested graph)")
def _(src: Source) -> Case:
    value = portable_value(src)
    (at, _row), = payload_rows(value, "raw_data.reserved")
    value = patched(value, at, bytes([src.integer(1, 255)]))
    if src.coin():
        return value_case(value, "OL-WIRE-30", "raw_data.reserved", "reserved byte set")
    model = model_with()
    branch = model.graph.node.add(op_type="If", input=["c"], output=["y"])
    attribute = branch.attribute.add(name="then_branch", type=5)
    attribute.g.name = "then"
    attribute.g.encoded_initializer.add().CopyFrom(value)
    return model_case(model, "OL-WIRE-30", "graph.node[0].attribute[0].g.encoded_initializer[0].raw_data.reserved",
                       "reserved byte set in a nested graph's value (OL-WIRE-42)")


def _blocks_with(value: pb.EncodedValueProto, wanted: Callable[[Any], bool]) -> list[tuple[int, Any, Any]]:
    """(raw offset, codes row, layout) of the blocks whose layout satisfies ``wanted``."""
    layouts = [run.layout for run in _merged_layouts(value)]
    found = []
    for at, row in payload_rows(value, "raw_data.runs["):
        if row.field.endswith(".codes"):
            run = int(row.field.split("runs[", 1)[1].split("]", 1)[0])
            if wanted(layouts[run]):
                found.append((at, row, layouts[run]))
    return found


def _merged_layouts(value: pb.EncodedValueProto) -> Sequence[Any]:
    from hurray_decl.onnx_light.wire import merge_runs, read_geometry

    return merge_runs(read_geometry(value.struct_type).runs)


Blocks = list[tuple[int, Any, Any]]


def _value_with_blocks(src: Source, profiles: Sequence[QuantizationFormat], wanted: Callable[[Any], bool],
                       count_range: tuple[int, int] = (1, 24)) -> tuple[pb.EncodedValueProto, Blocks]:
    while True:
        value = valid_value(src, src.choice(tuple(profiles)), count=src.integer(*count_range))
        found = _blocks_with(value, wanted)
        if found:
            return value, found


_BINARY_PACKED = tuple(f for f in PORTABLE if PROFILES[f].method != QuantizationMethod.CAST and not PROFILES[f].base3)
_BASE3 = tuple(f for f in PORTABLE if PROFILES[f].base3)


@mutant("OL-WIRE-34", "non-zero unused high bits in a block's last code byte")
def _(src: Source) -> Case:
    value, found = _value_with_blocks(src, _BINARY_PACKED,
                                      lambda lay: not int(lay.base3) and lay.method != QuantizationMethod.CAST
                                      and (lay.code_count * int(lay.bits)) % 8 != 0)
    at, row, layout = src.choice(found)
    used = (layout.code_count * int(layout.bits)) % 8
    last = at + row.size - 1
    bit = 1 << src.integer(used, 7)
    return value_case(patched(value, last, bytes([value.raw_data[last] | bit])), "OL-WIRE-34", row.field,
                       "padding bits set")


@mutant("OL-WIRE-36", "a base-3 byte of 243 or more")
def _(src: Source) -> Case:
    value, found = _value_with_blocks(src, _BASE3, lambda lay: bool(int(lay.base3)))
    at, row, _layout = src.choice(found)
    k = src.integer(0, row.size - 1)
    return value_case(patched(value, at + k, bytes([src.integer(243, 255)])), "OL-WIRE-36", row.field,
                       "base-3 byte >= 243")


@mutant("OL-WIRE-37", "a base-3 byte with a non-zero trit after the real ones")
def _(src: Source) -> Case:
    value, found = _value_with_blocks(src, _BASE3, lambda lay: bool(int(lay.base3)) and lay.code_count % 5 != 0)
    at, row, layout = src.choice(found)
    last = at + row.size - 1
    used = layout.code_count % 5
    new = value.raw_data[last] + 3 ** src.integer(used, 4)
    if new >= 243:
        new = value.raw_data[last] + 3 ** used
    return value_case(patched(value, last, bytes([new])), "OL-WIRE-37", row.field, "non-zero trailing trit")


_SHORT_TABLES = tuple(f for f in PORTABLE if PROFILES[f].method == QuantizationMethod.CODEBOOK
                      and not PROFILES[f].base3 and PROFILES[f].entries < (1 << PROFILES[f].bits))


@mutant("OL-NUM-18", "a codebook index >= entries")
def _(src: Source) -> Case:
    value, found = _value_with_blocks(src, _SHORT_TABLES, lambda lay: lay.method == QuantizationMethod.CODEBOOK
                                      and not int(lay.base3) and int(lay.entries) < (1 << int(lay.bits))
                                      and int(lay.bits) in (1, 2, 4, 8))
    at, row, layout = src.choice(found)
    bits = int(layout.bits)
    k = src.integer(0, layout.code_count - 1)
    index = src.integer(int(layout.entries), (1 << bits) - 1)
    byte, shift = divmod(k * bits, 8)
    raw = value.raw_data[at + byte]
    mask = ((1 << bits) - 1) << shift
    return value_case(patched(value, at + byte, bytes([(raw & ~mask) | (index << shift)])), "OL-NUM-18",
                       row.field, "codebook index out of range")


# --- ORT mutants ------------------------------------------------------------------------------------
