"""Coverage-guided fuzz target (atheris, that is libFuzzer for Python) over the two byte entry
points: :func:`~hurray_decl.hurray.tensor.read_tensor_descriptor` and
:func:`~hurray_decl.hurray.quantization.decode_quantization`, each strict and permissive, and
:func:`~hurray_decl.hurray.container.open_container` for inputs that start with ``HRRYFILE``.

An input is read in one mode, strict or permissive, chosen by its bytes (the top bit of their
CRC-32), so that each input costs one read of each entry point; one input in :data:`SAMPLE`
(again chosen by its bytes, :func:`~hurray_decl.fuzz_harness.sampled`; ``HURRAY_FUZZ_SAMPLE=1``
for every input) is read in both modes. A replayed input takes the path it took in the run.
The oracle:

* only :class:`~hurray_decl.errors.HurrayDeclError` may escape (anything else is a finding);
* an accepted input re-encodes byte-exactly (``permissive=True`` writers), the tensor
  descriptor up to its ``descriptor_length``; an opened container is either refused by
  :func:`~hurray_decl.hurray.container.writer.rewrite` with a rule or written back byte for
  byte, at any minor version;
* read in both modes, what the strict reader accepts the permissive one accepts too;
* no single call takes longer than :data:`SLOW_SECONDS` (1 s); libFuzzer's ``-timeout``
  catches a call that never returns, ``-rss_limit_mb`` memory growth.

Only hurray_decl and construct are instrumented (instrumenting every loaded module takes
over a minute), so coverage counts edges of the reader itself.

Needs ``atheris`` (a test dependency). A short run (the CI smoke test does this)::

    python -m hurray_decl.hurray.fuzz_target -runs=3000 -max_len=512 -timeout=1 -rss_limit_mb=1024 CORPUS_DIR

The long run (10 minutes; new inputs are added to CORPUS_DIR, crashes written as
``crash-*`` / ``timeout-*`` files in the working directory)::

    mkdir -p fuzz-corpus && python -m hurray_decl.hurray.fuzz_target -max_total_time=600 -max_len=1024 \\
        -timeout=1 -rss_limit_mb=1024 -print_final_stats=1 fuzz-corpus

The seed corpus (the conformance vectors, when run from a source checkout, a payload per
scheme, and ``HURRAY_FUZZ_SEEDS`` (default 200) generated valid descriptors and as many
rule-labelled mutants) is written into CORPUS_DIR when that directory is empty.
Replay one input with ``python -m hurray_decl.hurray.fuzz_target crash-FILE``.
"""

from __future__ import annotations

import struct
import sys
import zlib
from collections.abc import Sequence

from hurray_decl.errors import HurrayDeclError
from hurray_decl.fuzz_harness import run_libfuzzer, sample_every, sampled, warm_up, within
from hurray_decl.hurray.container import open_container, writer as container_writer
from hurray_decl.hurray.quantization import decode_quantization, encode_quantization
from hurray_decl.hurray.tensor import read_tensor_descriptor, write_tensor_descriptor

SLOW_SECONDS = 1.0
"""The longest one call may take on one input."""

INSTRUMENTED = ("hurray_decl", "construct")
"""Packages whose code atheris instruments for coverage feedback."""


SAMPLE = 8
"""One input in this many (chosen by its bytes) is read in both modes."""

BOTH = (False, True)
"""The modes of a sampled input: strict, then permissive."""


class RoundTripMismatch(AssertionError):
    """An accepted input did not re-encode to its own bytes."""


class ModeDisagreement(AssertionError):
    """The strict reader accepted an input that the permissive reader refused."""


def modes_of(data: bytes, every: int = SAMPLE) -> tuple[bool, ...]:
    """The modes (``permissive`` values) ``data`` is read in: both for one input in ``every``, else
    the one the top bit of its CRC-32 names."""
    if sampled(data, every):
        return BOTH
    return (bool(zlib.crc32(data) >> 31),)


def check_one(data: bytes, every: int = SAMPLE) -> None:
    """Run one input through both entry points, in the modes :func:`modes_of` chooses, and check
    the oracle. Returns normally when the input is accepted or refused properly; raises anything else.
    """
    modes = modes_of(data, every)
    descriptors: list[bool] = []  # accepted, by mode
    payloads: list[bool] = []
    for permissive in modes:
        try:
            with within(SLOW_SECONDS, "read_tensor_descriptor", data):
                descriptor = read_tensor_descriptor(data, permissive=permissive)
        except HurrayDeclError:
            descriptors.append(False)
        else:
            descriptors.append(True)
            again = write_tensor_descriptor(descriptor, permissive=True)
            if again != data[:descriptor.descriptor_length]:
                raise RoundTripMismatch(f"tensor descriptor (permissive={permissive}) re-encodes differently")
        try:
            with within(SLOW_SECONDS, "decode_quantization", data):
                payload = decode_quantization(data, permissive=permissive)
        except HurrayDeclError:
            payloads.append(False)
        else:
            payloads.append(True)
            if encode_quantization(payload, permissive=True) != data:
                raise RoundTripMismatch(f"quantization payload (permissive={permissive}) re-encodes differently")
    if modes == BOTH:
        for what, (strict, loose) in (("tensor descriptor", descriptors), ("quantization payload", payloads)):
            if strict and not loose:
                raise ModeDisagreement(f"{what}: accepted strictly, refused in permissive mode")
    if data[:8] == b"HRRYFILE":
        check_container(data, modes)


