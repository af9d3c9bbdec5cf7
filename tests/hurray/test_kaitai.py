"""The Kaitai Struct schemas (schemas/hurray/*.ksy) against the Construct declarations.

* The committed readers in generated/ are exactly what the compiler makes of the .ksy files
  today (staleness); this needs node and schemas/node_modules and fails, not skips, without
  them.
* The .ksy files follow STYLE.md (meta order, enum docs, a rule ID beside every ``valid:``).
* The scheme enum of quantization.ksy is the registry's set of assigned tags.
* The generated Kaitai reader and ``hurray_decl.decode_quantization`` agree field by field on
  every conformance vector, on hand-made payloads of every scheme and on hypothesis-generated
  valid and mutated bytes; they accept and reject alike, and when both reject they name the
  same field, with a rule ID that the failing ``valid:``'s doc names.
* tensor_descriptor.ksy and ``read_tensor_descriptor`` agree the same way on whole tensor
  descriptors (section (d)): the 11 conformance descriptors, hypothesis-generated valid ones,
  rule-labelled mutants, mutated and arbitrary bytes. The rules the .ksy cannot express are
  listed there and left out of the accept/reject comparison, and only those.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import kaitaistruct
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings, strategies as st

import hurray_decl
from generated.hurray.quantization import Quantization
from hurray_decl import HurrayDeclError, decode_quantization
from hurray_decl.hurray.quantization import SCHEMES
from hurray_decl.hurray.strategies import quantization_descriptors
from tests.paths import CONFORMANCE, REPO, RULES

SCHEMAS = REPO / "schemas"
GENERATED = REPO / "generated"
KSY_DIR = SCHEMAS / "hurray"
REGENERATE = "schemas/regenerate"

NONE32 = 0xFFFF_FFFF
RULE_ID = re.compile(r"\b(?:HQ|HT|OL|HF)-[A-Z0-9]+-\d+\b|\bHE-\d+\b")
ASSIGNED = {row.tag: row for row in SCHEMES if not row.private}

# Quantization payloads inside the conformance descriptors: (start, end) byte offsets. The
# worked decoding in DIGEST.md § 8 places the per-block payload at bytes 81-104.
VECTOR_PAYLOADS = {"quant_per_block_int4_128x128.bin": (81, 105)}


# --- the .ksy sources ----------------------------------------------------------------------


def ksy_files() -> list[Path]:
    return sorted(SCHEMAS.rglob("*.ksy"))


@cache
def ksy(name: str) -> dict[str, Any]:
    """A schema of schemas/hurray by meta/id."""
    return yaml.safe_load((KSY_DIR / f"{name}.ksy").read_text())


def _class_name(ksy_id: str) -> str:
    return "".join(part.capitalize() for part in ksy_id.split("_"))


@cache
def ksy_by_class() -> dict[str, dict[str, Any]]:
    """Each schema of schemas/hurray keyed by the Python class the compiler names after it."""
    return {_class_name(p.stem): ksy(p.stem) for p in sorted(KSY_DIR.glob("*.ksy"))}


def is_check(attr: dict[str, Any]) -> bool:
    """A zero-size attribute that only validates (a cross-field or length rule)."""
    return "-checks" in attr


def field_attrs(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The seq attributes that hold wire fields (checks excluded)."""
    return [a for a in spec.get("seq", []) if not is_check(a)]


# --- reading with each side ----------------------------------------------------------------


@dataclass
class Outcome:
    """What one reader made of a payload: its fields, or where and why it refused it."""

    fields: dict[str, Any] | None = None
    refused: str | None = None  # the refused field; "length" for a payload too short
    codes: set[str] = field(default_factory=set)  # rule IDs that may explain the refusal
    offset: int | None = None  # byte offset of the refused field, when a position is named
    detail: str = ""

    @property
    def accepted(self) -> bool:
        return self.fields is not None


def _plain(value: Any) -> Any:
    if isinstance(value, kaitaistruct.KaitaiStruct):
        raise TypeError("nested structure where a value was expected")
    if isinstance(value, int) and not isinstance(value, bool):  # IntEnum members included
        return int(value)
    return value


def kaitai_fields(q: Quantization) -> dict[str, Any]:
    """The wire fields of a parsed payload as one flat mapping, as the .ksy names them."""
    values: dict[str, Any] = {}
    for attr in field_attrs(ksy("quantization")):
        name = attr["id"]
        if name == "scheme_fields":
            body = q.scheme_fields
            spec = ksy_by_class()[type(body).__name__]
            for inner in field_attrs(spec):
                values[inner["id"]] = _plain(getattr(body, inner["id"]))
            for inst in spec.get("instances", {}):
                values[inst] = _plain(getattr(body, inst))
        else:
            values[name] = _plain(getattr(q, name))
    return values


_SIZES = {"u1": 1, "u2": 2, "u4": 4, "s4": 4, "f4": 4}


def _kaitai_owners(exc: BaseException) -> list[kaitaistruct.KaitaiStruct]:
    """The Kaitai objects in the traceback of ``exc``, outermost first."""
    owners = []
    tb = exc.__traceback__
    while tb is not None:
        candidate = tb.tb_frame.f_locals.get("self")
        fresh = not owners or owners[-1] is not candidate
        if isinstance(candidate, kaitaistruct.KaitaiStruct) and fresh:
            owners.append(candidate)
        tb = tb.tb_next
    return owners


def _failing_attr(exc: kaitaistruct.ValidationFailedError) -> tuple[dict[str, Any], Any]:
    """The .ksy attribute whose ``valid:`` raised, and the Kaitai object that was reading it.

    The schema is the module the object's class was compiled from; ``src_path`` is
    ``/seq/N`` for a schema's top-level type and ``/types/NAME/seq/N`` for one of its types.
    """
    owners = _kaitai_owners(exc)
    assert owners, f"no Kaitai object in the traceback of {exc!r}"
    owner = owners[-1]
    spec = ksy(type(owner).__module__.rsplit(".", 1)[-1])
    match = re.fullmatch(r"(?:/types/(\w+))?/seq/(\d+)", exc.src_path)
    assert match, f"unexpected src_path {exc.src_path!r}"
    if match.group(1):
        spec = spec["types"][match.group(1)]
    return spec["seq"][int(match.group(2))], owner


def read_kaitai(payload: bytes) -> Outcome:
    try:
        q = Quantization.from_bytes(payload)
    except EOFError as exc:
        return Outcome(refused="length", codes={"HQ-HDR-04"}, detail=f"EOFError: {exc}")
    except kaitaistruct.ValidationFailedError as exc:
        attr, _ = _failing_attr(exc)
        name = attr.get("-checks", attr["id"])
        offset = None
        if not is_check(attr):
            size = attr.get("size", _SIZES.get(attr.get("type")))
            offset = exc.io.pos() - size
        return Outcome(
            refused=name, codes=set(RULE_ID.findall(attr.get("doc", ""))), offset=offset,
            detail=f"{type(exc).__name__} at {attr['id']}: {exc}",
        )
    return Outcome(fields=kaitai_fields(q))


def read_construct(payload: bytes) -> Outcome:
    try:
        model = decode_quantization(payload)
    except HurrayDeclError as exc:
        field_name = exc.path.rsplit(" -> ", 1)[-1]
        if exc.code == "HQ-HDR-04":
            field_name = "length"
        return Outcome(refused=field_name, codes={exc.code}, offset=exc.offset, detail=str(exc))
    return Outcome(fields=model.model_dump())


def _same(kaitai_value: Any, model_value: Any) -> bool:
    if isinstance(kaitai_value, float) or isinstance(model_value, float):
        return struct.pack("<f", kaitai_value) == struct.pack("<f", model_value)
    if model_value is None:  # an absent buffer index is NONE32 on the wire
        return kaitai_value == NONE32
    return kaitai_value == model_value


