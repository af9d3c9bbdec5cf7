"""The mutant catalogue: :data:`MUTANTS` (rule -> generator), the :func:`mutant` decorator the area
modules register with, :data:`EXCLUDED`, and the helpers every area shares (payload rows named by
the dump, patching raw_data, the cases)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hurray_decl.onnx_light.inputs import MODEL, VALUE
from hurray_decl.onnx_light.mutants.valid import PORTABLE, Case, Source, valid_value
from hurray_decl.onnx_light.profiles import QuantizationFormat
from hurray_decl.onnx_light.wire import pb


@dataclass(frozen=True)
class Mutant:
    rule: str
    build: Callable[[Source], Case]
    doc: str


MUTANTS: dict[str, Mutant] = {}


def mutant(rule: str, doc: str) -> Callable[[Callable[[Source], Case]], Callable[[Source], Case]]:
    """Register the decorated generator as the mutant of ``rule``."""
    def register(build: Callable[[Source], Case]) -> Callable[[Source], Case]:
        MUTANTS[rule] = Mutant(rule, build, doc)
        return build
    return register


def payload_rows(value: pb.EncodedValueProto, prefix: str) -> list[tuple[int, Any]]:
    """(offset within raw_data, row) of the dump rows whose path starts with ``prefix``: the dump
    names raw_data's bytes by the payload declaration."""
    from hurray_decl.onnx_light.dump import dump

    rows = dump(value.SerializeToString(), kind=VALUE).rows
    start = next(r.offset + r.size for r in rows if r.field == "raw_data:length")
    return [(r.offset - start, r) for r in rows if r.field.startswith(prefix)]


def patched(value: pb.EncodedValueProto, at: int, new: bytes) -> pb.EncodedValueProto:
    raw = bytearray(value.raw_data)
    raw[at:at + len(new)] = new
    value.raw_data = bytes(raw)
    return value


def value_case(value: pb.EncodedValueProto, rule: str, field: str, description: str) -> Case:
    return Case(value.SerializeToString(), VALUE, rule, field, description)


def model_case(model: pb.ModelProto, rule: str, field: str, description: str) -> Case:
    return Case(model.SerializeToString(), MODEL, rule, field, description)


def portable_value(src: Source, profiles: Sequence[QuantizationFormat] = PORTABLE, count: int | None = None,
              minimum: int = 0) -> pb.EncodedValueProto:
    count = src.integer(max(1, minimum), 24) if count is None else count
    return valid_value(src, src.choice(tuple(profiles)), count=count)


def value_fields(value: pb.EncodedValueProto) -> Any:
    return value.struct_type.structure.field


def run_fields(value: pb.EncodedValueProto) -> Any:
    return value_fields(value)[6].type.struct_type.structure.field[1:]


def block_header(value: pb.EncodedValueProto, run: int = 0) -> Any:
    return run_fields(value)[run].type.struct_type.array.element_type.struct_type.structure.field[0].constant


RUN = "struct_type.structure.field[6].type.struct_type.structure.field"


EXCLUDED: dict[str, str] = {
    "OL-WIRE-42": "has no code of its own: model checking of nested graphs reports the nested value's own rule "
                  "(the OL-WIRE-30 mutant family includes values inside an If branch)",
    "OL-SHR-11": "is about the error class (checker.ValidationError), not a refusal with a code of its own",
    "OL-SHR-24": "is raised by materializing a compact value against a set: in a model file the same fault is "
                 "an encoded-initializer fault, OL-SHR-22",
    "OL-SHR-25": "as OL-SHR-24; in a model file the same fault is OL-SHR-21",
    "OL-SHR-26": "as OL-SHR-24; in a model file the same fault is OL-SHR-23",
    "OL-ORT-31": "refuses exporting a valid portable matmulnbits value as MatMulNBits inputs: an API request, "
                 "not a fault a file can carry",
    "OL-OP-02": "is checked when the ai.rt operators run a graph (input dtypes at run time), not when a file is read",
    "OL-OP-03": "is checked when the ai.rt operators run a graph (a Quantize node without type), not by check_model",
    "OL-OP-07": "is checked when the ai.rt operators run a graph (Dequantize's dtype), not by check_model",
}
"""OL reader rules without a mutant, and why."""
