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
from hypothesis import example, given, settings
from hypothesis import strategies as st

import hurray_decl
from hurray_decl import HurrayDeclError, decode_quantization
from hurray_decl.engine import SCHEMES
from hurray_decl.strategies import quantization_descriptors

from generated.hurray.quantization import Quantization

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
SCHEMAS = REPO / "schemas"
GENERATED = REPO / "generated"
KSY_DIR = SCHEMAS / "hurray"
REGENERATE = "schemas/regenerate"
RULES = SHARED / "spec" / "RULES.md"
CONFORMANCE = SHARED / "conformance" / "hurray"

NONE32 = 0xFFFF_FFFF
RULE_ID = re.compile(r"\b(?:HQ|OL)-[A-Z0-9]+-\d+\b")
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


def _failing_attr(exc: kaitaistruct.ValidationFailedError) -> tuple[dict[str, Any], Any]:
    """The .ksy attribute whose ``valid:`` raised, and the Kaitai object that was reading it."""
    tb = exc.__traceback__
    owner = None
    while tb is not None:
        candidate = tb.tb_frame.f_locals.get("self")
        if isinstance(candidate, kaitaistruct.KaitaiStruct):
            owner = candidate
        tb = tb.tb_next
    assert owner is not None, f"no Kaitai object in the traceback of {exc!r}"
    spec = ksy_by_class()[type(owner).__name__]
    match = re.fullmatch(r"/seq/(\d+)", exc.src_path)
    assert match, f"unexpected src_path {exc.src_path!r}"
    return spec["seq"][int(match.group(1))], owner


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
    instances = [dict(v, id=k) for k, v in spec.get("instances", {}).items()]
    attrs = list(spec.get("seq", [])) + instances
    for attr in attrs:
        assert attr.get("doc"), f"{attr['id']} has no doc"
        if "valid" in attr:
            ids = RULE_ID.findall(attr["doc"])
            assert ids, f"{attr['id']}: a valid: needs a doc naming its rule"
            assert set(ids) <= known, f"{attr['id']}: unknown rule IDs {set(ids) - known}"
        if is_check(attr):
            assert attr.get("size") == 0 and "valid" in attr, f"{attr['id']}: a check reads nothing"
        if attr["id"] == "reserved":
            assert attr.get("-orig-id") == "_reserved"
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