def assert_agree(payload: bytes) -> Outcome:
    """Both readers accept with equal fields, or both refuse at the same field."""
    k, c = read_kaitai(payload), read_construct(payload)
    shown = payload.hex(" ").upper() or "(empty)"
    assert k.accepted == c.accepted, (
        f"payload {shown}: Kaitai {'accepts' if k.accepted else 'refuses: ' + k.detail}; "
        f"Construct {'accepts' if c.accepted else 'refuses: ' + c.detail}"
    )
    if k.accepted:
        assert k.fields is not None and c.fields is not None
        reserved = {name: v for name, v in k.fields.items() if name == "reserved"}
        assert all(v == bytes(len(v)) for v in reserved.values())
        kaitai_names = set(k.fields) - set(reserved)
        model_only = {"symmetric"} - kaitai_names  # per-tensor: derived from zero_point
        assert set(c.fields) - model_only == kaitai_names, f"payload {shown}: field names differ"
        for name in sorted(kaitai_names):
            assert _same(k.fields[name], c.fields[name]), (
                f"payload {shown}: {name} is {k.fields[name]!r} in Kaitai, "
                f"{c.fields[name]!r} in Construct"
            )
        return c
    assert (k.refused, c.refused) != (None, None)
    assert k.refused == c.refused, (
        f"payload {shown}: refused at different fields\n  Kaitai:    {k.detail}\n"
        f"  Construct: {c.detail}"
    )
    assert c.codes <= k.codes, (
        f"payload {shown}: Construct's code {c.codes} is not among the rules the Kaitai "
        f"check names {sorted(k.codes)}\n  Kaitai:    {k.detail}\n  Construct: {c.detail}"
    )
    if k.offset is not None:
        assert c.offset == k.offset, (
            f"payload {shown}: field {c.refused} at byte {c.offset} in Construct, "
            f"{k.offset} in Kaitai"
        )
    return c


# --- (a) the generated readers are what the compiler makes of the .ksy files ---------------


def test_generated_readers_are_fresh(tmp_path: Path) -> None:
    node = shutil.which("node")
    compiler = SCHEMAS / "node_modules" / "kaitai-struct-compiler"
    hint = f"run `{REGENERATE}` (it runs `npm ci --prefix schemas` when node_modules is missing)"
    if node is None:
        pytest.fail(f"node is not installed; the staleness check compiles the .ksy files: {hint}")
    if not compiler.is_dir() or not (SCHEMAS / "node_modules" / "yaml").is_dir():
        pytest.fail(f"schemas/node_modules is missing: {hint}")
    run = subprocess.run(
        [node, str(SCHEMAS / "compile.mjs"), str(tmp_path)],
        capture_output=True, text=True, cwd=REPO,
    )
    assert run.returncode == 0, f"compiling the .ksy files failed:\n{run.stderr}"
    fresh = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*.py")}
    assert fresh, "the compiler wrote nothing"
    modules = {p for p in fresh if p.name != "__init__.py"}
    assert {p.with_suffix("") for p in modules} == {
        p.relative_to(SCHEMAS).with_suffix("") for p in ksy_files()
    }, "one generated module per .ksy expected"
    stale = [str(p) for p, text in sorted(fresh.items())
             if not (GENERATED / p).is_file() or (GENERATED / p).read_bytes() != text]
    # A module left behind by a deleted or renamed .ksy is stale too.
    compiled_dirs = {p.parent for p in modules}
    orphans = [str(p.relative_to(GENERATED)) for d in compiled_dirs
               for p in sorted((GENERATED / d).glob("*.py"))
               if p.relative_to(GENERATED) not in fresh]
    assert not stale and not orphans, (
        f"generated/ is out of date with schemas/ (stale: {stale}; orphaned: {orphans}); "
        f"run `{REGENERATE}` and commit the result"
    )


# --- the .ksy conventions (STYLE.md § kaitai_struct_formats) -------------------------------

META_ORDER = ["id", "title", "license", "ks-version", "endian", "imports"]
TOP_ORDER = ["meta", "doc", "doc-ref", "params", "seq", "instances", "types", "enums"]
TYPE_ORDER = ["doc", "doc-ref", "params", "seq", "instances", "types", "enums"]


def _type_name(attr: dict[str, Any]) -> str | None:
    """The user type an attribute reads (``shard_bound(_index)`` -> ``shard_bound``)."""
    kind = attr.get("type")
    return kind.split("(", 1)[0] if isinstance(kind, str) else None


def _check_only(types: dict[str, Any], name: str | None) -> bool:
    """A type that reads nothing and only validates: every attribute of it is a check."""
    spec = types.get(name) if name else None
    return bool(spec and spec.get("seq")) and all(is_check(a) for a in spec["seq"])


@pytest.mark.parametrize("path", ksy_files(), ids=lambda p: p.stem)
def test_ksy_follows_the_style(path: Path) -> None:
    spec = yaml.safe_load(path.read_text())
    assert list(spec) == [k for k in TOP_ORDER if k in spec], "top-level keys out of order"
    meta = spec["meta"]
    assert list(meta) == [k for k in META_ORDER if k in meta], "meta keys out of order"
    assert meta["id"] == path.stem
    assert {"title", "license", "ks-version", "endian"} <= set(meta)
    assert str(meta["ks-version"]) == "0.11"
    assert spec.get("doc"), "the schema needs a doc"
    known = set(RULE_ID.findall(RULES.read_text()))
    types = spec.get("types", {})
    scopes = {"(top level)": spec}
    for name, inner in types.items():
        assert list(inner) == [k for k in TYPE_ORDER if k in inner], f"type {name}: key order"
        assert inner.get("doc"), f"type {name} has no doc"
        scopes[f"type {name}"] = inner
    for where, scope in scopes.items():
        instances = [dict(v, id=k) for k, v in scope.get("instances", {}).items()]
        for attr in list(scope.get("seq", [])) + instances:
            name = f"{where}: {attr['id']}"
            assert attr.get("doc"), f"{name} has no doc"
            if "valid" in attr:
                ids = RULE_ID.findall(attr["doc"])
                assert ids, f"{name}: a valid: needs a doc naming its rule"
                assert set(ids) <= known, f"{name}: unknown rule IDs {set(ids) - known}"
            if is_check(attr):
                # A check reads nothing: a zero-size valid:, or a repeat of a check-only type
                # (one check per axis, buffer or level), whose doc names the rule as well.
                if "valid" in attr:
                    assert attr.get("size") == 0, f"{name}: a check reads nothing"
                else:
                    assert "repeat" in attr and _check_only(types, _type_name(attr)), (
                        f"{name}: a check is a zero-size valid: or a repeat of a check-only type"
                    )
                    assert set(RULE_ID.findall(attr["doc"])) & known, f"{name}: name the rule"
            if re.fullmatch(r"reserved\d*", attr["id"]):
                assert attr.get("-orig-id") == "_" + attr["id"], f"{name}: -orig-id"
    for enum in spec.get("enums", {}).values():
        for value, entry in enum.items():
            assert isinstance(entry, dict) and entry.get("id") and entry.get("doc"), (
                f"enum value {value} needs an id and a doc"
            )


# --- (b) the scheme enum is the registry ---------------------------------------------------


def test_scheme_enum_is_the_registry() -> None:
    registry = {tag: row.name for tag, row in ASSIGNED.items()}
    assert {int(m): m.name for m in Quantization.Scheme} == registry
    source = ksy("quantization")
    assert {tag: entry["id"] for tag, entry in source["enums"]["scheme"].items()} == registry
    cases = source["seq"][[a["id"] for a in source["seq"]].index("scheme_fields")]["type"]["cases"]
    assert {k.removeprefix("scheme::"): v for k, v in cases.items()} == {
        name: f"{name}(flags)" for name in registry.values()
    }
    assert sorted(source["meta"]["imports"]) == sorted(registry.values())
    for tag, name in registry.items():
        fixed = sum(_SIZES.get(a.get("type"), a.get("size", 0)) for a in field_attrs(ksy(name)))
        assert 4 + fixed == ASSIGNED[tag].length, f"{name}: fixed length differs from the registry"


# --- (c) agreement -------------------------------------------------------------------------


def test_conformance_vectors_have_known_payloads() -> None:
    """Every vector the manifest marks as quantized has its payload slice listed here."""
    manifest = json.loads((CONFORMANCE / "manifest.json").read_text())
    quantized = {Path(entry["file"]).name for entry in manifest["descriptors"]
                 if entry["expect"].get("has_quantization")}
    assert quantized == set(VECTOR_PAYLOADS)


@pytest.mark.parametrize("name", sorted(VECTOR_PAYLOADS))
def test_conformance_vector_payloads_agree(name: str) -> None:
    data = (CONFORMANCE / "descriptors" / name).read_bytes()
    start, end = VECTOR_PAYLOADS[name]
    length = int.from_bytes(data[start - 4:start], "little")
    assert end - start == length, "quantization_length disagrees with the payload slice"
    outcome = assert_agree(data[start:end])
    assert outcome.accepted


def _payload(*parts: bytes | int | str, pad: bytes = b"") -> bytes:
    out = b""
    for part in parts:
        if isinstance(part, str):
            out += bytes.fromhex(part)
        elif isinstance(part, int):
            out += struct.pack("<I", part)
        else:
            out += part
    return out + pad


