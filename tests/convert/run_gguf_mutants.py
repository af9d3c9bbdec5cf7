"""The GGUF mutation run: every mutant converts or is refused with a rule code, within time and memory.

    python -m tests.convert.run_gguf_mutants --count 20000 --seed 23 --workers 2 [--json report.json]

Draws ``--count`` mutants (:func:`hurray_decl.convert.gguf_mutants.draw_mutants`: small files
written by gguf's ``GGUFWriter``, changed by byte flips, truncations, count and length fields
rewritten to huge or nearby values, type fields changed) and runs ``hurray-decl convert MUTANT
-o OUT.hrry --json`` and ``hurray-decl ls MUTANT`` on each, in-process, in a pool of worker
processes. Each worker limits its address space (``RLIMIT_AS``) to what it had after start-up
plus ``--memory`` MiB and arms a ``--seconds`` timer per case; per case it measures the wall
time and the growth of its peak resident set (``VmHWM``, reset through ``/proc/self/clear_refs``).

Outcomes: ``converted`` (exit 0: every tensor converted),
``refused CODE`` (exit 1 with a rule code: a damaged magic too, HF-HDR-03, since the ``.gguf``
suffix tells the command line's input layer the kind of a file whose magic does not),
``not written`` (exit 1: a tensor did not convert, and each such tensor is listed with the code
of a RULES.md rule; a code outside RULES.md, ``ARGUMENT`` say, is a failure, ``other``), ``not recognised`` (a
mutant cut to fewer than the 4 magic bytes that ``convert`` and ``ls`` do not read as a GGUF:
cut to nothing, an empty input, exit 2 as for every command; or ``convert`` saying it is none of
the kinds it reads, exit 1), and the failures: ``internal`` (exit 4: an exception that is not the
project's), ``timeout``, ``memory`` (MemoryError under the limit), ``other`` (any other exit, and
an input of 4 bytes or more that is not recognised). The run exits 1 when any case failed, and
prints the counts per outcome, the codes, and the largest time and memory.
"""


from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import resource
import signal
import sys
import tempfile
import time
from collections import Counter
from multiprocessing import Pool
from pathlib import Path
from typing import Any

from hurray_decl.rules import all_rules

FAILURES = ("internal", "timeout", "memory", "other")
UNRECOGNISED = ("is none of the kinds convert reads", "empty input")
"""What ``convert`` says of an input it does not read as any kind (exit 1), and of an empty one (exit 2)."""
_LIMITS: dict[str, Any] = {}
_FOLDER: list[Path] = []


class Overtime(BaseException):
    """The per-case timer went off."""


def _alarm(signum, frame):
    raise Overtime


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def start(seconds: float, memory_mib: int, parent: str, keep: str | None) -> None:
    """Worker start-up: import everything a case uses, then cap the address space."""
    from hurray_decl.convert.gguf_mutants import valid_ggufs
    from hurray_decl.hurray.fuzz import draw_examples

    _FOLDER.append(Path(tempfile.mkdtemp(prefix="worker-", dir=parent)))
    for i, data in enumerate(draw_examples(valid_ggufs(), 3, 0)):  # the lazy imports of a conversion, once
        warm = _FOLDER[0] / f"warm{i}.gguf"
        warm.write_bytes(data)
        _run(["convert", str(warm), "-o", str(warm.with_suffix(".hrry"))])
        _run(["ls", str(warm)])
        warm.unlink()
        warm.with_suffix(".hrry").unlink(missing_ok=True)
    _LIMITS["seconds"] = seconds
    if keep:
        _LIMITS["keep"] = keep
    address_space = _status_kib("VmSize") * 1024 + memory_mib * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    signal.signal(signal.SIGALRM, _alarm)


def _run(argv: list[str]) -> tuple[int, str, str]:
    from hurray_decl import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(argv)
    return status, out.getvalue(), err.getvalue()


def _outcome(status: int, out: str, err: str, size: int) -> tuple[str, list[str]]:
    if status in (1, 2) and any(words in err for words in UNRECOGNISED):
        # too short to hold the magic (cut to nothing): not recognised as a GGUF at all; a longer input is a failure
        return ("not recognised" if size < 4 else "other"), [err.strip()[:300]]
    if status == 0:
        return "converted", []
    if status == 1:
        refused = re.search(r"invalid: \[([A-Z]+(?:-[A-Z0-9]+)+)\]", err)
        if refused:
            return f"refused {refused.group(1)}", []
        try:
            rows = json.loads(out)["tensors"]
        except (ValueError, KeyError):
            return "other", [err.strip()[:300]]
        codes = sorted({r["code"] for r in rows if r["status"] != "converted"})
        if not set(codes) <= set(all_rules()):  # every refused tensor names a RULES.md rule
            return "other", [f"codes outside RULES.md: {codes}"]
        return "not written", codes
    if status == 4:
        return "internal", [err.strip()[:300]]
    if status == 3 and "out of memory" in err:
        return "memory", [err.strip()[:300]]
    return "other", [f"exit {status}: {err.strip()[:300]}"]


