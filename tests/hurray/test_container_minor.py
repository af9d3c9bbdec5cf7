"""Containers of a newer minor version: what the reader skips is written back byte for byte,
and no offset the file claims drives an allocation of the writer."""

from __future__ import annotations

import io
import random
import tracemalloc

import pytest

from hurray_decl.declare.schema import field_offsets
from hurray_decl.errors import ARGUMENT, HurrayDeclError
from hurray_decl.hurray.container import open_container, validate_container, writer as writer_module
from hurray_decl.hurray.container.declarations import FILE_HEADER, KV_COUNT
from hurray_decl.hurray.container.strategies import Patch
from hurray_decl.hurray.container.writer import ContainerWriter, rewrite, write_container
from hurray_decl.rules import all_rules
from tests.hurray.test_container import FILES, VALID, f32

MINOR_AT = field_offsets(FILE_HEADER)["container_version_minor"][0]
VECTORS = sorted(FILES.glob("*.hrry"))


def newer(data: bytes, minor: int, rng: random.Random | None = None) -> Patch:
    """``data`` at ``minor``, its reserved bytes filled, with trailing bytes inside the index
    and (when there is one) the KV section: everything a newer minor lets a reader skip."""
    rng = rng or random.Random(minor)
    p = Patch(data)
    p.put(MINOR_AT, minor, 1)
    for name in ("reserved", "reserved_header"):
        at, width = p.header_span(name)
        p.put(at, bytes(rng.randrange(1, 256) for _ in range(width)))
    at, width = p.trailer_span("reserved")
    p.put(at, bytes(rng.randrange(1, 256) for _ in range(width)))
    if p.c.trailer.has_kv and p.c.kv:  # the last KV entry becomes bytes left inside kv_length
        p.put(p.kv_count()[0], len(p.c.kv) - 1, KV_COUNT.sizeof())
    t = p.c.trailer
    tail = bytes(rng.randrange(256) for _ in range(8 * rng.randrange(1, 3)))
    p.insert(t.index_offset + t.index_length, tail).put(p.trailer("index_length"), t.index_length + len(tail), 8)
    p.recrc()
    return p


@pytest.mark.rules("HF-HDR-07")
@pytest.mark.parametrize("entry", VALID, ids=[v["file"] for v in VALID])
def test_minor_255_is_written_back_byte_for_byte(entry):
    x = newer((FILES / entry["file"]).read_bytes(), 255).recrc()
    c = validate_container(x)
    assert c.header.container_version_minor == 255 and c.skipped.minor == 255
    assert len(c.skipped.index_tail) >= 8 and any(c.skipped.reserved_header)
    assert rewrite(c) == x


def test_the_writer_still_writes_minor_0_with_zero_reserved_bytes():
    data = write_container([("w", *f32((2,)))], {"k": 1})
    p = Patch(data)
    assert p.c.header.container_version_minor == 0 and data[MINOR_AT] == 0
    c = open_container(data)
    assert c.skipped == type(c.skipped)(kv_section=True)
    assert data[slice(*(lambda at, n: (at, at + n))(*p.header_span("reserved_header")))] == bytes(28)


def test_a_kv_section_without_entries_is_kept():
    """kv_count 0 in a present KV section (minor 0): the section is written back, not dropped."""
    p = Patch(write_container([("w", *f32((2,)))], {"k": True}))
    p.put(p.kv_count()[0], 0, 4)  # the one entry becomes trailing bytes: refused at minor 0 ...
    p.put(MINOR_AT, 1, 1)  # ... skipped at minor 1
    x = p.recrc()
    c = validate_container(x)
    assert c.kv == {} and c.skipped.kv_section
    assert rewrite(c) == x


def test_the_index_order_is_kept():
    """An unsorted index need not list the tensors in write order; rewrite keeps its order."""
    data = write_container([("a", *f32((2,))), ("b", *f32((3,)))], index_crc=False)
    p = Patch(data)
    first, second = (p.c.positions[f"index -> entries -> {i}"] for i in (0, 1))
    end = p.c.trailer.index_offset + p.c.trailer.index_length
    a, b = bytes(p.data[first:second]), bytes(p.data[second:end])
    x = bytes(p.put(first, b + a).data)
    c = validate_container(x)
    assert c.names == ("b", "a")
    assert rewrite(c) == x