def _f32(value: float) -> bytes:
    return struct.pack("<f", value)


# Valid payloads of every scheme, with and without writer padding.
VALID = {
    "per_tensor_affine": _payload("01 01 00 00", _f32(0.5), struct.pack("<i", -3), "00000000"),
    "per_tensor_affine negative subnormal scale": _payload(
        "01 01 00 00", struct.pack("<I", 0x8000_0001), struct.pack("<i", 0), "00000000"
    ),
    "per_tensor_affine padded": _payload(
        "01 01 00 00", _f32(1e-3), struct.pack("<i", 7), "00000000", pad=b"\xff\x01"
    ),
    "per_channel_affine worked example": bytes.fromhex(
        "02010000 00000000 01000000 02000000 03000000"
    ),
    "per_channel_affine symmetric": _payload("02 01 01 00", 1, 1, NONE32, "03000000"),
    "per_channel_affine shared index": _payload("02 01 00 00", 3, 2, 2, "03000000"),
    "per_block_affine vector": _payload("03 01 01 00", 1, 128, 1, NONE32, "01000000"),
    "per_block_affine asymmetric bf16": _payload("03 01 00 00", 0, 2, 1, 2, "02000000"),
    "per_block_affine largest block f32 padded": _payload(
        "03 01 00 00", 5, 1 << 31, 3, 4, "03000000", pad=bytes(8)
    ),
    "nf4": _payload("04 01 00 00", 0, 64, 1),
    "nf4 smallest block padded": _payload("04 01 00 00", 2, 8, 254, pad=b"\x00"),
    "mxfp": _payload("05 01 00 00", 1, 32, 1),
    "mxfp smallest block": _payload("05 01 00 00", 0, 16, 1),
    "mxfp largest block padded": _payload("05 01 00 00", 0, 2048, 1, pad=b"\x12\x34\x56"),
}


@pytest.mark.parametrize("payload", VALID.values(), ids=VALID.keys())
def test_hand_made_valid_payloads_agree(payload: bytes) -> None:
    assert assert_agree(payload).accepted


def _nan() -> bytes:
    return struct.pack("<I", 0x7FC0_0000)


# Payloads breaking exactly one bytes-level rule: (payload, refused field, rule ID).
INVALID = {
    "empty": (b"", "length", "HQ-HDR-04"),
    "tag 0x00": (_payload("00 01 00 00", bytes(12)), "scheme_tag", "HQ-HDR-07"),
    "tag 0xFF": (_payload("FF 01 00 00", bytes(12)), "scheme_tag", "HQ-HDR-07"),
    "tag 0x06 unassigned": (_payload("06 01 00 00", bytes(12)), "scheme_tag", "HQ-HDR-08"),
    "tag 0x5F unassigned": (_payload("5F 01 00 00", bytes(12)), "scheme_tag", "HQ-HDR-08"),
    "tag 0x60 reserved": (_payload("60 01 00 00", bytes(12)), "scheme_tag", "HQ-HDR-09"),
    "tag 0xEF reserved": (_payload("EF 01 00 00", bytes(12)), "scheme_tag", "HQ-HDR-10"),
    "tag 0xF0 private": (_payload("F0 01 00 00", bytes(12)), "scheme_tag", "HQ-EXT-03"),
    "header cut": (bytes.fromhex("03 01 01"), "length", "HQ-HDR-04"),
    "header cut, bad version": (bytes.fromhex("03 02"), "length", "HQ-HDR-04"),
    "version 0": (_payload("04 00 00 00", 0, 64, 1), "scheme_version", "HQ-HDR-12"),
    "version 2": (_payload("04 02 00 00", 0, 64, 1), "scheme_version", "HQ-HDR-11"),
    "version 2, short": (bytes.fromhex("04 02 00 00"), "scheme_version", "HQ-HDR-11"),
    "per-tensor flags": (_payload("01 01 01 00", _f32(1.0), bytes(8)), "flags", "HQ-HDR-13"),
    "per-tensor cut": (_payload("01 01 00 00", _f32(1.0), bytes(7)), "length", "HQ-HDR-04"),
    "per-tensor cut, bad flags": (_payload("01 01 01 00"), "length", "HQ-HDR-04"),
    "per-tensor +0": (_payload("01 01 00 00", _f32(0.0), bytes(8)), "scale", "HQ-PT-02"),
    "per-tensor -0": (_payload("01 01 00 00", _f32(-0.0), bytes(8)), "scale", "HQ-PT-02"),
    "per-tensor NaN": (_payload("01 01 00 00", _nan(), bytes(8)), "scale", "HQ-PT-03"),
    "per-tensor inf": (_payload("01 01 00 00", _f32(float("inf")), bytes(8)), "scale", "HQ-PT-03"),
    "per-tensor -inf": (
        _payload("01 01 00 00", _f32(float("-inf")), bytes(8)), "scale", "HQ-PT-03"
    ),
    "per-tensor reserved": (
        _payload("01 01 00 00", _f32(1.0), bytes(4), "00000001"), "reserved", "HQ-PT-05"
    ),
    "per-channel flags bit 1": (
        _payload("02 01 02 00", 0, 1, 2, "03000000"), "flags", "HQ-HDR-13"
    ),
    "per-channel flags bit 15": (
        _payload("02 01 01 80", 0, 1, NONE32, "03000000"), "flags", "HQ-HDR-13"
    ),
    "per-channel cut": (_payload("02 01 00 00", 0, 1, 2, "030000"), "length", "HQ-HDR-04"),
    "per-channel scale index NONE32": (
        _payload("02 01 00 00", 0, NONE32, 2, "03000000"), "scale_buffer_index", "HQ-BUF-01"
    ),
    "per-channel scale type f16": (
        _payload("02 01 00 00", 0, 1, 2, "01000000"), "scale_type_tag", "HQ-PC-06"
    ),
    "per-channel reserved": (
        _payload("02 01 00 00", 0, 1, 2, "03000100"), "reserved", "HQ-PC-07"
    ),
    "per-channel symmetric with zero-point index": (
        _payload("02 01 01 00", 0, 1, 2, "03000000"), "zero_point_buffer_index", "HQ-PC-04"
    ),
    "per-channel asymmetric without zero-point index": (
        _payload("02 01 00 00", 0, 1, NONE32, "03000000"), "zero_point_buffer_index", "HQ-PC-05"
    ),
    "per-block flags": (
        _payload("03 01 03 00", 0, 32, 1, NONE32, "01000000"), "flags", "HQ-HDR-13"
    ),
    "per-block cut": (_payload("03 01 01 00", 0, 32, 1, NONE32), "length", "HQ-HDR-04"),
    "per-block block_size 3": (
        _payload("03 01 01 00", 0, 3, 1, NONE32, "01000000"), "block_size", "HQ-PB-03"
    ),
    "per-block block_size 1": (
        _payload("03 01 01 00", 0, 1, 1, NONE32, "01000000"), "block_size", "HQ-PB-04"
    ),
    "per-block scale index NONE32": (
        _payload("03 01 01 00", 0, 32, NONE32, NONE32, "01000000"), "scale_buffer_index",
        "HQ-BUF-01",
    ),
    "per-block scale type 0": (
        _payload("03 01 01 00", 0, 32, 1, NONE32, "00000000"), "scale_type_tag", "HQ-PB-08"
    ),
    "per-block scale type 4": (
        _payload("03 01 01 00", 0, 32, 1, NONE32, "04000000"), "scale_type_tag", "HQ-PB-08"
    ),
    "per-block reserved": (
        _payload("03 01 01 00", 0, 32, 1, NONE32, "01000080"), "reserved", "HQ-PB-09"
    ),
    "per-block symmetric with zero-point index": (
        _payload("03 01 01 00", 0, 32, 1, 2, "01000000"), "zero_point_buffer_index", "HQ-PB-10"
    ),
    "per-block asymmetric without zero-point index": (
        _payload("03 01 00 00", 0, 32, 1, NONE32, "01000000"), "zero_point_buffer_index",
        "HQ-PB-11",
    ),
    "nf4 flags": (_payload("04 01 00 01", 0, 64, 1), "flags", "HQ-HDR-13"),
    "nf4 cut": (_payload("04 01 00 00", 0, 64, "0100"), "length", "HQ-HDR-04"),
    "nf4 block_size 12": (_payload("04 01 00 00", 0, 12, 1), "block_size", "HQ-NF4-03"),
    "nf4 block_size 4": (_payload("04 01 00 00", 0, 4, 1), "block_size", "HQ-NF4-04"),
    "nf4 scale index NONE32": (
        _payload("04 01 00 00", 0, 64, NONE32), "scale_buffer_index", "HQ-BUF-01"
    ),
    "mxfp flags": (_payload("05 01 01 00", 0, 32, 1), "flags", "HQ-HDR-13"),
    "mxfp cut": (_payload("05 01 00 00", 0, 32), "length", "HQ-HDR-04"),
    "mxfp block_size 48": (_payload("05 01 00 00", 0, 48, 1), "block_size", "HQ-MX-03"),
    "mxfp block_size 8": (_payload("05 01 00 00", 0, 8, 1), "block_size", "HQ-MX-04"),
    "mxfp block_size 4096": (_payload("05 01 00 00", 0, 4096, 1), "block_size", "HQ-MX-05"),
    "mxfp scale index NONE32": (
        _payload("05 01 00 00", 0, 32, NONE32), "scale_buffer_index", "HQ-BUF-01"
    ),
}