def case(item: tuple[int, bytes, str]) -> dict:
    index, data, label = item
    folder = _FOLDER[0]
    source, target = folder / f"m{index}.gguf", folder / f"m{index}.hrry"
    source.write_bytes(data)
    measured = _reset_peak()
    before = _status_kib("VmRSS")
    began, cpu = time.perf_counter(), time.process_time()
    ls_status = None
    signal.setitimer(signal.ITIMER_REAL, _LIMITS["seconds"])
    try:
        status, out, err = _run(["convert", str(source), "-o", str(target), "--json"])
        kind, detail = _outcome(status, out, err, len(data))
        ls_status, _, ls_err = _run(["ls", str(source)])
        if ls_status not in (0, 1) and not (kind == "not recognised" and ls_status == 2 and "empty input" in ls_err):
            kind, detail = ("internal" if ls_status == 4 else "other"), [f"ls exit {ls_status}: {ls_err.strip()[:300]}"]
    except Overtime:
        kind, detail = "timeout", []
    except MemoryError:
        kind, detail = "memory", []
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    if kind in FAILURES and _LIMITS.get("keep"):
        (Path(_LIMITS["keep"]) / f"m{index}.gguf").write_bytes(data)  # kept for replay
    grown = max(0, _status_kib("VmHWM") - before) if measured else -1
    source.unlink(missing_ok=True)
    target.unlink(missing_ok=True)
    return {"index": index, "label": label, "outcome": kind, "detail": detail, "seconds": seconds, "cpu": cpu,
            "peak_growth_kib": grown, "ls": ls_status, "size": len(data)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=2.0, help="the time limit per case")
    parser.add_argument("--memory", type=int, default=300, help="MiB of address space per case beyond start-up")
    parser.add_argument("--json", help="write every case's result here")
    parser.add_argument("--keep", help="a folder to keep the failing mutants in, for replay")
    args = parser.parse_args(argv)
    from hurray_decl.convert.gguf_mutants import draw_mutants

    began = time.perf_counter()
    mutants = draw_mutants(args.count, args.seed)
    drawn = time.perf_counter() - began
    with tempfile.TemporaryDirectory(prefix="gguf-mutants-") as parent, \
            Pool(args.workers, initializer=start, initargs=(args.seconds, args.memory, parent, args.keep)) as pool:
        results = []
        for result in pool.imap_unordered(case, [(i, d, label) for i, (d, label) in enumerate(mutants)],
                                          chunksize=16):
            results.append(result)
            if len(results) % 1000 == 0:  # a long run shows it is moving
                print(f"  {len(results)} cases done", file=sys.stderr, flush=True)
    outcomes = Counter(r["outcome"] for r in results)
    codes = Counter(c for r in results if r["outcome"] == "not written" for c in r["detail"])
    kinds = Counter(r["label"].split(":")[0] for r in results)
    failed = [r for r in results if r["outcome"] in FAILURES]
    slowest = max(results, key=lambda r: r["seconds"])
    busiest = max(results, key=lambda r: r["cpu"])
    largest = max(results, key=lambda r: r["peak_growth_kib"])
    print(f"{len(results)} GGUF mutants (seed {args.seed}; drawn in {drawn:.0f} s), by mutation: "
          + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    for outcome, n in outcomes.most_common():
        print(f"  {n:6}  {outcome}")
    if codes:
        print("  codes of the tensors that did not convert: "
              + ", ".join(f"{c} {n}" for c, n in codes.most_common()))
    print(f"max time {slowest['seconds']:.3f} s wall ({slowest['label']}, {slowest['size']} bytes), "
          f"{busiest['cpu']:.3f} s CPU ({busiest['label']}); "
          f"max peak-RSS growth {largest['peak_growth_kib'] / 1024:.1f} MiB ({largest['label']}); "
          f"limits {args.seconds} s and {args.memory} MiB of address space per case")
    for r in failed[:20]:
        print(f"  FAILED #{r['index']} {r['label']}: {r['outcome']} {r['detail']}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
