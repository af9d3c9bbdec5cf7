"""One enum per code space: each code is listed once, in its enum, and everything that names,
checks or sizes the codes is built from it.

Two kinds of test. The source scan fails when a code space is listed a second time anywhere in
the package: a legend written out by hand (``"0x01 CUDA"``, ``"1, 11, 10 or 16"``), a title as a
string of its own (``"Level Zero"``), or a literal collection of exactly an enum's codes (a dict
keyed 0x00-0x08, a tuple of 1, 10, 11, 16). The behaviour tests check that what is built from
the enums (rules, dump names, the per-device matrix, the method table, the onnx-light raw_data
field table) says what the enums say, byte for byte where bytes are involved.
"""

from __future__ import annotations

import ast
from pathlib import Path

import construct as cs
import numpy as np
import pytest

from hurray_decl.declare.schema import Rule
from hurray_decl.hurray.tables import codes
from hurray_decl.hurray.tables.codes import (
    BlockTableIndexType,
    CombineOp,
    CompositionRule,
    Device,
    Flag,
    KVRole,
    KVTag,
    MemberRole,
    MemoryClass,
    ScaleType,
    Statistic,
    SyncMode,
    TileOrder,
)
from hurray_decl.onnx_light import protowire
from hurray_decl.onnx_light.numerics import LOGICAL_TYPES, DataType
from hurray_decl.onnx_light.ort.geometry import SOURCE_DTYPES
from hurray_decl.onnx_light.profiles import QuantizationMethod

PACKAGE = Path(__file__).resolve().parents[1] / "hurray_decl"

HURRAY_CODES: tuple[type[codes.Code], ...] = (
    Device, SyncMode, MemoryClass, ScaleType, TileOrder, KVRole, BlockTableIndexType, CompositionRule, CombineOp,
    MemberRole, KVTag)
"""Every titled code enum of the Hurray tables."""

OWNERS = {
    "hurray/tables/codes.py": "the Hurray code spaces",
    "onnx_light/numerics.py": "DataType",
    "onnx_light/protowire.py": "WireType",
    "onnx_light/profiles.py": "QuantizationMethod",
}