@pytest.mark.parametrize("case", INVALID.values(), ids=INVALID.keys())
def test_hand_made_invalid_payloads_agree(case: tuple[bytes, str, str]) -> None:
    payload, field_name, code = case
    outcome = assert_agree(payload)
    assert not outcome.accepted
    assert (outcome.refused, outcome.codes) == (field_name, {code}), outcome.detail


@settings(max_examples=150)
@given(descriptor=quantization_descriptors(), padding=st.binary(max_size=12))
def test_generated_valid_payloads_agree(descriptor: Any, padding: bytes) -> None:
    payload = hurray_decl.encode_quantization(descriptor) + padding
    outcome = assert_agree(payload)
    assert outcome.accepted
    assert outcome.fields == descriptor.model_copy(update={"padding": padding}).model_dump()


_INTERESTING = st.sampled_from(
    [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x07, 0x10, 0x7F, 0x80, 0xFE, 0xFF]
)
# Values that sit on a rule's edge once written into a whole field (little-endian, cut to the
# field's width): zero, one, small non-powers of two, block-size bounds, NONE32, and the
# float32 bit patterns of -0, +inf, -inf, NaN and a subnormal.
_FIELD_VALUES = st.sampled_from([
    0, 1, 2, 3, 4, 7, 8, 12, 15, 16, 48, 2048, 2049, 4096, 1 << 31, (1 << 31) + 1, NONE32,
    0x8000_0000, 0x7F80_0000, 0xFF80_0000, 0x7FC0_0000, 0xFFC0_0001, 0x0000_0001, 0x0100_0000,
])


@st.composite
def mutated_payloads(draw: st.DrawFn) -> bytes:
    """A valid payload with a few fields or bytes overwritten, then possibly cut or extended."""
    data = bytearray(hurray_decl.encode_quantization(draw(quantization_descriptors())))
    offsets = ASSIGNED[data[0]].offsets
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        if draw(st.booleans()):
            # A whole field (never the tag, so that the scheme fields are reached) gets an
            # edge value.
            name = draw(st.sampled_from(sorted(n for n in offsets if n != "scheme_tag")))
            start, size = offsets[name]
            value = draw(st.one_of(_FIELD_VALUES, st.integers(min_value=0, max_value=NONE32)))
            data[start:start + size] = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        else:
            index = draw(st.integers(min_value=0, max_value=len(data) - 1))
            data[index] = draw(st.one_of(_INTERESTING, st.integers(min_value=0, max_value=255)))
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        del data[draw(st.integers(min_value=0, max_value=len(data))):]
    return bytes(data) + draw(st.binary(max_size=4))


@settings(max_examples=400)
@given(payload=mutated_payloads())
@example(payload=bytes.fromhex("03 01 01 00 01000000 80000000 01000000 ffffffff 01 000000"))
def test_mutated_payloads_agree(payload: bytes) -> None:
    assert_agree(payload)


# Valid bases for the exhaustive edits below: each scheme, symmetric and asymmetric alike.
BASES = {
    "per_tensor_affine": VALID["per_tensor_affine"],
    "per_channel_affine": VALID["per_channel_affine worked example"],
    "per_channel_affine symmetric": VALID["per_channel_affine symmetric"],
    "per_block_affine": VALID["per_block_affine asymmetric bf16"],
    "per_block_affine symmetric": VALID["per_block_affine vector"],
    "nf4": VALID["nf4"],
    "mxfp": VALID["mxfp"],
}
_EDGE_VALUES = (
    0, 1, 2, 3, 4, 7, 8, 12, 15, 16, 48, 2048, 2049, 4096, 1 << 31, (1 << 31) + 1, NONE32,
    0x8000_0000, 0x7F80_0000, 0xFF80_0000, 0x7FC0_0000, 0xFFC0_0001, 0x0000_0001, 0x0100_0000,
    0x0000_0100, 0x0000_8000,
)


def _with(payload: bytes, offsets: dict[str, tuple[int, int]], name: str, value: int) -> bytes:
    start, size = offsets[name]
    data = bytearray(payload)
    data[start:start + size] = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
    return bytes(data)


@pytest.mark.parametrize("base", BASES.values(), ids=BASES.keys())
def test_every_field_edge_value_agrees(base: bytes) -> None:
    """Each field (the tag excepted) set to each edge value; then every pair of fields."""
    offsets = ASSIGNED[base[0]].offsets
    names = sorted(n for n in offsets if n != "scheme_tag")
    for name in names:
        for value in _EDGE_VALUES:
            assert_agree(_with(base, offsets, name, value))
    pair_values = (0, 3, 0x8000_0000, 0x7FC0_0000, NONE32)
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            for a in pair_values:
                for b in pair_values:
                    assert_agree(_with(_with(base, offsets, first, a), offsets, second, b))


@settings(max_examples=150)
@given(payload=st.one_of(
    st.binary(max_size=32),
    st.tuples(st.sampled_from(sorted(ASSIGNED)), st.binary(max_size=28)).map(
        lambda t: bytes([t[0]]) + t[1]
    ),
))
def test_arbitrary_bytes_agree(payload: bytes) -> None:
    assert_agree(payload)


# --- (d) tensor descriptors: tensor_descriptor.ksy against read_tensor_descriptor ----------
#
# Both readers read the same bytes. Where Construct accepts, Kaitai accepts with the same
# value in every field. Where Kaitai accepts, Construct accepts too, unless it refuses for a
# rule the .ksy does not express (UNEXPRESSED below). Where both refuse and Construct's rule
# is expressed, the failing ``valid:``'s doc names Construct's rule: the .ksy checks fields as
# it reads them and its cross-section rules after the last section, in read_tensor_descriptor's
# order, so the first failure is the same.
#
# What the .ksy does not express, and why (these alone are left out of the accept/reject
# comparison, and only when read_tensor_descriptor raises them after all sections were read):
# * the quantization descriptor against its tensor: storage type, axis < rank, the DYNAMIC
#   axis, block_size against shape[axis], MXFP's exact multiple, the per-tensor zero point
#   against the storage range, parameter-buffer placement (index < buffer_count, not the data
#   or another layout buffer) and exact parameter sizes, block-paged composition (HQ-BUF-13,
#   HT-LAY-63, HT-LAY-64, HT-LAY-65). quantization.ksy reads the payload alone, with no tensor
#   to check it against. Parameter buffers on the data buffer's device (HQ-BUF-06) are
#   expressed, by the colocation check.
# * every buffer byte_size implied by the shape and the element type: dense extents (HE-21,
#   HQ-PB-17 padded blocks, HT-SEC-34 private types, HT-LAY-05 strided, HT-LAY-13 tiled,
#   HT-LAY-19 Morton, HT-LAY-82 Hilbert) and the lower bounds of sparse and paged arrays
#   (HT-LAY-87 COO, HT-LAY-88 CSR, HT-LAY-89 CSC, HT-LAY-90 CSF, HT-LAY-91 page_pool and
#   seq_ptr). They need the element-size table (sub-byte packing, 6-bit groups,
#   extension types), the padded extent of a quantized axis, and products over the whole
#   shape, which Kaitai's expression language has no fold for.

from unittest import mock

from generated.hurray.tensor_descriptor import TensorDescriptor as KaitaiTensor
from hurray_decl.hurray.tensor import (
    descriptor as tensor_reader,
    read_tensor_descriptor,
    write_tensor_descriptor,
)
from hurray_decl.hurray.tensor.layouts import PrivateLayout
from tests.hurray.tensor_support import header_field, patch_field, with_length

