"""What the atheris (libFuzzer for Python) targets share: the slow-call check, the choice of the
inputs that get a target's full oracle, coverage instrumentation of chosen packages, seeding an
empty corpus, and the libFuzzer entry.

The targets themselves (:mod:`hurray_decl.hurray.fuzz_target` for Hurray,
:mod:`hurray_decl.onnx_light.fuzz_target` for onnx-light) hold their oracles and seeds.
"""

from __future__ import annotations

import gc
import hashlib
import os
import sys
import time
import types
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path


class SlowInput(AssertionError):
    """One call took longer than the target allows."""


@contextmanager
def within(seconds: float, what: str, data: bytes,
           clock: Callable[[], float] = time.process_time) -> Iterator[None]:
    """Raise :class:`SlowInput` when the body takes longer than ``seconds`` on ``data``, whether
    it returns or raises (a slow refusal is a finding too). The default clock counts this
    process's CPU time only, so that a loaded machine does not make an input slow (libFuzzer's
    ``-timeout`` still catches a call that never returns)."""
    started = clock()
    try:
        yield
    finally:
        elapsed = clock() - started
        if elapsed > seconds:
            raise SlowInput(f"{what} took {elapsed:.2f} s on {len(data)} bytes")


SAMPLE_VARIABLE = "HURRAY_FUZZ_SAMPLE"
"""The environment variable that sets :func:`sample_every` (``1``: every input gets the full oracle)."""


def sample_every(default: int) -> int:
    """One input in how many gets a target's full oracle: :data:`SAMPLE_VARIABLE`, else ``default``."""
    raw = os.environ.get(SAMPLE_VARIABLE)
    if raw is None:
        return default
    try:
        every = int(raw)
    except ValueError:
        every = 0
    if every < 1:
        raise SystemExit(f"{SAMPLE_VARIABLE}={raw!r}: expected a whole number of at least 1")
    return every


def sampled(data: bytes, every: int) -> bool:
    """Whether ``data`` is one of the inputs (one in ``every``) that get the full oracle. It is
    decided by the bytes alone (their CRC-32), so a replayed input takes the path it took in the run."""
    return every <= 1 or zlib.crc32(data) % every == 0


def write_seeds(directory: Path, seeds: Sequence[bytes]) -> int:
    """Write ``seeds`` into ``directory``, each named by its content hash; returns the count."""
    directory.mkdir(parents=True, exist_ok=True)
    for data in seeds:
        (directory / hashlib.sha1(data).hexdigest()).write_bytes(data)
    return len(seeds)


def instrument(prefixes: Sequence[str]) -> int:
    """Add coverage instrumentation to every loaded function of the given packages."""
    import atheris

    roots = [f"{name}." for name in prefixes]
    count = 0
    for obj in gc.get_objects():
        if not isinstance(obj, types.FunctionType):
            continue
        module = getattr(obj, "__module__", None) or ""
        if module in prefixes or any(module.startswith(root) for root in roots):
            try:
                atheris.instrument_func(obj)
                count += 1
            except Exception:  # a function atheris cannot patch stays uninstrumented
                pass
    return count


def warm_up(callback: Callable[[bytes], None], inputs: Sequence[bytes], rounds: int | None = None) -> None:
    """Run ``callback`` on ``inputs`` ``rounds`` times (default: until every declaration they use
    runs compiled), before the run: the first input of a kind would otherwise pay for the imports
    and compilations it triggers (seconds, on a loaded machine, past libFuzzer's ``-timeout``),
    and code imported only then would escape the coverage instrumentation."""
    from hurray_decl.declare.schema import WARM_AFTER

    for _ in range(WARM_AFTER + 1 if rounds is None else rounds):
        for data in inputs:
            callback(data)


def run_libfuzzer(name: str, callback: Callable[[bytes], None], seeds: Callable[[int], Sequence[bytes]],
                  default_seeds: int, instrumented: Sequence[str], argv: Sequence[str] | None = None,
                  warm: Callable[[], None] | None = None) -> int:
    """Run libFuzzer on ``callback`` with ``argv`` (libFuzzer flags and corpus folders or inputs).

    An empty first corpus folder is filled with ``seeds(n)`` first, ``n`` from the
    ``HURRAY_FUZZ_SEEDS`` environment variable (default ``default_seeds``); then ``warm()`` runs
    (see :func:`warm_up`), then the instrumentation.
    """
    import atheris

    args = list(sys.argv if argv is None else argv)
    if len(args) < 1 or args[0].startswith("-"):
        args.insert(0, name)
    dirs = [Path(a) for a in args[1:] if not a.startswith("-")]
    if dirs and dirs[0].is_dir() and not any(dirs[0].iterdir()):
        count = write_seeds(dirs[0], seeds(int(os.environ.get("HURRAY_FUZZ_SEEDS", str(default_seeds)))))
        sys.stderr.write(f"INFO: seeded {count} inputs into {dirs[0]}\n")
    if warm is not None:
        warm()
    count = instrument(instrumented)
    sys.stderr.write(f"INFO: instrumented {count} functions of {', '.join(instrumented)}\n")
    atheris.Setup(args, callback)
    atheris.Fuzz()
    return 0
