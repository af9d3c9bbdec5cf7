"""Coverage-guided fuzz target (atheris) over the onnx-light decoders.

Every input is read as each of the three onnx-light kinds (``EncodedValueProto``, ``TensorProto``,
``ModelProto``): parsed, checked with the full verdict (:func:`~hurray_decl.onnx_light.inputs.check`:
descriptor, payload, every block and code, parameter sets, model checks; it decodes every encoded
value, :func:`~hurray_decl.onnx_light.dequantize_value`), its plans rebuilt when accepted
(:func:`~hurray_decl.onnx_light.decode_plan`), and,
for one input in :data:`SAMPLE` (chosen by its bytes, :func:`~hurray_decl.fuzz_harness.sampled`, so a
replayed input takes the same path; ``HURRAY_FUZZ_SAMPLE=1`` for every input), dumped
(:func:`~hurray_decl.onnx_light.dump.dump`): a dump costs more than the decoders, and the rate
should be the decoders'. The oracle:

* only :class:`~hurray_decl.errors.HurrayDeclError` may escape (anything else is a finding);
* on a sampled input, the dump's rows cover every byte exactly once, in order, and the dump agrees
  with the verdict (an error exactly when the verdict refuses);
* no call takes longer than :data:`SLOW_SECONDS`; libFuzzer's ``-rss_limit_mb`` catches memory
  that grows with a size claimed in the input.

A short run (the CI smoke test)::

    python -m hurray_decl.onnx_light.fuzz_target -runs=2000 -max_len=2048 -timeout=5 -rss_limit_mb=1536 CORPUS_DIR

The long run (10 minutes)::

    mkdir -p ol-corpus && python -m hurray_decl.onnx_light.fuzz_target -max_total_time=600 -max_len=4096 \\
        -timeout=5 -rss_limit_mb=1536 -print_final_stats=1 ol-corpus

With ``OL_FUZZ_FINDINGS=DIR`` the run records each distinct finding in DIR (``findings.txt`` and
the first input of each) and continues. An empty CORPUS_DIR is seeded with the bundled onnx-light
corpus and ``HURRAY_FUZZ_SEEDS`` (default 100) generated valid inputs and as many mutants. Replay one input with
``python -m hurray_decl.onnx_light.fuzz_target crash-FILE``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from operator import attrgetter
from pathlib import Path

import numpy as np

from hurray_decl.dump.rows import Row
from hurray_decl.errors import HurrayDeclError
from hurray_decl.fuzz_harness import run_libfuzzer, sample_every, sampled, warm_up, within
from hurray_decl.onnx_light.codec import decode_plan
from hurray_decl.onnx_light.dump import dump
from hurray_decl.onnx_light.inputs import KINDS, MODEL, VALUE, check, items, parse

SLOW_SECONDS = 2.0
"""The longest one call may take on one input."""

SAMPLE = 16
"""One input in this many (chosen by its bytes) is dumped too. A dump (a walk that makes a row per
field and element, the verdict again, the coverage check) costs about as much as the three
decoders together; at 16 a run dumps about as many inputs a second (60 or so) as it did at 8
before the walks were made faster, and the dump's code is reached as often."""


class DumpMismatch(AssertionError):
    """A dump that does not cover the input, or disagrees with the verdict."""


_COLUMNS = attrgetter("offset", "size", "hex", "field")


def _first_gap(data: bytes, rows: Sequence[Row]) -> tuple[int | None, int]:
    """The first row that does not name, by a field, the bytes where the rows before it end (with
    its own hex: the dump writes bytes.hex(" ").upper()), and where that is; else (None, the
    bytes the rows cover). Read by columns, the hex of all rows at once."""
    if not rows:
        return None, 0
    offsets, sizes, hexes, names = zip(*map(_COLUMNS, rows))
    size = np.array(sizes, dtype=np.int64)
    start = np.cumsum(size) - size
    bad = ((np.array(offsets, dtype=np.int64) != start) | (size < 1) | ~np.array(list(map(bool, names)))
           | (np.array(list(map(len, hexes))) != 3 * size - 1))
    whole = data.hex(" ").upper()
    if " ".join(hexes) != whole:  # which rows show other bytes (a finding: this may be slow)
        bad |= np.array([shown != whole[3 * at:3 * (at + n) - 1] for shown, at, n in zip(hexes, start.tolist(), sizes)])
    if bad.any():
        first = int(bad.argmax())
        return first, int(start[first])
    return None, int(size.sum())