_AFTER_MAGIC = sum(header_field("magic"))  # mutations keep the magic, so that the fields are reached
_FLAGS, _ = header_field("flags")
_RANK, _RANK_SIZE = header_field("rank")
_LENGTH, _LENGTH_SIZE = header_field("descriptor_length")
from hurray_decl.hurray.strategies import invalid_tensor_descriptors, tensor_descriptors

TENSOR_VECTORS = sorted((CONFORMANCE / "descriptors").glob("*.bin"))
DYNAMIC = 0xFFFF_FFFF_FFFF_FFFF

UNEXPRESSED_SIZE_CODES = {
    "HE-21", "HQ-PB-17", "HT-SEC-34", "HT-LAY-05", "HT-LAY-13", "HT-LAY-19", "HT-LAY-82",
    "HT-LAY-87", "HT-LAY-88", "HT-LAY-89", "HT-LAY-90", "HT-LAY-91",
}
UNEXPRESSED_COMPOSITION_CODES = {"HT-LAY-63", "HT-LAY-64", "HT-LAY-65"}


def unexpressed(code: str, path: str) -> str | None:
    """Why the .ksy cannot refuse an input read_tensor_descriptor refused with ``code`` at
    ``path`` once every section was read; None when the .ksy expresses that rule."""
    if code == "HT-LAY-05" or (code in UNEXPRESSED_SIZE_CODES and path.endswith("-> byte_size")):
        return "a buffer size implied by shape and element type"
    if (code.startswith("HQ-") and code != "HQ-BUF-06") or code in UNEXPRESSED_COMPOSITION_CODES:
        return "the quantization descriptor against its tensor"
    return None


@dataclass
class TensorOutcome:
    """One reader's verdict on a descriptor."""

    fields: dict[str, Any] | None = None
    codes: set[str] = field(default_factory=set)
    detail: str = ""
    unexpressed: str | None = None  # Construct only: why the .ksy cannot see this refusal
    later: set[str] = field(default_factory=set)  # Construct only: its refusal once that check is off

    @property
    def accepted(self) -> bool:
        return self.fields is not None


@cache
def _tensor_types() -> dict[str, dict[str, Any]]:
    """The types of tensor_descriptor.ksy keyed by the Python class the compiler names."""
    return {_class_name(name): spec for name, spec in ksy("tensor_descriptor")["types"].items()}


def _tree(value: Any) -> Any:
    """A parsed Kaitai value as plain data: wire fields only; reserved bytes checked zero."""
    if isinstance(value, list):
        return tuple(_tree(v) for v in value)
    if not isinstance(value, kaitaistruct.KaitaiStruct):
        return _plain(value)
    if isinstance(value, Quantization):  # quantization.ksy's reader, compared on its own
        return kaitai_fields(value)
    out = {}
    for attr in field_attrs(_tensor_types()[type(value).__name__]):
        name = attr["id"]
        if not hasattr(value, name):  # an `if:` that did not hold
            out[name] = None
        elif re.fullmatch(r"reserved\d*", name):
            raw = getattr(value, name)
            assert raw == bytes(len(raw)), f"{name} accepted non-zero"
        else:
            out[name] = _tree(getattr(value, name))
    return out


def kaitai_tensor_fields(k: KaitaiTensor) -> dict[str, Any]:
    """The fields of a parsed descriptor, named and shaped as the Construct model dumps them."""
    body = _tree(k.body)
    assert body.pop("buffer_count") == len(body["buffers"])
    assert body.pop("rank") == len(body["shape"])
    quantization_length = body.pop("quantization_length")
    if body["quantization"] is not None:
        assert quantization_length == len(k.body._raw_quantization)
    return dict(
        version_major=k.version_major, version_minor=k.version_minor,
        descriptor_length=k.descriptor_length, **body,
    )


def read_kaitai_tensor(data: bytes) -> TensorOutcome:
    try:
        k = KaitaiTensor.from_bytes(data)
    except EOFError as exc:
        # Only the quantization payload is read from a stream of its own inside the body:
        # running out there is a payload too short for its scheme (HQ-HDR-04).
        inside = {type(o).__module__.rsplit(".", 1)[-1] for o in _kaitai_owners(exc)}
        code = "HQ-HDR-04" if inside - {"tensor_descriptor"} else "HT-HDR-08"
        return TensorOutcome(codes={code}, detail=f"EOFError: {exc}")
    except kaitaistruct.ValidationFailedError as exc:
        attr, owner = _failing_attr(exc)
        return TensorOutcome(
            codes=set(RULE_ID.findall(attr.get("doc", ""))),
            detail=f"{type(owner).__name__}.{attr['id']}: {type(exc).__name__}: {exc}",
        )
    return TensorOutcome(fields=kaitai_tensor_fields(k))


def _without_cross_checks(data: bytes) -> set[str]:
    """The rule read_tensor_descriptor refuses ``data`` with when its cross-section checks
    (which the .ksy partly cannot express) are switched off; empty when it then accepts."""
    stages = ("check_descriptor", "check_scalar", "check_layout_rank", "check_buffer_table", "check_quantization",
              "check_shard", "check_statistics", "check_composite_member", "check_extents")
    with mock.patch.multiple(tensor_reader, **{name: lambda *a, **k: None for name in stages}):
        try:
            read_tensor_descriptor(data)
        except HurrayDeclError as err:
            return {err.code}
    return set()


def read_construct_tensor(data: bytes) -> TensorOutcome:
    try:
        d = read_tensor_descriptor(data)
    except HurrayDeclError as exc:
        why = unexpressed(exc.code, exc.path)
        later = _without_cross_checks(data) if why else set()
        return TensorOutcome(codes={exc.code}, detail=f"{exc.code} at {exc.path}: {exc}",
                             unexpressed=why if not later else None, later=later)
    fields = d.model_dump()
    fields["layout"] = d.layout.model_dump()  # the field is declared as the Layout base class
    fields["quantization"] = None if d.quantization is None else d.quantization.model_dump()
    return TensorOutcome(fields=fields)


def _tensor_same(kaitai_value: Any, model_value: Any, where: str) -> None:
    if isinstance(model_value, dict):
        assert isinstance(kaitai_value, dict) and set(kaitai_value) == set(model_value), (
            f"{where}: fields {sorted(kaitai_value or ())} in Kaitai, "
            f"{sorted(model_value)} in Construct")
        for name in model_value:
            _tensor_same(kaitai_value[name], model_value[name], f"{where}.{name}")
    elif isinstance(model_value, (tuple, list)):
        assert isinstance(kaitai_value, tuple) and len(kaitai_value) == len(model_value), where
        for i, (a, b) in enumerate(zip(kaitai_value, model_value)):
            _tensor_same(a, b, f"{where}[{i}]")
    elif isinstance(model_value, float):  # statistics are f64
        assert struct.pack("<d", kaitai_value) == struct.pack("<d", model_value), where
    else:
        assert kaitai_value == model_value, (
            f"{where}: {kaitai_value!r} in Kaitai, {model_value!r} in Construct")


def _quantization_same(k_fields: dict[str, Any], c_fields: dict[str, Any], shown: str) -> None:
    names = set(k_fields) - {"reserved"}
    model_only = {"symmetric"} - names  # per-tensor: derived from zero_point
    assert set(c_fields) - model_only == names, f"{shown}: quantization field names differ"
    for name in sorted(names):
        assert _same(k_fields[name], c_fields[name]), (
            f"{shown}: quantization {name} is {k_fields[name]!r} in Kaitai, "
            f"{c_fields[name]!r} in Construct")


BUFFER_COUNT_CODES = {f"HT-BUFT-{n:02d}" for n in range(4, 11)}
"""The rules of the .ksy's buffer_count_exact, whose expected count it derives from the
quantization payload's buffer indices."""


def _count_from_bad_index(c: TensorOutcome, k: TensorOutcome) -> bool:
    """Construct refuses a payload buffer index the .ksy cannot judge (HQ-BUF-*, step 13 of
    Appendix A), and Kaitai, counting the buffers from that same index, refuses the count."""
    return bool(c.codes) and all(code.startswith("HQ-BUF-") for code in c.codes) and bool(k.codes) \
        and k.codes <= BUFFER_COUNT_CODES


