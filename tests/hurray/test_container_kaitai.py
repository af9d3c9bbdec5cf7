"""schemas/hurray/container.ksy against hurray_decl.hurray.container, field by field.

The compiled reader in generated/hurray/container.py is checked for staleness with the other
schemas by test_kaitai.py::test_generated_readers_are_fresh (it compiles every .ksy). Here both
readers read the valid conformance vectors and generated valid files and must agree on every
header, trailer, index, KV and descriptor field; for the O-level rules the .ksy expresses,
both refuse each rule-labelled mutant, Kaitai at a ``valid:`` whose doc names the same rule.
"""

from __future__ import annotations

import json
import re
import struct
from functools import cache

import kaitaistruct
import pytest
import yaml
from hypothesis import given, settings

from generated.hurray.container import Container as KaitaiContainer
from hurray_decl.hurray.container import KVTag, validate_container
from hurray_decl.hurray.container.strategies import invalid_containers, valid_containers
from tests.paths import FILES, REPO

VALID = [v["file"] for v in json.loads((FILES / "manifest.json").read_text())["vectors"] if v["expect"] == "valid"]
RULE_ID = re.compile(r"\b(?:HQ|HT|OL|HF)-[A-Z0-9]+-\d+\b|\bHE-\d+\b")

EXPRESSED = ["HF-HDR-03", "HF-HDR-04", "HF-HDR-05", "HF-HDR-08", "HF-HDR-09", "HF-HDR-10", "HF-HDR-11", "HF-HDR-12",
             "HF-HDR-13", "HF-HDR-14", "HF-HDR-18", "HF-IDX-02", "HF-IDX-03", "HF-IDX-04", "HF-IDX-05", "HF-IDX-09",
             "HF-IDX-10", "HF-IDX-11", "HF-IDX-12", "HF-IDX-14", "HF-META-02", "HF-META-03", "HF-META-05",
             "HF-META-06", "HF-META-07", "HF-META-08", "HF-META-09", "HF-META-10", "HF-META-13", "HF-META-14",
             "HF-META-15", "HF-META-16", "HF-META-17", "HF-META-18", "HF-DATA-21"]
"""O-level rules the .ksy states; the others (CRC, uniqueness, order, levels T and V) it cannot."""
TRUNCATION = {"HF-HDR-18", "HF-IDX-09", "HF-META-07"}
UTF8 = {"HF-IDX-12", "HF-META-10", "HF-META-13"}


@cache
def schema() -> dict:
    return yaml.safe_load((REPO / "schemas" / "hurray" / "container.ksy").read_text())


def _bits(value: float) -> bytes:
    return struct.pack("<d", value)


def _kaitai_value(tag: int, payload) -> object:
    if tag in (KVTag.STRING, KVTag.BYTES, KVTag.BOOL):
        return payload.value if tag != KVTag.BOOL else bool(payload.value)
    return payload


def assert_agree(data: bytes) -> None:
    c = validate_container(data)
    k = KaitaiContainer.from_bytes(data)
    for name in type(c.header).model_fields:
        assert getattr(k.header, name) == getattr(c.header, name), name
    for name in type(c.trailer).model_fields:
        assert getattr(k.trailer, name) == getattr(c.trailer, name), name
    assert k.index.index_entry_count == len(c.entries) and k.index.leftover == b""
    for ke, e in zip(k.index.entries, c.entries, strict=True):
        for name in type(e).model_fields:
            assert getattr(ke, name) == getattr(e, name), (e.name, name)
        kd, d = ke.descriptor, c.tensor(e.name).descriptor
        assert (kd.version_major, kd.version_minor, kd.descriptor_length) == (
            d.version_major, d.version_minor, d.descriptor_length)
        body = kd.body
        assert (body.flags, int(body.type_tag), int(body.layout_tag), tuple(body.shape)) == (
            d.flags, d.type_tag, d.layout_tag, d.shape)
        assert [b.byte_size for b in body.buffers] == [b.byte_size for b in d.buffers]
    kv = {} if k.kv is None else {e.key: e for e in k.kv.entries}
    assert list(kv) == list(c.kv)
    for key, value in c.kv.items():
        ke = kv[key]
        assert int(ke.value_tag) == value.tag
        if value.tag == KVTag.ARRAY:
            assert int(ke.value.element_tag) == value.element_tag and ke.value.count == len(value.value)
            got = tuple(_kaitai_value(value.element_tag, p) for p in ke.value.items)
        else:
            got = _kaitai_value(value.tag, ke.value)
        want = value.value
        if value.tag == KVTag.FLOAT64 or value.element_tag == KVTag.FLOAT64:
            assert [_bits(x) for x in (got if isinstance(got, tuple) else (got,))] == [
                _bits(x) for x in (want if isinstance(want, tuple) else (want,))]
        else:
            assert got == want, key


@pytest.mark.parametrize("name", VALID)
def test_valid_vectors_agree_field_by_field(name):
    assert_agree((FILES / name).read_bytes())


@settings(max_examples=40)
@given(data=valid_containers())
def test_generated_files_agree_field_by_field(data):
    assert_agree(data)


def _touch_all(k: KaitaiContainer) -> None:
    k.trailer
    for e in k.index.entries:
        e.descriptor
    k.kv


def _failing_doc(exc: kaitaistruct.ValidationFailedError) -> str:
    match = re.fullmatch(r"(?:/types/(\w+))?/seq/(\d+)", exc.src_path)
    assert match, exc.src_path
    scope = schema()["types"][match.group(1)] if match.group(1) else schema()
    return scope["seq"][int(match.group(2))]["doc"]


@pytest.mark.parametrize("rule", EXPRESSED)
def test_expressed_rules_are_refused_by_both(rule):
    @settings(max_examples=6)
    @given(mutant=invalid_containers(rule))
    def check(mutant):
        data, _, code = mutant
        with pytest.raises(Exception) as ours:
            validate_container(data)
        assert getattr(ours.value, "code", None) == code
        try:
            _touch_all(KaitaiContainer.from_bytes(data))
        except kaitaistruct.ValidationFailedError as exc:
            assert code in RULE_ID.findall(_failing_doc(exc)), (code, exc.src_path)
        except EOFError:
            assert code in TRUNCATION
        except UnicodeDecodeError:
            assert code in UTF8
        else:
            pytest.fail(f"Kaitai accepts a mutant of {rule}")

    check()
