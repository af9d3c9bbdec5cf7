"""Reader/writer symmetry over mutated inputs: whatever read_tensor_descriptor accepts (strict or
permissive), write_tensor_descriptor writes back byte for byte in the same mode, and so does
decode -> JSON -> encode (NaN payloads and -0.0 included).

Inputs: every conformance descriptor, every bundled example and strategy outputs, each mutated
(bytes flipped, fields overwritten with edge values, cut, extended, descriptor_length fixed up).
CI runs a few hundred; the acceptance run is 20,000::

    HURRAY_SYMMETRY_INPUTS=20000 pytest tests/hurray/test_symmetry.py
"""

from __future__ import annotations

import os
import random
import struct

import pytest

from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray.tensor import TensorDescriptor, read_tensor_descriptor, write_tensor_descriptor
from tests.hurray.tensor_support import header_field
from tests.paths import DESCRIPTORS, REPO

MINOR, _ = header_field("version_minor")
LENGTH, LENGTH_SIZE = header_field("descriptor_length")

INPUTS = int(os.environ.get("HURRAY_SYMMETRY_INPUTS", "400"))
EDGE = [0, 1, 2, 0x7F, 0x80, 0xFF]
EDGE_WIDE = [0, 1, 0xFFFF_FFFF, 1 << 32, (1 << 32) + 1, (1 << 64) - 1, 0x7FF8_0000_0000_0001,
             0xFFF0_0000_0000_0001, 0x8000_0000_0000_0000]


def bases() -> list[bytes]:
    found = [p.read_bytes() for p in sorted(DESCRIPTORS.glob("*.bin"))]
    found += [p.read_bytes() for p in sorted((REPO / "hurray_decl" / "hurray" / "examples").glob("*.bin"))]
    from hypothesis import HealthCheck, given, settings

    from hurray_decl.hurray.strategies import tensor_descriptors

    drawn: list[bytes] = []

    @settings(max_examples=60, database=None, derandomize=True, suppress_health_check=list(HealthCheck),
              deadline=None)
    @given(tensor_descriptors())
    def collect(d):
        drawn.append(write_tensor_descriptor(d))

    collect()
    return found + drawn


def mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(6)
        if kind == 0 and out:
            out[rng.randrange(len(out))] = rng.choice(EDGE + [rng.randrange(256)])
        elif kind == 1 and len(out) >= 8:
            at = rng.randrange(len(out) - 7)
            out[at:at + 8] = struct.pack("<Q", rng.choice(EDGE_WIDE))
        elif kind == 2 and len(out) >= 4:
            at = rng.randrange(len(out) - 3)
            out[at:at + 4] = struct.pack("<I", rng.choice(EDGE_WIDE) & 0xFFFF_FFFF)
        elif kind == 3:
            out += bytes(rng.randrange(256) for _ in range(rng.randint(1, 9)))
        elif kind == 4 and out:
            del out[rng.randrange(len(out)):]
        elif len(out) > MINOR:  # a newer minor version
            out[MINOR] = rng.randint(1, 3)
    if len(out) >= LENGTH + LENGTH_SIZE and rng.random() < 0.7:  # descriptor_length follows the bytes
        out[LENGTH:LENGTH + LENGTH_SIZE] = len(out).to_bytes(LENGTH_SIZE, "little")
    return bytes(out)


def check_symmetry(data: bytes) -> int:
    """Check one input in both modes; returns how many modes accepted it."""
    accepted = 0
    for permissive in (False, True):
        try:
            d = read_tensor_descriptor(data, permissive=permissive)
        except HurrayDeclError:
            continue
        accepted += 1
        own = data[:d.descriptor_length]
        assert write_tensor_descriptor(d, permissive=permissive) == own, (permissive, data.hex())
        again = TensorDescriptor.load(d.model_dump_json())
        assert write_tensor_descriptor(again, permissive=permissive) == own, ("json", permissive, data.hex())
    return accepted


def test_accepted_inputs_are_written_back_byte_for_byte():
    rng = random.Random(11)
    pool = bases()
    accepted = 0
    for base in pool:  # the unmutated inputs first
        accepted += bool(check_symmetry(base))
    for _ in range(INPUTS):
        accepted += bool(check_symmetry(mutate(rng, rng.choice(pool))))
    assert accepted > len(pool) // 2  # the run exercised the write-back, not only refusals


@pytest.mark.parametrize("bits", [0x7FF8_0000_0000_0001, 0xFFF8_0000_0000_0000, 0x7FF0_0000_0000_0001,
                                  0x8000_0000_0000_0000, 0x7FF0_0000_0000_0000])
def test_statistics_floats_keep_their_bits_through_json(bits):
    from hurray_decl.hurray.tensor import BufferHandle, Statistics

    value = struct.unpack("<d", struct.pack("<Q", bits))[0]
    d = TensorDescriptor(type_tag=0x03, shape=(2,), buffers=(BufferHandle(byte_size=8),),
                         statistics=Statistics(value_min=value, value_mean=value))
    data = write_tensor_descriptor(d)
    back = TensorDescriptor.load(read_tensor_descriptor(data).model_dump_json())
    assert write_tensor_descriptor(back) == data
    assert struct.pack("<d", back.statistics.value_min) == struct.pack("<Q", bits)