def assert_tensor_agree(data: bytes) -> tuple[TensorOutcome, TensorOutcome]:
    """Kaitai and Construct accept alike (up to UNEXPRESSED) with equal fields, or refuse for
    the same rule. Returns (Kaitai, Construct)."""
    k, c = read_kaitai_tensor(data), read_construct_tensor(data)
    shown = data.hex(" ").upper() or "(empty)"
    if c.accepted:
        assert k.accepted, f"descriptor {shown}: Construct accepts, Kaitai refuses: {k.detail}"
        assert k.fields is not None and c.fields is not None
        kq, cq = k.fields.pop("quantization"), c.fields.pop("quantization")
        assert (kq is None) == (cq is None), f"descriptor {shown}: quantization in one reader only"
        if kq is not None:
            _quantization_same(kq, cq, f"descriptor {shown}")
        _tensor_same(k.fields, c.fields, f"descriptor {shown}")
        k.fields["quantization"], c.fields["quantization"] = kq, cq
    elif k.accepted:
        assert c.unexpressed, (
            f"descriptor {shown}: Kaitai accepts; Construct refuses for a rule the .ksy expresses: "
            f"{c.detail}")
    elif not c.unexpressed and not (c.later and c.later <= k.codes) and not _count_from_bad_index(c, k):
        # (an unexpressed check that comes first in Appendix A order, then the same refusal)
        assert c.codes <= k.codes, (
            f"descriptor {shown}: refused for different rules\n"
            f"  Kaitai:    {k.detail} {sorted(k.codes)}\n  Construct: {c.detail}")
    return k, c


# ---------------------------------------------------------------- the schema and the registries


def test_tensor_enums_are_the_registries() -> None:
    from hurray_decl.hurray.tables import codes
    from hurray_decl.hurray.tables.element_types import BY_TAG
    from hurray_decl.hurray.tensor.layouts import LAYOUTS

    enums = ksy("tensor_descriptor")["enums"]
    assert {tag: e["id"] for tag, e in enums["element_type"].items()} == {
        tag: e.name for tag, e in BY_TAG.items()}
    assert {tag: e["id"] for tag, e in enums["layout"].items()} == {
        row.tag: row.name for row in LAYOUTS}
    twins = {"device": codes.Device, "sync_mode": codes.SyncMode, "memory_class": codes.MemoryClass,
             "tile_order": codes.TileOrder, "kv_role": codes.KVRole,
             "block_table_index_type": codes.BlockTableIndexType, "composition_rule": codes.CompositionRule,
             "combine_op": codes.CombineOp, "member_role": codes.MemberRole}
    for name, enum in twins.items():  # the same codes under the same names
        assert {tag: e["id"] for tag, e in enums[name].items()} == {
            int(member): member.name.lower() for member in enum}, name


def _tensor_with(base: bytes, offset: int, value: bytes) -> bytes:
    out = bytearray(base)
    out[offset:offset + len(value)] = value
    return bytes(out)


@pytest.mark.parametrize("tag", range(256))
def test_every_type_and_layout_tag_agrees(tag: int) -> None:
    """Each of the 256 type_tag and layout_tag bytes in a valid row-major descriptor."""
    base = (CONFORMANCE / "descriptors" / "row_major_f32_3x4.bin").read_bytes()
    assert_tensor_agree(_tensor_with(base, 14, bytes([tag])))
    assert_tensor_agree(_tensor_with(base, 15, bytes([tag])))


def test_every_device_and_memory_class_agrees() -> None:
    """Each device_tag with each memory_class and sync_mode edge in buffer 0 of a vector."""
    base = (CONFORMANCE / "descriptors" / "row_major_f32_3x4.bin").read_bytes()
    handle = 20 + 16 + 8 + 1  # after header, shape [3, 4], byte_offset and buffer_count
    for device in range(256):
        for memory_class in (0x00, 0x01, 0x02, 0x03, 0x04, 0xEF, 0xF0, 0xF7, 0xFE, 0xFF):
            for sync in (0x00, 0x02, 0x03):
                edit = bytes([device, sync, memory_class])
                assert_tensor_agree(_tensor_with(base, handle + 12, edit))


# ---------------------------------------------------------------- conformance vectors


@pytest.mark.parametrize("path", TENSOR_VECTORS, ids=lambda p: p.name)
def test_conformance_descriptors_agree(path: Path) -> None:
    data = path.read_bytes()
    k, c = assert_tensor_agree(data)
    assert k.accepted and c.accepted
    entry = {Path(e["file"]).name: e["expect"] for e in
             json.loads((CONFORMANCE / "manifest.json").read_text())["descriptors"]}[path.name]
    assert k.fields is not None
    for name in ("version_major", "version_minor", "byte_offset", "layout_tag"):
        assert k.fields[name] == entry[name], name
    assert k.fields["type_tag"] == entry["element_type_tag"]
    assert list(k.fields["shape"]) == entry["shape"]
    assert [b["byte_size"] for b in k.fields["buffers"]] == entry["buffer_byte_sizes"]
    assert (k.fields["quantization"] is not None) == entry["has_quantization"]
    assert (k.fields["shard"] is not None) == entry["has_shard"]
    # Bytes after descriptor_length are not the descriptor's (HT-HDR-10).
    k2, c2 = assert_tensor_agree(data + b"\xa5\x00\xff")
    assert k2.accepted and c2.accepted


def test_conformance_count() -> None:
    assert len(TENSOR_VECTORS) == 11


# ---------------------------------------------------------------- one cross-section rule each


def _vector(name: str) -> bytes:
    return (CONFORMANCE / "descriptors" / name).read_bytes()


def _u32(v: int) -> bytes:
    return struct.pack("<I", v)


def _u64(v: int) -> bytes:
    return struct.pack("<Q", v)


def _framed(*parts: bytes) -> bytes:
    """A descriptor from its parts, descriptor_length filled in."""
    return with_length(b"".join(parts))


def _header(type_tag: int, layout_tag: int, shape: tuple[int, ...], flags: int = 0,
            byte_offset: int = 0) -> bytes:
    """Fixed header, shape and byte_offset (descriptor_length left 0 for _framed)."""
    return (b"HRRY\x01\x00" + _u32(0) + _u32(flags) + bytes([type_tag, layout_tag])
            + _u32(len(shape)) + b"".join(_u64(n) for n in shape) + _u64(byte_offset))


def _buffers(*sizes: int, devices: tuple[int, ...] = ()) -> bytes:
    """A buffer table of handles with alignment 64, CPU unless ``devices`` says otherwise."""
    out = bytes([len(sizes)])
    for i, size in enumerate(sizes):
        out += _u64(size) + _u32(64) + bytes([devices[i] if devices else 0, 0, 0, 0])
    return out


def _coo(nnz: int = 0) -> bytes:
    return _u64(nnz) + bytes(8)  # is_sorted 0 and seven reserved bytes; CSR and CSC alike


def _csf(*order: int) -> bytes:
    return _u64(0) + b"".join(_u32(m) for m in order) + bytes(8)


def _tiled(levels: int) -> bytes:
    """A rank-1 tiled payload nested ``levels`` deep, tiles of one element."""
    return (_u64(1) + b"\x01\x04\x00\x00") * (levels - 1) + _u64(1) + b"\x01\x01\x00\x00"


def _stats(mask: int, stddev: float = 0.0, n: int = 0, m: int = 0) -> bytes:
    return (_u32(mask) + bytes(4) + bytes(48) + struct.pack("<d", stddev) + bytes([n, m])
            + bytes(6))


def _affine(scheme: int, scale: int, zero_point: int) -> bytes:
    """quantization_length and an asymmetric per-channel (0x02) or per-block (0x03, block 2)
    payload along axis 0 with f32 scales."""
    block = b"" if scheme == 2 else _u32(2)
    payload = bytes([scheme, 1, 0, 0]) + _u32(0) + block + _u32(scale) + _u32(zero_point)
    payload += b"\x03" + bytes(3)
    return _u32(len(payload)) + payload


_PAGED = _u32(1) + _u64(0) + _u32(0) + _u32(0) + b"\x02" + _u32(0) + b"\x00" + bytes(6)
_HEAD = b"\x01\x00\x00\x00" + _u32(1)  # partition of one member
_STATS = _u32(1) + bytes(4) + _u64(5) + bytes(56)  # NNZ_VALID, nnz 5


def _nf4(axis: int = 0, block: int = 8, scale: int = 1) -> bytes:
    """quantization_length and an NF4 payload."""
    return _u32(16) + bytes.fromhex("04010000") + _u32(axis) + _u32(block) + _u32(scale)


