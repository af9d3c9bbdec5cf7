"""Coverage-guided fuzz target (atheris) over the stream reader, :func:`~.reader.read_stream`.

Every input is read twice, from bytes and from a file-like source that hands out at most 7
bytes per read and records how far each request could reach. The oracle:

* only :class:`~hurray_decl.errors.HurrayDeclError` escapes, with an ``HS-`` code and an offset
  inside the input (anything else is a finding);
* both reads agree: the same items, the same refusal (code, path, offset);
* the items re-encode to the bytes they were read from, back to back from byte 0 (HS-FRM-01/02);
* no item needed a byte after its own last one, and a refusal came without asking for more
  than the input's bytes up to the fault (HS-FRM-13/14): after each item the source was never
  asked past that item's end;
* after a refusal, the next call raises the same error (HS-FRM-10);
* one read takes at most :data:`SLOW_SECONDS` of CPU time (the declarations are compiled before the run,
  :func:`warm`); ``-rss_limit_mb`` catches allocation from a
  claimed size (HS-FRM-08, HS-CMP-05).

Run it 10 minutes (new inputs go into CORPUS_DIR, crashes into ``crash-*`` files)::

    mkdir -p stream-corpus && python -m hurray_decl.hurray.stream.fuzz_target -max_total_time=600 \\
        -max_len=4096 -timeout=2 -rss_limit_mb=1024 -print_final_stats=1 stream-corpus

An empty CORPUS_DIR is seeded with the stream vectors (the copies under
``tests/conformance/hurray/streams`` when found) and ``HURRAY_FUZZ_SEEDS`` (default 100) drawn
valid streams and as many rule-labelled mutants.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from hurray_decl.errors import HurrayDeclError
from hurray_decl.fuzz_harness import run_libfuzzer, within
from hurray_decl.hurray.examples import checkout_conformance_descriptors
from hurray_decl.hurray.stream.frames import CompositeItem, Item
from hurray_decl.hurray.stream.reader import read_stream
from hurray_decl.hurray.tensor import write_tensor_descriptor

SLOW_SECONDS = 2.0
STEP = 7
INSTRUMENTED = ("hurray_decl", "construct")


class StreamOracleFailure(AssertionError):
    """The reader broke one of the oracle's properties."""


class _Trickle:
    def __init__(self, data: bytes) -> None:
        self.data, self.at, self.furthest = data, 0, 0

    def read(self, count: int) -> bytes:
        self.furthest = max(self.furthest, self.at + count)
        part = self.data[self.at:self.at + min(count, STEP)]
        self.at += len(part)
        return part


def _encoded(item: Item) -> bytes:
    if isinstance(item, CompositeItem):
        head: bytes = write_tensor_descriptor(item.head, permissive=True)
        return head + b"".join(_encoded(m) for m in item.members)
    raw: bytes = write_tensor_descriptor(item.descriptor, permissive=True)
    return raw + b"".join(bytes(b) for b in item.buffers)


def _read(source: Any, data: bytes, trickle: _Trickle | None = None) -> tuple[list[bytes], HurrayDeclError | None]:
    reader = read_stream(source)
    frames: list[bytes] = []
    end = 0
    while True:
        try:
            item = next(reader)
        except StopIteration:
            break
        except HurrayDeclError as err:
            if not err.code.startswith("HS-") or err.offset is None or not 0 <= err.offset <= len(data):
                raise StreamOracleFailure(f"a refusal without an HS code or an offset in the input: {err}") from err
            try:
                next(reader)
            except HurrayDeclError as again:
                if again is not err:
                    raise StreamOracleFailure("a dead stream raised another error") from again
            else:
                raise StreamOracleFailure("a refused stream went on")
            return frames, err
        raw = _encoded(item)
        if data[end:end + len(raw)] != raw:
            raise StreamOracleFailure(f"item {len(frames)} does not re-encode to the bytes at {end}")
        end += len(raw)
        if trickle is not None and trickle.furthest > end:
            raise StreamOracleFailure(f"item {len(frames)} was returned after asking for byte {trickle.furthest} "
                                      f"past its end {end}")
        frames.append(raw)
    if end != len(data):
        raise StreamOracleFailure(f"a clean end at {end} of {len(data)} bytes")
    return frames, None


def check_one(data: bytes) -> None:
    """Read ``data`` both ways and check the oracle (see the module's documentation)."""
    with within(SLOW_SECONDS, "read_stream", data):
        first = _read(data, data)
    trickle = _Trickle(data)
    with within(SLOW_SECONDS, "read_stream (trickle)", data):
        second = _read(trickle, data, trickle)
    a, b = first[1], second[1]
    if first[0] != second[0] or (a is None) != (b is None) or (
            a is not None and b is not None and (a.code, a.path, a.offset) != (b.code, b.path, b.offset)):
        raise StreamOracleFailure(f"bytes and a trickling source disagree: {a} / {b}")


def test_one_input(data: bytes) -> None:
    """The libFuzzer callback."""
    check_one(bytes(data))


def seed_inputs(generated: int = 100) -> list[bytes]:
    """The stream vectors, then ``generated`` valid streams and as many mutants (with hypothesis)."""
    seeds: list[bytes] = []
    seeds += [p.read_bytes() for p in checkout_conformance_descriptors("streams", "*.stream")]
    if generated:
        try:
            from hurray_decl.hurray.fuzz import draw_examples
            from hurray_decl.hurray.stream.strategies import invalid_streams, streams
        except ImportError:  # hypothesis is not installed: the vectors only
            return seeds
        seeds += [data for data, _ in draw_examples(streams(), generated, 0)]
        seeds += [case.data for case in draw_examples(invalid_streams(), generated, 1)]
    return seeds


def warm() -> None:
    """Read the stream vectors until every declaration they use runs compiled: compiling one takes
    seconds once, which is not the input's doing and must not count as a slow input."""
    from hurray_decl.declare.schema import WARM_AFTER

    vectors = seed_inputs(0)
    for _ in range(WARM_AFTER + 2):
        for data in vectors:
            check_one(data)


def main(argv: Sequence[str] | None = None) -> int:
    warm()
    return run_libfuzzer("hurray_decl.hurray.stream.fuzz_target", test_one_input, seed_inputs, 100, INSTRUMENTED,
                         argv)


if __name__ == "__main__":
    sys.exit(main())
