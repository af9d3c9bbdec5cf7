"""The wire walk without rows (the one ``validate``, ``decode`` and kind detection use) must judge
every input exactly as the walk with rows (the dump's): the same error, at the same offset, and the
same fit counts, on the bundled corpus and on its byte mutants, for every message kind."""

from __future__ import annotations

import random

import pytest

from hurray_decl.onnx_light.corpus import bundled
from hurray_decl.onnx_light.inputs import KINDS, MESSAGES
from hurray_decl.onnx_light.protowire import walk

FILES = sorted(p for p in bundled().iterdir() if p.is_file() and p.suffix != ".json")


def verdict(data: bytes, kind: str, rows: bool) -> tuple[object, ...]:
    result = walk(data, MESSAGES[kind].DESCRIPTOR, rows=rows)
    error = result.error
    return (None if error is None else (error.offset, error.reason)), result.known, result.unknown


def mutants(data: bytes, rng: random.Random, count: int = 40) -> list[bytes]:
    out = []
    for _ in range(count):
        i = rng.randrange(len(data))
        how = rng.randrange(3)
        if how == 0:
            out.append(data[:i] + bytes([rng.randrange(256)]) + data[i + 1:])
        elif how == 1:
            out.append(data[:i])
        else:
            out.append(data[:i] + bytes([0x80 | rng.randrange(128)]) * rng.randrange(1, 12) + data[i:])
    return out


def test_the_corpus_is_there():
    assert len(FILES) >= 100


@pytest.mark.parametrize("kind", KINDS)
def test_both_walks_judge_the_corpus_and_its_mutants_alike(kind):
    rng = random.Random(kind)
    errors = enums = 0
    for path in FILES:
        data = path.read_bytes()
        for sample in [data, *mutants(data, rng)] if data else [data]:
            fast = verdict(sample, kind, rows=False)
            assert fast == verdict(sample, kind, rows=True), (path.name, sample.hex())
            errors += fast[0] is not None
            enums += fast[2] > 0
    assert errors > 100 and enums > 10


@pytest.mark.parametrize("run, error", [
    (b"\x08\x01\x02", None),
    (b"\x08\xff", (3, "truncated varint")),
    (b"\x08" + b"\xff" * 9 + b"\x01", None),
    (b"\x08" + b"\xff" * 10 + b"\x01", (3, "varint longer than 10 bytes")),
])
def test_a_packed_varint_run_is_checked_element_by_element(run, error):
    """dims (field 1 of TensorProto) packed: the fast check refuses where the element loop does."""
    data = bytes([0x0A, len(run)]) + run
    got = verdict(data, "tensor", rows=False)
    assert got == verdict(data, "tensor", rows=True)
    assert got[0] == error