F32, INT8, INT4, UINT4 = 0x03, 0x10, 0x48, 0x49
ROW, COL, TILED, MORTON, COO, CSR, CSC, CSF, PAGED, HEAD, HILBERT = (
    0x01, 0x02, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x40)
CSF_BUFFERS = _buffers(0, 16, 0, 0, 0, 0, 0)

CROSS_SECTION = {
    # name: (descriptor, Construct's rule)
    "scalar column-major": (_framed(_header(F32, COL, ()), _buffers(4)), "HT-HDR-21"),
    "CSR rank 3": (_framed(_header(F32, CSR, (2, 2, 2)), _coo(), _buffers(0, 0, 24)), "HT-LAY-25"),
    "CSC rank 1": (_framed(_header(F32, CSC, (2,)), _coo(), _buffers(0, 0, 24)), "HT-LAY-33"),
    "CSF rank 2": (_framed(_header(F32, CSF, (2, 2)), _csf(0, 1), _buffers(0, 16, 0, 0, 0)),
                   "HT-LAY-41"),
    "block-paged rank 2": (_framed(_header(F32, PAGED, (2, 2)), _PAGED, _buffers(0, 0, 4)),
                           "HT-LAY-52"),
    "head with a buffer": (_framed(_header(F32, HEAD, (2,)), _HEAD, _buffers(8)), "HT-BUFT-03"),
    "head byte_offset": (_framed(_header(F32, HEAD, (2,), byte_offset=1), _HEAD, b"\x00"), "HT-HDR-20"),
    "head as member": (_framed(_header(F32, HEAD, (2,), flags=0x10), _HEAD, b"\x00",
                               b"\x01" + bytes(15)), "HT-SEC-38"),
    "head quantized": (_framed(_header(F32, HEAD, (2,), flags=0x01), _HEAD, b"\x00", _u32(0)),
                       "HT-LAY-76"),
    "no buffers": (_framed(_header(F32, ROW, (2,)), b"\x00"), "HT-BUFT-02"),
    "COO byte_offset": (_framed(_header(F32, COO, (4,), byte_offset=8), _coo(), _buffers(8, 0)),
                        "HT-HDR-20"),
    "CSF sharded": (_framed(_header(F32, CSF, (2, 2, 2), flags=0x02), _csf(0, 1, 2), CSF_BUFFERS,
                            bytes(48)), "HT-SEC-07"),
    "block-paged sharded": (_framed(_header(F32, PAGED, (2, 2, 2), flags=0x02), _PAGED,
                                    _buffers(0, 0, 4), bytes(48)), "HT-SEC-06"),
    "shard with DYNAMIC shape": (_framed(_header(F32, ROW, (DYNAMIC,), flags=0x02), _buffers(64),
                                         _u64(DYNAMIC) + _u64(0)), "HT-SEC-05"),
    "shard with DYNAMIC offset": (_framed(_header(F32, ROW, (2,), flags=0x02), _buffers(64),
                                          _u64(8) + _u64(DYNAMIC)), "HT-SEC-05"),
    "shard past its parent": (_framed(_header(F32, ROW, (2, 4), flags=0x02), _buffers(64),
                                      _u64(2) + _u64(8) + _u64(0) + _u64(5)), "HT-SEC-04"),
    "shard offset past its parent": (_framed(_header(F32, ROW, (0,), flags=0x02), _buffers(0),
                                             _u64(2) + _u64(3)), "HT-SEC-04"),
    "statistics nnz": (_framed(_header(F32, COO, (8,), flags=0x08), _coo(4), _buffers(16, 32),
                               _STATS), "HT-SEC-16"),
    "devices differ": (_framed(_header(F32, COO, (8,)), _coo(), _buffers(0, 0, devices=(0, 1))),
                       "HT-BUFT-24"),
    "memory classes differ": (patch_field(_framed(_header(F32, COO, (8,)), _coo(), _buffers(0, 0)),
                                          "buffers.1.memory_class", 1), "HT-BUFT-25"),
    "parameter on another device": (_framed(_header(UINT4, ROW, (16,), flags=0x01),
                                            _buffers(8, 8, devices=(1, 2)), _nf4()), "HQ-BUF-06"),
    "dense with two buffers": (_framed(_header(F32, ROW, (2,)), _buffers(8, 8)), "HT-BUFT-04"),
    "quantized dense, spare buffer": (_framed(_header(UINT4, ROW, (16,), flags=0x01),
                                              _buffers(8, 8, 8), _nf4()), "HT-BUFT-05"),
    "COO with three buffers": (_framed(_header(F32, COO, (8,)), _coo(), _buffers(0, 0, 0)),
                               "HT-BUFT-06"),
    "CSF with 2R buffers": (_framed(_header(F32, CSF, (2, 2, 2)), _csf(0, 1, 2),
                                    _buffers(0, 16, 0, 0, 0, 0)), "HT-BUFT-09"),
    "byte_offset past buffer 0": (_framed(_header(F32, ROW, (0,), byte_offset=65), _buffers(64)),
                                  "HT-HDR-19"),
    "Morton bits too few": (_framed(_header(F32, MORTON, (5, 4)), _u32(2) + _u32(2),
                                    _buffers(1024)), "HT-LAY-18"),
    "Hilbert rank": (_framed(_header(F32, HILBERT, (4, 4, 4)), _u32(2) + _u32(2), _buffers(4096)),
                     "HT-LAY-79"),
    "Hilbert shape": (_framed(_header(F32, HILBERT, (4, 2)), _u32(2) + _u32(2), _buffers(64)),
                      "HT-LAY-81"),
    "Hilbert shape, one side right": (_framed(_header(F32, HILBERT, (4, 8)), _u32(2) + _u32(2),
                                              _buffers(64)), "HT-LAY-81"),
    "Hilbert order 64": (_framed(_header(F32, HILBERT, (4, 4)), _u32(64) + _u32(2), _buffers(64)),
                         "HT-LAY-81"),
    "CSF repeated level": (_framed(_header(F32, CSF, (2, 2, 2)), _csf(0, 2, 0), CSF_BUFFERS),
                           "HT-LAY-44"),
    "CSF level out of range": (_framed(_header(F32, CSF, (2, 2, 2)), _csf(0, 1, 3), CSF_BUFFERS),
                               "HT-LAY-44"),
    "private type without extension": (_framed(_header(0xF3, ROW, (2,)), _buffers(8)),
                                       "HT-SEC-19"),
    "extension with public type": (_framed(_header(F32, ROW, (2,), flags=0x04), _buffers(8),
                                           _u32(8) + b"\x01" + bytes(15)), "HT-SEC-20"),
    "length one byte long": (_vector("row_major_f32_3x4.bin") + b"\x00", "HT-HDR-09"),
    "input shorter than descriptor_length": (_vector("row_major_f32_3x4.bin")[:-1], "HT-HDR-08"),
    "fewer than 10 bytes, bad magic": (b"HRRZ\x01\x00\x3d\x00", "HT-HDR-08"),
    "empty quantization payload": (_framed(_header(INT4, ROW, (2,), flags=0x01), _buffers(1),
                                           _u32(0)), "HQ-HDR-04"),
    # field rules the generated descriptors never break
    "tiled nested 9 deep": (_framed(_header(F32, TILED, (1,)), _tiled(9), _buffers(4)),
                            "HT-LAY-12"),
    "statistics stddev NaN": (_framed(_header(F32, ROW, (2,), flags=0x08), _buffers(8),
                                      _stats(0x08, stddev=float("nan"))), "HT-SEC-14"),
    "statistics stddev -1": (_framed(_header(F32, ROW, (2,), flags=0x08), _buffers(8),
                                     _stats(0x08, stddev=-1.0)), "HT-SEC-14"),
    "statistics N > M": (_framed(_header(F32, ROW, (2,), flags=0x08), _buffers(8),
                                 _stats(0x10, n=3, m=2)), "HT-SEC-15"),
}

