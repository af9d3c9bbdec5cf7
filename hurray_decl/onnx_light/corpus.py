"""The bundled onnx-light example corpus: a valid value of every profile and ORT layout, compact,
catalogue and nested-graph models, a tensor, and one invalid input per mutated OL reader rule.

The corpus is generated here from seeded builders (:mod:`.mutants`) and shipped in
``hurray_decl/hurray/examples/onnx_light/`` (``.pb`` values and tensors, ``.onnx`` models, and
``manifest.json`` with each file's kind, expected verdict and, for an invalid one, the field it
breaks); a test keeps the shipped copy equal to this generator, and ``hurray-decl audit`` with
no folder audits it beside the Hurray corpus. Regenerate with
``python -m hurray_decl.onnx_light.corpus``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from hurray_decl.onnx_light.inputs import MODEL
from hurray_decl.onnx_light.mutants import (
    EXCLUDED,
    MUTANTS,
    PORTABLE,
    RandomSource,
    catalogue_model,
    compact_model,
    ort_value,
    valid_case,
    valid_value,
)
from hurray_decl.onnx_light.ort import FLOATING, IMPLICIT, ORT_FORMATS, PACKED
from hurray_decl.onnx_light.profiles import PROFILES, QuantizationFormat

__all__ = ["Example", "bundled", "examples", "manifest", "read_manifest", "write"]

FOLDER = ("examples",)
MANIFEST = "manifest.json"
SEED = 12
"""The seed of every builder; examples differ by profile and rule, not by seed."""
EXTENSIONS = {MODEL: ".onnx"}
"""File extension by kind (values and tensors are ``.pb``)."""


@dataclass(frozen=True)
class Example:
    name: str
    kind: str
    description: str
    data: bytes
    expect: str | None   # the rule a reader must report, None for a valid input
    field: str = ""      # the path prefix of the field an invalid input breaks

    @property
    def file(self) -> str:
        return self.name + EXTENSIONS.get(self.kind, ".pb")


def _valid() -> list[Example]:
    out = []
    for fmt in PORTABLE:
        block = 12 if PROFILES[fmt].learned else 4
        value = valid_value(RandomSource(SEED + int(fmt)), fmt, count=12, block_size=block, name=fmt.wire_name)
        out.append(Example(f"valid_{fmt.wire_name}", "value", f"{fmt.wire_name}, 12 elements",
                           value.SerializeToString(), None))
    for fmt in ORT_FORMATS:
        for storage in (IMPLICIT, PACKED, FLOATING):
            value = ort_value(fmt, RandomSource(SEED + int(fmt)), storage)
            out.append(Example(f"valid_{fmt.wire_name}_{storage}", "value",
                               f"{fmt.wire_name}, {storage} zero points", value.SerializeToString(), None))
    empty = valid_value(RandomSource(SEED), QuantizationFormat.INT4, count=0)
    out.append(Example("valid_empty_int4", "value", "an empty int4 tensor (payload: the reserved byte)",
                       empty.SerializeToString(), None))
    models = [
        ("valid_compact_int4", "a parameter set and a compact int4 value", compact_model(RandomSource(SEED),
                                                                                          QuantizationFormat.INT4)),
        ("valid_compact_ort_int4", "a parameter set and a compact ORT int4 value",
         compact_model(RandomSource(SEED), QuantizationFormat.ORT_MATMULNBITS_INT4)),
        ("valid_catalogue", "a value whose descriptor is a type_ref into the model catalogue",
         catalogue_model(RandomSource(SEED))),
    ]
    out += [Example(name, MODEL, text, model.SerializeToString(), None) for name, text, model in models]
    tensor = valid_case(RandomSource(SEED), "tensor")
    out.append(Example("valid_tensor", tensor.kind, tensor.description, tensor.data, None))
    return out


def examples() -> list[Example]:
    """The whole corpus, in a stable order."""
    corpus = _valid()
    for rule, mutant in MUTANTS.items():
        case = mutant.build(RandomSource(SEED))
        corpus.append(Example(f"invalid_{rule}", case.kind, mutant.doc, case.data, rule, case.field))
    return corpus


def manifest(corpus: list[Example]) -> dict:
    return {
        "values": [{"file": e.file, "kind": e.kind, "description": e.description, "expect": e.expect,
                    "field": e.field} for e in corpus],
        "excluded": EXCLUDED,
    }


def bundled() -> Path:
    """The folder the package ships the corpus in."""
    return Path(str(resources.files("hurray_decl.onnx_light").joinpath(*FOLDER)))


def write(folder: Path) -> None:
    """Write the corpus and its manifest into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    corpus = examples()
    for example in corpus:
        (folder / example.file).write_bytes(example.data)
    (folder / MANIFEST).write_text(json.dumps(manifest(corpus), indent=2) + "\n", encoding="utf-8")


def read_manifest(folder: Path) -> dict[str, dict]:
    """The manifest's entries by file name (empty when the folder has none)."""
    path = folder / MANIFEST
    if not path.is_file():
        return {}
    return {entry["file"]: entry for entry in json.loads(path.read_text(encoding="utf-8")).get("values", [])}


if __name__ == "__main__":
    write(bundled())
    print(f"wrote {len(examples())} onnx-light examples to {bundled()}")