def check_container(data: bytes, modes: tuple[bool, ...] = BOTH) -> None:
    """Open a container in ``modes`` and write it back: a coded refusal, or the same bytes."""
    for permissive in modes:
        try:
            with within(SLOW_SECONDS, "open_container + rewrite", data):
                again = container_writer.rewrite(open_container(data, permissive=permissive))
        except HurrayDeclError:
            continue
        if again != data:
            raise RoundTripMismatch(f"container (permissive={permissive}) is written back differently")


EVERY = SAMPLE
"""The run's sampling: ``HURRAY_FUZZ_SAMPLE``, else :data:`SAMPLE` (set by :func:`main`)."""


def test_one_input(data: bytes) -> None:
    """The libFuzzer callback."""
    check_one(bytes(data), EVERY)


def seed_inputs(generated: int = 200) -> list[bytes]:
    """Inputs to start from: the conformance vectors (in a source checkout), one
    payload per scheme and the tensor descriptors they are embedded in, then (with hypothesis)
    ``generated`` valid descriptors of every layout and ``generated`` rule-labelled mutants."""
    from hurray_decl.hurray.examples import checkout_conformance_descriptors
    from hurray_decl.hurray.schemes.mxfp import MXFP
    from hurray_decl.hurray.schemes.nf4 import NF4
    from hurray_decl.hurray.schemes.per_block_affine import PerBlockAffine
    from hurray_decl.hurray.schemes.per_channel_affine import PerChannelAffine
    from hurray_decl.hurray.schemes.per_tensor_affine import PerTensorAffine
    from hurray_decl.hurray.tables.codes import ScaleType
    from hurray_decl.hurray.tensor import BufferHandle, TensorDescriptor

    seeds: list[bytes] = []
    seeds.extend(p.read_bytes() for p in checkout_conformance_descriptors())
    seeds.extend(p.read_bytes() for p in checkout_conformance_descriptors("files", "*.hrry"))
    schemes = [
        (0x10, (4, 8), (32,), PerTensorAffine(scale=0.5, zero_point=3)),
        (0x10, (4, 8), (32, 16, 16), PerChannelAffine(axis=0, scale_buffer_index=1, zero_point_buffer_index=2)),
        (0x48, (4, 8), (16, 16), PerBlockAffine(axis=1, block_size=4, scale_buffer_index=1, symmetric=True,
                                                 scale_type_tag=int(ScaleType.FLOAT16))),
        (0x49, (4, 16), (32, 32), NF4(axis=1, block_size=8, scale_buffer_index=1)),
        (0x10, (4, 32), (128, 8), MXFP(axis=1, block_size=16, scale_buffer_index=1)),
    ]
    for type_tag, shape, sizes, q in schemes:
        seeds.append(encode_quantization(q))
        d = TensorDescriptor(type_tag=type_tag, shape=shape, quantization=q,
                             buffers=tuple(BufferHandle(byte_size=s) for s in sizes))
        seeds.append(write_tensor_descriptor(d))
    seeds.append(struct.pack("<4sBBIIBBI", b"HRRY", 1, 0, 20, 0, 3, 1, 0))  # a bare header
    if generated:
        try:
            from hurray_decl.hurray.fuzz import draw_examples
            from hurray_decl.hurray.strategies import invalid_tensor_descriptors, tensor_descriptors
        except ImportError:  # hypothesis is not installed: the fixed seeds only
            return seeds
        seeds += [write_tensor_descriptor(d) for d in draw_examples(tensor_descriptors(), generated, 0)]
        seeds += [data for data, _ in draw_examples(invalid_tensor_descriptors(), generated, 1)]
    return seeds


def main(argv: Sequence[str] | None = None) -> int:
    """Run libFuzzer with ``argv`` (libFuzzer flags and corpus directories or input files)."""
    global EVERY
    EVERY = sample_every(SAMPLE)
    return run_libfuzzer("hurray_decl.hurray.fuzz_target", test_one_input, seed_inputs, 200, INSTRUMENTED, argv,
                         warm=lambda: warm_up(lambda data: check_one(data, every=1), seed_inputs(0)))


if __name__ == "__main__":
    sys.exit(main())