# Edge cases both readers accept.
BOTH_ACCEPT = {
    "tiled nested 8 deep": _framed(_header(F32, TILED, (1,)), _tiled(8), _buffers(4)),
    "statistics stddev -0": _framed(_header(F32, ROW, (2,), flags=0x08), _buffers(8),
                                    _stats(0x08, stddev=-0.0)),
    "statistics NaN stddev, unknown": _framed(_header(F32, ROW, (2,), flags=0x08), _buffers(8),
                                              _stats(0x27, stddev=float("nan"), n=3, m=2)),
    "shard filling its parent": _framed(_header(F32, ROW, (2, 4), flags=0x02), _buffers(64),
                                        _u64(4) + _u64(4) + _u64(2) + _u64(0)),
    "Morton bits exact": _framed(_header(F32, MORTON, (4, 5)), _u32(2) + _u32(3), _buffers(128)),
    "per-channel, zero points apart": _framed(_header(INT8, ROW, (4,), flags=0x01),
                                              _buffers(4, 16, 16), _affine(2, 1, 2)),
    "per-channel, shared buffer": _framed(_header(INT8, ROW, (4,), flags=0x01), _buffers(4, 32),
                                          _affine(2, 1, 1)),
    "per-block, zero points apart": _framed(_header(INT8, ROW, (4,), flags=0x01),
                                            _buffers(4, 8, 8), _affine(3, 1, 2)),
    "per-block, shared buffer": _framed(_header(INT8, ROW, (4,), flags=0x01), _buffers(4, 16),
                                        _affine(3, 1, 1)),
    "empty buffer aligned 1": _framed(_header(F32, ROW, (0,)), b"\x01" + _u64(0) + _u32(1)
                                      + bytes(4)),
}


@pytest.mark.parametrize("data", BOTH_ACCEPT.values(), ids=BOTH_ACCEPT.keys())
def test_hand_made_tensor_edges_are_accepted_alike(data: bytes) -> None:
    k, c = assert_tensor_agree(data)
    assert k.accepted and c.accepted, (k.detail, c.detail)


def test_newer_minor_trailing_bytes_agree() -> None:
    """At minor 1 the bytes after the known sections are kept and skipped (HT-HDR-11)."""
    data = with_length(patch_field(_vector("sharded_f32_8x4.bin"), "version_minor", 1) + b"\x01\x02\x03")
    k, c = assert_tensor_agree(data)
    assert k.accepted and c.accepted and k.fields is not None
    assert k.fields["trailing"] == b"\x01\x02\x03"


@pytest.mark.parametrize("case", CROSS_SECTION.values(), ids=CROSS_SECTION.keys())
def test_each_expressed_cross_section_rule_agrees(case: tuple[bytes, str]) -> None:
    data, code = case
    if code == "HT-HDR-09":
        data = with_length(data)
    k, c = assert_tensor_agree(data)
    assert not c.accepted and c.codes == {code}, c.detail
    assert not k.accepted and code in k.codes, k.detail


UNEXPRESSED_CASES = {
    "dense buffer too small": (_framed(_header(F32, ROW, (3, 4)), _buffers(47)), "HE-21"),
    "COO values size": (_framed(_header(F32, COO, (8,)), _coo(1), _buffers(0, 8)), "HT-LAY-87"),
    "axis past rank": (_framed(_header(UINT4, ROW, (16,), flags=0x01), _buffers(8, 8),
                               _nf4(axis=1)), "HQ-NF4-02"),
    "storage type": (_framed(_header(F32, ROW, (16,), flags=0x01), _buffers(64, 8), _nf4()),
                     "HQ-NF4-10"),
    "parameter index past the table": (_framed(_header(UINT4, ROW, (16,), flags=0x01),
                                               _buffers(8, 8), _nf4(scale=2)), "HQ-BUF-01"),
}


@pytest.mark.parametrize("case", UNEXPRESSED_CASES.values(), ids=UNEXPRESSED_CASES.keys())
def test_unexpressed_rules_are_accepted_by_kaitai(case: tuple[bytes, str]) -> None:
    """The rules left out of the comparison really are invisible to the .ksy: Kaitai accepts."""
    data, code = case
    k, c = assert_tensor_agree(data)
    assert not c.accepted and c.codes == {code} and c.unexpressed, c.detail
    assert k.accepted, k.detail


# ---------------------------------------------------------------- hypothesis


PRIVATE_LAYOUT_ID = 0x5EED
valid_tensor_descriptors = tensor_descriptors(private_layout_id=PRIVATE_LAYOUT_ID)
"""Every layout, scheme and optional section; private layouts under an id nobody registered."""


def _encode(d: Any) -> bytes:
    # A private layout is written under an id that neither read_tensor_descriptor nor the .ksy
    # has registered, so both must refuse it (HT-LAY-85).
    return write_tensor_descriptor(d, permissive=isinstance(d.layout, PrivateLayout))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.data_too_large])
@given(d=valid_tensor_descriptors, after=st.binary(max_size=4))
def test_generated_tensor_descriptors_agree(d: Any, after: bytes) -> None:
    data = _encode(d)
    k, c = assert_tensor_agree(data + after)
    if isinstance(d.layout, PrivateLayout):
        assert not k.accepted and c.codes == {"HT-LAY-85"}
    else:
        assert k.accepted and c.accepted


_TENSOR_EDGES = st.sampled_from([
    0, 1, 2, 3, 4, 7, 8, 0x0B, 0x10, 0x40, 0x47, 0x7F, 0x80, 0xEF, 0xF0, 0xFE, 0xFF, 64, 65,
    0xFFFF, NONE32, 1 << 31, DYNAMIC, 1 << 63, (1 << 64) - 2,
])


@st.composite
def mutated_tensor_descriptors(draw: st.DrawFn) -> bytes:
    """A valid descriptor (generated or a conformance vector) with a few bytes or fields
    overwritten, flags bits flipped, cut or extended, and descriptor_length often re-fitted."""
    if draw(st.booleans()):
        d = draw(valid_tensor_descriptors)
        data = bytearray(_encode(d))
    else:
        data = bytearray(draw(st.sampled_from(TENSOR_VECTORS)).read_bytes())
    for _ in range(draw(st.integers(1, 3))):
        choice = draw(st.integers(0, 3))
        if choice == 0:  # a byte
            i = draw(st.integers(_AFTER_MAGIC, len(data) - 1))
            data[i] = draw(st.one_of(_INTERESTING, st.integers(0, 255)))
        elif choice == 1:  # a little-endian field of 1, 2, 4 or 8 bytes at any offset
            width = draw(st.sampled_from([1, 2, 4, 8]))
            i = draw(st.integers(_AFTER_MAGIC, len(data) - width))
            value = draw(st.one_of(_TENSOR_EDGES, st.integers(0, (1 << 64) - 1)))
            data[i:i + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
        elif choice == 2:  # a flags bit: mostly one that adds or drops a section
            bit = draw(st.one_of(st.integers(0, 4), st.integers(0, 4), st.integers(5, 31)))
            data[_FLAGS + bit // 8] ^= 1 << (bit % 8)
        else:  # rank, whose change shifts every later section
            data[_RANK:_RANK + _RANK_SIZE] = draw(st.sampled_from([0, 1, 2, 3, 4, 65])).to_bytes(_RANK_SIZE, "little")
    if draw(st.integers(0, 3)) == 0:
        del data[draw(st.integers(0, len(data))):]
    data += draw(st.binary(max_size=draw(st.sampled_from([0, 8, 48]))))
    if len(data) >= _LENGTH + _LENGTH_SIZE and draw(st.integers(0, 3)) > 0:
        data[_LENGTH:_LENGTH + _LENGTH_SIZE] = len(data).to_bytes(_LENGTH_SIZE, "little")
    return bytes(data)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.data_too_large])
@given(data=mutated_tensor_descriptors())
@example(data=bytes.fromhex(  # per-block scale index on the data buffer, buffer count short of the scheme's
    "4852525901006a000000010000001001020000000000000000000000000000000000000000000000000000000200000000000000000100000000000000000000000000000001000000000000001800000003010000000000000200000000000000010000000100000000"))
def test_mutated_tensor_descriptors_agree(data: bytes) -> None:
    assert_tensor_agree(data)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.data_too_large])
@given(mutant=invalid_tensor_descriptors())
def test_rule_labelled_mutants_agree(mutant: tuple[bytes, str]) -> None:
    """hurray_decl.hurray.strategies' mutants: one valid descriptor changed to break one reader rule."""
    data, _ = mutant
    k, c = assert_tensor_agree(data)
    assert not c.accepted
    if not c.unexpressed:
        assert not k.accepted


@settings(max_examples=300, deadline=None)
@given(data=st.one_of(
    st.binary(max_size=64),
    st.binary(max_size=120).map(lambda b: b"HRRY\x01" + b),
    st.tuples(st.integers(0, 255), st.binary(max_size=100)).map(
        lambda t: _framed(b"HRRY\x01" + bytes([t[0]]) + bytes(4) + t[1])),
))
def test_arbitrary_bytes_agree_as_descriptors(data: bytes) -> None:
    assert_tensor_agree(data)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