def _strings_and_literals(path: Path) -> tuple[list[tuple[int, str]], list[tuple[int, set[int]]]]:
    """The string constants of a module that are not docstrings, and the int sets of its literal
    dicts (keys), tuples, lists and sets."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    strings, literals = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            strings.append((node.lineno, node.value))
        items = node.keys if isinstance(node, ast.Dict) else \
            node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else None
        if items and len(items) >= 2 and all(isinstance(k, ast.Constant) and type(k.value) is int for k in items):
            literals.append((node.lineno, {k.value for k in items}))  # type: ignore[union-attr]
    return strings, literals


def _restatements() -> dict[str, str]:
    """Text that only a hand-written copy of a code space would contain, and the enum it copies."""
    out = {}
    for enum in HURRAY_CODES:
        for member in enum:
            out[f"0x{int(member):02X} {member.title}"] = enum.__name__
            out[f"0x{int(member):02X} ({member.title})"] = enum.__name__
    logical = list(LOGICAL_TYPES)
    out[", ".join(c.name for c in logical[:2])] = "DataType"                 # FLOAT, DOUBLE
    out[f"{logical[-2].name} or {logical[-1].name}"] = "DataType"            # FLOAT16 or BFLOAT16
    out[", ".join(str(int(c)) for c in logical[:2])] = "DataType"            # 1, 11
    out[f"{int(logical[-2])} or {int(logical[-1])}"] = "DataType"            # 10 or 16
    for method in QuantizationMethod:
        out[f"{int(method)} {method.wire_name}"] = "QuantizationMethod"      # 0 affine
    return out


def _titles() -> dict[str, str]:
    """Titles distinctive enough that a string equal to one is a copy of its code space."""
    out = {member.title: enum.__name__ for enum in (Device, SyncMode, MemoryClass) for member in enum}
    out.update({wire.title: "WireType" for wire in protowire.WireType})
    return out


def _code_sets() -> dict[frozenset[int], str]:
    """Code sets distinctive enough that a literal collection of exactly them is a copy."""
    return {
        frozenset(Device.codes()): "Device",
        frozenset(int(c) for c in DataType): "DataType",
        frozenset(int(c) for c in LOGICAL_TYPES): "DataType (logical types)",
        frozenset(int(c) for c in SOURCE_DTYPES): "DataType (ORT sources)",
        frozenset(int(w) for w in protowire.WireType): "WireType",
        frozenset(int(f) for f in Statistic): "Statistic",
        frozenset(int(f) for f in Flag): "Flag",
        frozenset(KVTag.codes()): "KVTag",
    }


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "_generated" not in p.parts)


def _copies(paths: list[Path], root: Path) -> list[str]:
    """Every copy of a code space in ``paths`` outside the modules that own the enums."""
    restated, titles, sets = _restatements(), _titles(), _code_sets()
    found = []
    for path in paths:
        where = path.relative_to(root).as_posix()
        if where in OWNERS:
            continue
        strings, literals = _strings_and_literals(path)
        for line, text in strings:
            found += [f"{where}:{line}: {text!r} restates {name}" for fragment, name in restated.items()
                      if fragment in text]
            if text in titles:
                found.append(f"{where}:{line}: {text!r} is a title of {titles[text]}")
        for line, values in literals:
            if frozenset(values) in sets:
                found.append(f"{where}:{line}: {sorted(values)} are the codes of {sets[frozenset(values)]}")
    return found


def test_no_code_space_is_listed_twice():
    found = _copies(_modules(), PACKAGE)
    assert not found, "a code space listed outside its enum:\n" + "\n".join(found)


def test_the_scan_sees_a_second_list(tmp_path):
    """The scan itself: each kind of copy is reported, with its line; docstrings are not."""
    module = tmp_path / "copy.py"
    module.write_text('"""0x01 CUDA, in a docstring, is documentation."""\n'
                      'NAMES = {0: "CPU", 1: "CUDA", 2: "ROCm", 3: "Metal", 4: "Vulkan", 5: "WebGPU", 6: "Hexagon",'
                      ' 7: "Level Zero", 8: "OpenCL"}\n'
                      'DOC = "0x00 producer-synced, 0x01 event"\n'
                      'CAST = (1, 11, 10, 16)\n'
                      'MESSAGE = "the dtype is FLOAT, DOUBLE, FLOAT16 or BFLOAT16"\n'
                      'EXPECTED = "0 affine, 1 codebook or 2 cast"\n')
    found = _copies([module], tmp_path)
    lines = {int(report.split(":")[1]) for report in found}
    assert lines == {2, 3, 4, 5, 6}
    assert sum("is a title of Device" in report for report in found) == len(Device)
    assert any("are the codes of Device" in report for report in found)
    assert any("are the codes of DataType (logical types)" in report for report in found)
    assert any("restates SyncMode" in report for report in found)
    assert any(report.startswith("copy.py:5:") and "DataType" in report for report in found)
    assert any(report.startswith("copy.py:6:") and "QuantizationMethod" in report for report in found)


# ---------------------------------------------------------------- the Hurray enums at work

def _rule(declaration: cs.Construct, code: str) -> Rule:
    """The rule of ``code`` inside a declaration (depth first)."""
    todo: list[object] = [declaration]
    while todo:
        node = todo.pop()
        if isinstance(node, Rule) and node.code == code:
            return node
        todo += getattr(node, "subcons", [])
        todo += [getattr(node, name) for name in ("subcon", "thensubcon") if hasattr(node, name)]
    raise LookupError(code)


class _Context(dict):
    def __getattr__(self, name):
        return self[name]


def test_handle_rules_accept_exactly_the_enums():
    from hurray_decl.hurray.tables.tags import is_private
    from hurray_decl.hurray.tensor.buffers import HANDLE, valid_pair

    sync, memory, device = _rule(HANDLE, "HT-BUFT-17"), _rule(HANDLE, "HT-BUFT-19"), _rule(HANDLE, "HT-BUFT-15")
    for value in range(256):
        assert sync.check(value, None) == (value in SyncMode.codes())
        assert memory.check(value, None) == (value in MemoryClass.codes() or is_private(value))
        assert device.check(value, None) == (value in Device.codes() or is_private(value) or value == 0xFF)
    for dev in Device:
        for cls in range(256):
            assert valid_pair(dev, cls) == (cls in dev.memory_classes), (dev, cls)
    assert sync.expected == "0x00, 0x01 or 0x02" and device.expected == "0x00-0x08 or private 0xF0-0xFE"
    assert Device.WEBGPU.memory_classes == {MemoryClass.STANDARD}
    assert MemoryClass.PEER not in Device.CPU.memory_classes and MemoryClass.PEER in Device.CUDA.memory_classes


def test_declaration_docs_name_every_code_with_its_title():
    from hurray_decl.hurray.schemes.per_block_affine import STRUCT as PER_BLOCK
    from hurray_decl.hurray.tensor.buffers import HANDLE
    from hurray_decl.hurray.tensor.layouts import BlockPaged, CompositeHead
    from hurray_decl.hurray.tensor.sections import COMPOSITE_MEMBER

    def docs(struct: cs.Construct, name: str) -> str:
        return next(s.docs for s in struct.subcons if s.name == name)

    fields = {f.name: f for f in BlockPaged.fields(3)} | {f.name: f for f in CompositeHead.fields(1)}
    for enum, text in ((Device, docs(HANDLE, "device_tag")), (SyncMode, docs(HANDLE, "sync_mode")),
                       (MemoryClass, docs(HANDLE, "memory_class")), (KVRole, fields["kv_role"].docs),
                       (BlockTableIndexType, fields["block_table_index_type"].docs),
                       (CompositionRule, fields["composition_rule"].docs),
                       (MemberRole, docs(COMPOSITE_MEMBER, "member_role")),
                       (ScaleType, docs(PER_BLOCK, "scale_type_tag"))):
        for member in enum:
            assert f"0x{int(member):02X} {member.title}" in text, (enum.__name__, text)
    assert _rule(PER_BLOCK, "HQ-PB-08").expected == "0x01 (float16), 0x02 (bfloat16) or 0x03 (float32)"


@pytest.mark.parametrize("field, enum",
                         [("device_tag", Device), ("sync_mode", SyncMode), ("memory_class", MemoryClass)])
def test_the_dump_names_codes_by_their_enum(field, enum):
    from hurray_decl.hurray.dump import TENSOR_FORMATTERS

    for value in range(256):
        title = f" ({enum(value).title})" if enum.has(value) else ""
        assert TENSOR_FORMATTERS[field](value) == f"0x{value:02X}{title}"


def test_scale_types_are_element_types():
    from hurray_decl.cli.common import SCALE_TYPES as CLI_CHOICES
    from hurray_decl.errors import RuleViolation
    from hurray_decl.hurray.tables.element_types import BY_TAG

    assert all(BY_TAG[int(t)].name == t.title for t in ScaleType)
    assert ScaleType.named("bfloat16") is ScaleType.BFLOAT16
    with pytest.raises(RuleViolation) as refused:
        ScaleType.named("float8_e4m3")
    assert refused.value.code == "HQ-PB-08" and refused.value.expected == "float16, bfloat16, float32"
    # The command line builds its parser without the package, so it names the scale types itself:
    # the same names (its order puts the default first).
    assert sorted(CLI_CHOICES) == sorted(t.title for t in ScaleType) and CLI_CHOICES[0] == "float32"
    from hurray_decl.convert.tensors import DEQUANTIZE_DTYPES  # convert --dtype takes the same names

    assert DEQUANTIZE_DTYPES == CLI_CHOICES


def test_flags_and_statistics_bits():
    from hurray_decl.hurray.tensor.header import DEFINED_FLAGS, HEADER
    from hurray_decl.hurray.tensor.sections import MASK_DEFINED, STATISTICS

    assert DEFINED_FLAGS == 0x1F and MASK_DEFINED == 0x3F
    assert _rule(HEADER, "HT-HDR-12").expected == "bits 5-31 clear"
    assert _rule(STATISTICS, "HT-SEC-09").expected == "bits 6-31 clear"
    assert codes.bit_legend(Statistic) == "bit 0 nnz, 1 sparsity, 2 value range, 3 mean/stddev, 4 N:M, 5 NaN/inf"


def test_kaitai_twins_use_the_enum_names():
    """The .ksy ``enums:`` ids are the members' names, lower-cased (test_kaitai checks the
    descriptor's; the container's KV tags are checked here)."""
    import yaml

    for enum in HURRAY_CODES:
        assert all(member.name.lower().isidentifier() for member in enum)
    assert [m.name for m in KVRole] == ["KEY_CACHE", "VALUE_CACHE", "FUSED"]
    container = yaml.safe_load((PACKAGE.parent / "schemas" / "hurray" / "container.ksy").read_text())
    assert {tag: e["id"] for tag, e in container["enums"]["kv_tag"].items()} == {
        int(tag): tag.name.lower() for tag in KVTag}


def test_container_codes():
    from hurray_decl.hurray.container.declarations import DEFINED_FILE_FLAGS, KV_ENTRY, RESERVED_KV_TAGS, VALUE_TAG

    assert DEFINED_FILE_FLAGS == 0x7 and RESERVED_KV_TAGS == range(0x08, 0xF0)
    assert _rule(VALUE_TAG, "HF-META-16").expected == "not 0x08-0xEF"
    assert _rule(VALUE_TAG, "HF-META-18").expected == "0x01-0x07 (no private tag is registered)"
    assert next(s.docs for s in KV_ENTRY.subcons if s.name == "value_tag") == (
        "0x01 string, 0x02 int64, 0x03 uint64, 0x04 float64, 0x05 bool, 0x06 bytes, 0x07 array")
    for value in range(256):
        assert all(rule.check(value, None) for rule in VALUE_TAG.rules()) == KVTag.has(value), value


# ---------------------------------------------------------------- the onnx-light enums at work

def test_data_types_are_the_protos():
    from hurray_decl.onnx_light._generated import onnx_light_pb2 as pb

    for code in DataType:
        assert pb.TensorProto.DataType.Value(code.name) == int(code)
    for code in LOGICAL_TYPES:
        assert code.dtype.kind == "f" or code.dtype.name == "bfloat16"
    with pytest.raises(KeyError):
        _ = DataType.STRING.dtype


def test_wire_types_are_protobufs():
    from google.protobuf.internal import wire_format

    assert [int(w) for w in protowire.WireType] == [
        wire_format.WIRETYPE_VARINT, wire_format.WIRETYPE_FIXED64, wire_format.WIRETYPE_LENGTH_DELIMITED,
        wire_format.WIRETYPE_START_GROUP, wire_format.WIRETYPE_END_GROUP, wire_format.WIRETYPE_FIXED32]
    assert protowire.WireType.I64.size == 8 and protowire.WireType.I32.size == 4


def test_methods_are_the_enum():
    from hurray_decl.errors import OnnxLightError
    from hurray_decl.onnx_light.methods import METHODS, method_row
    from hurray_decl.onnx_light.methods.cast import CAST_DTYPES
    from hurray_decl.onnx_light.plan import QuantizationBlockLayout
    from hurray_decl.onnx_light.validate import validate_layout

    assert METHODS.keys() == [int(m) for m in QuantizationMethod]
    assert [METHODS.get(int(m)).name for m in QuantizationMethod] == ["affine", "codebook", "cast"]
    for method in range(len(QuantizationMethod) + 2):
        layout = QuantizationBlockLayout(1, method=method, bits=4, signed_codes=1, books=1, entries=2)
        if method in [int(m) for m in QuantizationMethod]:
            validate_layout(layout, "run")
            assert method_row(method, "run").code == method
        else:
            with pytest.raises(OnnxLightError) as refused:
                validate_layout(layout, "run")
            assert refused.value.code == "OL-PLAN-07" and refused.value.expected == "0 affine, 1 codebook or 2 cast"
    assert list(CAST_DTYPES) == list(LOGICAL_TYPES)
    assert all(d.byteorder in "<=|" and d.itemsize == c.dtype.itemsize for c, d in CAST_DTYPES.items())


# ---------------------------------------------------------------- the raw_data field table

def _value():
    """A portable value with every root field non-empty and a codebook run: P = 6, n = 2, O = 1."""
    from hurray_decl.onnx_light import QuantizationFormat as F, make_quantization_plan, quantize_array

    plan = make_quantization_plan(F.QUAROT, 6, 4)
    plan.permutation = [5, 4, 3, 2, 1, 0]
    plan.transform_size = 2
    plan.forward = [1, 0, 0, 1]
    plan.inverse = [1, 0, 0, 1]
    plan.outliers = [3]
    return quantize_array(np.arange(6, dtype=np.float64) - 2.5, plan)


def _codebook_value():
    from hurray_decl.onnx_light import QuantizationFormat as F, make_quantization_plan, quantize_array

    plan = make_quantization_plan(F.NF4, 40, 16)
    plan.outliers = [1, 7]
    return quantize_array(np.linspace(-1, 1, 40).astype(np.float32), plan)


@pytest.mark.parametrize("make", [_value, _codebook_value])
def test_the_descriptor_is_the_field_table(make):
    from hurray_decl.onnx_light.wire import BLOCK, BLOCK_FIELDS, BLOCKS, ROOT, ROOT_FIELDS, merge_runs, read_geometry

    value = make()
    geometry = read_geometry(value.struct_type)
    fields = value.struct_type.structure.field
    assert [f.name for f in fields] == list(ROOT_FIELDS) and ROOT_FIELDS[-1] == BLOCKS
    for spec, field in zip(ROOT, fields):
        tensor = field.type.tensor_type
        assert (tensor.elem_type, [d.dim_value for d in tensor.shape.dim]) == (spec.data_type, spec.shape(geometry))
    runs = fields[len(ROOT)].type.struct_type.structure.field[1:]
    for run, merged in zip(runs, merge_runs(geometry.runs)):
        element = run.type.struct_type.array.element_type.struct_type.structure.field
        assert [f.name for f in element] == list(BLOCK_FIELDS)
        for spec, field in zip(BLOCK, element[1:]):
            tensor = field.type.tensor_type
            assert (tensor.elem_type, [d.dim_value for d in tensor.shape.dim]) == (
                spec.data_type, spec.shape(merged.layout))


@pytest.mark.parametrize("make", [_value, _codebook_value])
def test_the_payload_is_the_field_table(make):
    from hurray_decl.onnx_light.shared import parameters
    from hurray_decl.onnx_light.wire import (
        BLOCK,
        ROOT,
        block_dtype,
        field_spans,
        merge_runs,
        payload_schema,
        read_geometry,
        record_bytes,
    )

    value = make()
    raw = value.raw_data
    geometry = read_geometry(value.struct_type)
    root = field_spans(ROOT, geometry)
    parsed = payload_schema(geometry).parse(raw)
    assert root["reserved"] == (0, 1) and raw[0] == 0
    for spec in ROOT[1:]:
        start, size = root[spec.name]
        assert raw[start:start + size] == np.asarray(parsed[spec.name]).astype(spec.dtype).tobytes(), spec.name
    at = sum(size for _, size in root.values())
    locals_ = [root["outlier_values"]] if root["outlier_values"][1] else []
    first = 0
    for run in merge_runs(geometry.runs):
        record = block_dtype(run.layout)
        spans = field_spans(BLOCK, run.layout)
        assert record.itemsize == record_bytes(run.layout) == sum(size for _, size in spans.values())
        assert {name: (record.fields[name][1], record.fields[name][0].itemsize) for name in record.names} == spans
        stored = raw[at:at + run.blocks * record.itemsize]
        assert np.asarray(parsed.blocks[f"run_{first}"]).tobytes() == stored
        first += run.blocks
        locals_ += [(at + j * record.itemsize + spans["codes"][0], spans["codes"][1]) for j in range(run.blocks)]
        at += run.blocks * record.itemsize
    assert at == len(raw) == payload_schema(geometry).sizeof()
    merged: list[tuple[int, int]] = []
    for start, size in locals_:
        if merged and sum(merged[-1]) == start:
            merged[-1] = (merged[-1][0], merged[-1][1] + size)
        elif size:
            merged.append((start, size))
    assert parameters._local_ranges(value.struct_type, raw) == tuple(merged)


def test_a_non_square_transform_is_refused_where_it_was():
    from hurray_decl.errors import OnnxLightError
    from hurray_decl.onnx_light.wire import read_geometry

    value = _value()
    forward = value.struct_type.structure.field[2].type.tensor_type.shape.dim
    forward[1].dim_value = 3
    with pytest.raises(OnnxLightError) as refused:
        read_geometry(value.struct_type)
    assert (refused.value.code, refused.value.path, refused.value.actual, refused.value.expected) == (
        "OL-WIRE-17", "value -> struct_type -> forward", [2, 3], "[n, n]")