def check_dump(data: bytes, kind: str, refused: HurrayDeclError | None) -> None:
    """The dump of ``data`` covers it byte for byte and carries an error exactly when refused."""
    with within(SLOW_SECONDS, f"dump({kind})", data):
        result = dump(data, kind=kind)
    gap, at = _first_gap(data, result.rows)
    if gap is not None:
        raise DumpMismatch(f"{kind} dump row {result.rows[gap]} does not continue at byte {at}")
    if at != len(data):
        raise DumpMismatch(f"{kind} dump covers {at} of {len(data)} bytes")
    if (result.error is None) != (refused is None):
        raise DumpMismatch(f"{kind} dump verdict {result.error} but the decoder says {refused}")
    if refused is not None and result.error is not None and result.error.code != refused.code:
        raise DumpMismatch(f"{kind} dump code {result.error.code}, decoder {refused.code}")


def check_one(data: bytes, every: int = SAMPLE) -> None:
    """Run one input through every onnx-light kind, and dump it when it is one of the inputs
    (one in ``every``) sampled for that; raise on anything but a proper verdict."""
    dumped = sampled(data, every)
    for kind in KINDS:
        refused: HurrayDeclError | None = None
        try:
            with within(SLOW_SECONDS, f"the {kind} decoders", data):
                message = parse(data, kind)
                check(message, kind)
                for item in items(message, kind) if kind in (VALUE, MODEL) else ():
                    decode_plan(item.value, item.model)  # check has decoded each value already
        except HurrayDeclError as err:
            refused = err
        if dumped:
            check_dump(data, kind, refused)


FINDINGS = os.environ.get("OL_FUZZ_FINDINGS")
"""With a folder here, a long run records each distinct finding (exception type and the line it
was raised at) with its first input there and goes on, instead of stopping at the first."""
_SEEN: set[tuple[str, str]] = set()


def _record(findings: str, data: bytes, exc: BaseException) -> None:
    import traceback

    where = traceback.extract_tb(exc.__traceback__)[-1]
    signature = (type(exc).__name__, f"{Path(where.filename).name}:{where.lineno}")
    if signature in _SEEN:
        return
    _SEEN.add(signature)
    folder = Path(findings)
    folder.mkdir(parents=True, exist_ok=True)
    name = f"finding-{len(_SEEN):03d}-{signature[0]}-{signature[1].replace(':', '-')}"
    (folder / name).write_bytes(data)
    with open(folder / "findings.txt", "a", encoding="utf-8") as log:
        log.write(f"{name}: {type(exc).__name__} at {signature[1]}: {str(exc)[:300]}\n")


EVERY = SAMPLE
"""The run's sampling: ``HURRAY_FUZZ_SAMPLE``, else :data:`SAMPLE` (set by :func:`main`)."""


def test_one_input(data: bytes) -> None:
    """The libFuzzer callback."""
    if FINDINGS is None:
        check_one(bytes(data), EVERY)
        return
    try:
        check_one(bytes(data), EVERY)
    except Exception as exc:  # collect mode records every finding and goes on
        _record(FINDINGS, bytes(data), exc)


def seed_inputs(generated: int = 100) -> list[bytes]:
    """The bundled corpus, then ``generated`` valid inputs and ``generated`` mutants (seeded)."""
    from hurray_decl.onnx_light.corpus import bundled
    from hurray_decl.onnx_light.mutants import MUTANTS, RandomSource, valid_case

    seeds = [p.read_bytes() for p in sorted(bundled().iterdir()) if p.suffix in (".pb", ".onnx")]
    rules = sorted(MUTANTS)
    seeds += [valid_case(RandomSource(i)).data for i in range(generated)]
    seeds += [MUTANTS[rules[i % len(rules)]].build(RandomSource(i)).data for i in range(generated)]
    return seeds


INSTRUMENTED = ("hurray_decl.onnx_light", "hurray_decl.declare.trace", "construct", "google.protobuf")
"""Packages whose Python code atheris instruments for coverage feedback."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run libFuzzer with ``argv`` (libFuzzer flags and corpus directories or input files)."""
    global EVERY
    EVERY = sample_every(SAMPLE)
    return run_libfuzzer("hurray_decl.onnx_light.fuzz_target", test_one_input, seed_inputs, 100, INSTRUMENTED,
                         argv, warm=warm)


WARM_LENGTH = 4096
"""The bundled inputs :func:`warm` reads: those this long at most (a run's ``-max_len``)."""


def warm() -> None:
    """Read the shorter bundled inputs once, with the full oracle, before the run (see
    :func:`~hurray_decl.fuzz_harness.warm_up`)."""
    short = [data for data in seed_inputs(0) if len(data) <= WARM_LENGTH]
    warm_up(lambda data: check_one(data, every=1), short, rounds=1)


if __name__ == "__main__":
    sys.exit(main())