def _mutate(rng: random.Random) -> bytes:
    """A shared container vector at a newer minor, with what that minor may hold, then a few
    random overwrites anywhere (the checksum recomputed or not)."""
    base = rng.choice(VECTORS).read_bytes()
    minor = rng.randrange(1, 256)
    try:
        p: Patch | None = newer(base, minor, rng)
        data = p.data
    except HurrayDeclError:  # an invalid vector that does not open: its minor raised only
        p, data = None, bytearray(base)
        data[MINOR_AT] = minor
    for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
        width = rng.choice((1, 1, 2, 4, 8))
        at = rng.randrange(0, len(data) - width)
        value = rng.choice((0, 1, 8, 0xFF, 4096, 1 << 40, (1 << 64) - 8, rng.getrandbits(64)))
        data[at:at + width] = (value % (1 << 8 * width)).to_bytes(width, "little")
    if rng.random() < 0.1:  # a first_descriptor_offset far past the end of the file
        at, width = field_offsets(FILE_HEADER)["first_descriptor_offset"]
        data[at:at + width] = (8 * rng.randrange(1 << 20, 1 << 58)).to_bytes(width, "little")
    if p is not None and rng.random() < 0.7:
        return p.recrc()
    return bytes(data)


@pytest.mark.rules("HF-HDR-07", "HF-IDX-10", "HF-META-08")
def test_1000_mutated_newer_minor_containers_come_back_byte_for_byte_or_are_refused():
    rng = random.Random(26)
    accepted = refused = 0
    for _ in range(1000):
        x = _mutate(rng)
        try:
            out = rewrite(open_container(x))
        except HurrayDeclError as err:
            assert err.code in all_rules() or err.code == ARGUMENT, err
            refused += 1
            continue
        assert out == x
        accepted += 1
    assert accepted >= 100 and refused >= 100, (accepted, refused)


@pytest.mark.rules("HF-HDR-15", "HF-IDX-07")
def test_a_claimed_first_descriptor_offset_allocates_nothing():
    """open_container accepts a huge first_descriptor_offset (level O); rewrite refuses it with
    its rule before it pads anything, in memory bounded by a constant."""
    for name in ("basic.hrry", "v04-no-tensors.hrry"):
        p = newer((FILES / name).read_bytes(), 3)
        p.put(p.header("first_descriptor_offset"), 1 << 45, 8)
        c = open_container(p.recrc())
        tracemalloc.start()
        try:
            with pytest.raises(HurrayDeclError) as info:
                rewrite(c)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert info.value.code in ("HF-HDR-15", "HF-IDX-07", "HF-META-20"), info.value
        assert peak < 1 << 20, peak


def test_padding_is_written_in_bounded_chunks(monkeypatch):
    monkeypatch.setattr(writer_module, "CHUNK", 24)

    class Sink(io.BytesIO):
        def __init__(self) -> None:
            super().__init__()
            self.sizes: list[int] = []

        def write(self, data):
            self.sizes.append(len(data))
            return super().write(data)

    out = Sink()
    writer = ContainerWriter(out, first_descriptor_offset=64 + 8 * 13)
    writer.add("w", *f32((2,)))
    writer.finish()
    assert max(out.sizes) <= 24 and len(out.sizes) > 10
    c = validate_container(out.getvalue())
    assert c.entry("w").descriptor_offset == 168 and out.getvalue()[64:168] == bytes(104)


def test_the_fuzz_oracle_writes_containers_back(monkeypatch):
    from hurray_decl.hurray import fuzz_target

    x = newer((FILES / "basic.hrry").read_bytes(), 255).recrc()
    fuzz_target.check_one(x)  # opened, written back byte for byte
    fuzz_target.check_one(x[:100])  # refused with a rule
    monkeypatch.setattr(writer_module, "rewrite", lambda c: bytes(c.view)[:-1])
    with pytest.raises(fuzz_target.RoundTripMismatch, match="container"):
        fuzz_target.check_one(x)
