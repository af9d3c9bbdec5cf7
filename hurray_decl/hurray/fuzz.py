"""Fuzz an external Hurray reader against hurray_decl: ``hurray-decl fuzz``.

Each case is one tensor descriptor written to a file: either valid (drawn by
:func:`hurray_decl.hurray.strategies.tensor_descriptors`, expected verdict *accept*) or a mutant
labelled with the one rule it breaks (:func:`hurray_decl.hurray.strategies.invalid_tensor_descriptors`,
expected verdict *reject*). The reader command runs once per case with ``{file}`` replaced by
the case's path; exit status 0 means it accepted the descriptor, anything else that it refused
it, and a run longer than ``--timeout`` seconds is a disagreement of kind ``timeout``.

Every disagreement is reported with the expected verdict, the rule, the case number, the seed
and the file, which is kept for replay in ``--out`` (default: a new temporary folder, named in
the report, removed again when there is nothing to keep); agreeing cases are deleted.
The same ``--seed`` and ``--count`` (and ``--rule``) draw the same cases again. The summary
counts cases and disagreements by rule. Exit status: 0 when the reader agreed on every case,
1 otherwise, 2 for a usage error (such as a reader command that cannot be started or an unknown
rule), 3 for a file error (``--out`` or ``--json`` naming something that cannot be written).

The cases need only descriptor bytes: rules that need buffer contents are not fuzzed here
(see :data:`hurray_decl.hurray.strategies.DATA_MUTANTS` for those, with their buffers).

Example::

    hurray-decl fuzz --reader "hurray-decl validate {file}" --count 2000 --seed 7
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

ACCEPT, REJECT = "accept", "reject"
VALID = "valid"
"""The rule column of a valid case."""
EITHER = "accept or reject"
"""The expected verdict of a valid descriptor of one of the project's private schemes (0xF0,
0xF1): a reader party to their agreement (this package) accepts it, any other refuses the tag
as unrecognised (HQ-EXT-03); neither is a disagreement."""
PRIVATE = "private"
"""The rule column of a private-scheme case when drawn; once the reader has run, the case is
counted under :data:`PRIVATE_REFUSED` or :data:`PRIVATE_ACCEPTED` by its verdict."""
PRIVATE_REFUSED, PRIVATE_ACCEPTED = "private:refused", "private:accepted"
PRIVATE_SHARE = 10
"""Without --rule, one case in PRIVATE_SHARE is a private-scheme descriptor."""



@dataclass(frozen=True)
class Case:
    """One descriptor to hand to the reader."""

    index: int
    data: bytes
    expected: str  # ACCEPT or REJECT
    rule: str  # the rule a mutant breaks, or VALID


@dataclass
class Disagreement:
    """A case on which the reader's verdict differs from the expected one."""

    index: int
    rule: str
    expected: str
    kind: str  # "accepted invalid", "rejected valid" or "timeout"
    exit_status: int | None
    file: str
    seed: int
    output: str


VALID_SHARE = 4
"""Without --rule, one case in VALID_SHARE is a valid descriptor; the rest are spread evenly over the rules."""


def draw_examples(strategy, count: int, seed: int) -> list:
    """``count`` examples of ``strategy``, reproducibly from ``seed`` (Hypothesis' generation phase)."""
    from hypothesis import HealthCheck, Phase, given, seed as fix_seed, settings

    drawn: list = []

    @fix_seed(seed)
    @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(example) -> None:
        if len(drawn) < count:
            drawn.append(example)

    collect()
    return drawn


def spread_cases(count: int, seed: int, rules: Sequence[str] | None, known: Collection[str], table: str,
                 valid: Callable[[int, int], list[bytes]],
                 mutants: Callable[[str, int, int], list[bytes]],
                 private: Callable[[int, int], list[bytes]] | None = None) -> list[Case]:
    """``count`` cases drawn reproducibly from ``seed``: a quarter ``valid(n, seed)`` inputs, with
    ``private`` one in :data:`PRIVATE_SHARE` ``private(n, seed)`` inputs (expected :data:`EITHER`),
    and the rest ``mutants(rule, n, seed)`` spread evenly over the ``known`` rules, or only cases
    of ``rules`` when given (each known, or :data:`PRIVATE`; ``table`` names where they are
    listed). Cases of one rule come from one run, seeded by ``seed`` and the rule; the order is
    shuffled."""
    import random
    import zlib

    from hurray_decl.errors import ArgumentError

    if rules:
        unknown = [r for r in rules if r not in known and not (private and r == PRIVATE)]
        if unknown:
            raise ArgumentError("rules", f"no mutant generator for {', '.join(unknown)} (see {table})")
    targets = sorted(set(rules) - {PRIVATE}) if rules else sorted(known)
    quota: Counter[str] = Counter()
    if not rules:
        quota[VALID] = max(1, count // VALID_SHARE)
    if private is not None and not rules:
        quota[PRIVATE] = max(1, count // PRIVATE_SHARE)
    elif private is not None and rules and PRIVATE in rules:  # alone: every case; beside rules: a rule's share
        quota[PRIVATE] = max(1, count // (len(targets) + 1)) if targets else count
    rest = count - sum(quota.values())
    for i, rule in enumerate(targets):
        quota[rule] = rest // len(targets) + (1 if i < rest % len(targets) else 0)
    drawn: list[tuple[bytes, str, str]] = []
    for bucket, n in quota.items():
        if not n:
            continue
        bucket_seed = seed ^ zlib.crc32(bucket.encode())
        if bucket == VALID:
            drawn += [(data, ACCEPT, VALID) for data in valid(n, bucket_seed)]
        elif bucket == PRIVATE and private is not None:
            drawn += [(data, EITHER, PRIVATE) for data in private(n, bucket_seed)]
        else:
            drawn += [(data, REJECT, bucket) for data in mutants(bucket, n, bucket_seed)]
    random.Random(seed).shuffle(drawn)
    return [Case(i, data, expected, rule) for i, (data, expected, rule) in enumerate(drawn)]


def draw_cases(count: int, seed: int, rules: Sequence[str] | None = None) -> list[Case]:
    """``count`` descriptor cases (see :func:`spread_cases`): valid descriptors on public devices
    (a private device tag needs an agreement, HT-BUFT-16, another reader may lack), valid
    descriptors of the project's private schemes (:func:`private_descriptors`, expected
    :data:`EITHER`) and one mutant generator per reader rule. The project's schemes are registered
    first, so that no mutant takes their tags for unknown private ones."""
    from hurray_decl.hurray.quantization import register_project_schemes
    from hurray_decl.hurray.strategies import MUTANTS, placements, tensor_descriptors
    from hurray_decl.hurray.tables.codes import Device
    from hurray_decl.hurray.tensor import write_tensor_descriptor

    register_project_schemes()

    def valid(n: int, bucket_seed: int) -> list[bytes]:
        strategy = tensor_descriptors(placement=placements(Device.codes()))
        return [write_tensor_descriptor(d) for d in draw_examples(strategy, n, bucket_seed)]

    def mutants(rule: str, n: int, bucket_seed: int) -> list[bytes]:
        return list(draw_examples(MUTANTS[rule](), n, bucket_seed))

    return spread_cases(count, seed, rules, MUTANTS, "hurray_decl.hurray.strategies.MUTANTS", valid, mutants,
                        private_descriptors)


def private_descriptors(n: int, seed: int) -> list[bytes]:
    """``n`` valid tensor descriptors of the project's private schemes, drawn from ``seed``: ggml
    codebook tensors of every type of its table, and ggml super-block tensors of every storage
    type, sub-blocks of 16 or 32, with or without minimums (added or subtracted); row-major,
    rank 1 to 3, whole super-blocks along the last axis, each parameter buffer of its exact size."""
    import random

    from hurray_decl.hurray.quantization import register_project_schemes
    from hurray_decl.hurray.schemes import SchemeDescriptor, ggml_codebook, ggml_super_block
    from hurray_decl.hurray.tables.element_types import BY_NAME
    from hurray_decl.hurray.tensor import BufferHandle, RowMajor, TensorDescriptor, write_tensor_descriptor

    register_project_schemes()
    rng = random.Random(seed)
    kinds = list(ggml_codebook.TYPES.values())
    out = []
    for _ in range(n):
        codebook = rng.random() < 0.5
        kind = rng.choice(kinds)
        k, s = (kind.super_block, kind.sub_block) if codebook else (256, rng.choice((16, 32)))
        shape = tuple(rng.randint(1, 3) for _ in range(rng.randint(0, 2))) + (k * rng.randint(1, 2),)
        axis = len(shape) - 1
        minimums = not codebook and rng.random() < 0.5
        model: SchemeDescriptor
        if codebook:
            storage = kind.storage
            model = ggml_codebook.GgmlCodebook(axis=axis, ggml_type=kind.ggml_type, super_block=k, sub_block=s,
                                               exponent=kind.exponent, d_buffer_index=1, scale_buffer_index=2)
        else:
            storage = rng.choice(ggml_super_block.ROW.storage_types)
            model = ggml_super_block.GgmlSuperBlock(
                axis=axis, super_block=k, sub_block=s, d_buffer_index=1, scale_buffer_index=2,
                dmin_buffer_index=3 if minimums else None, min_buffer_index=4 if minimums else None,
                flags=ggml_super_block.ADDED_MINIMUM if minimums and rng.random() < 0.5 else 0)
        count = 1
        for extent in shape:
            count *= extent
        sizes = [(count * BY_NAME[storage].bits + 7) // 8, 2 * (count // k), count // s]
        if minimums:
            sizes += [2 * (count // k), count // s]
        descriptor = TensorDescriptor(type_tag=BY_NAME[storage].tag, shape=shape, layout=RowMajor(),
                                      buffers=tuple(BufferHandle(byte_size=size) for size in sizes),
                                      quantization=model)
        out.append(write_tensor_descriptor(descriptor))
    return out


def reader_command(template: str, path: str) -> list[str]:
    """The reader's argv: ``template`` split like a shell would, ``{file}`` replaced by ``path``
    (appended when the template has no ``{file}``)."""
    argv = shlex.split(template)
    if not any("{file}" in token for token in argv):
        return argv + [path]
    return [token.replace("{file}", path) for token in argv]


def run_case(case: Case, template: str, directory: Path, timeout: float) -> tuple[str, int | None, str, Path]:
    """Write the case, run the reader; (verdict, exit status, output tail, file). The verdict is
    ACCEPT, REJECT or "timeout"."""
    path = directory / f"case-{case.index:05d}-{case.rule}.bin"
    path.write_bytes(case.data)
    try:
        done = subprocess.run(reader_command(template, str(path)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return "timeout", None, "", path
    tail = done.stdout.decode("utf-8", "replace").strip()[-300:]
    return (ACCEPT if done.returncode == 0 else REJECT), done.returncode, tail, path


def fuzz(template: str, count: int, seed: int, *, timeout: float = 10.0, rules: Sequence[str] | None = None,
         out: Path, jobs: int = 1, progress: TextIO | None = sys.stderr,
         draw=None) -> tuple[list[Disagreement], Counter, Counter]:
    """Run every case; returns (disagreements, cases by rule, disagreements by rule). ``out`` is created
    when the first disagreeing case is kept there; ``draw`` (default :func:`draw_cases`) draws the cases
    from (count, seed, rules)."""
    from concurrent.futures import ThreadPoolExecutor

    started = time.monotonic()
    cases = (draw or draw_cases)(count, seed, rules)
    if progress is not None:
        progress.write(f"[fuzz] seed {seed}: {len(cases)} cases drawn in {time.monotonic() - started:.1f} s; "
                       f"running the reader ({jobs} at a time)\n")
    by_rule: Counter = Counter(case.rule for case in cases)  # private cases: counted by their verdict below
    bad_by_rule: Counter = Counter()
    disagreements: list[Disagreement] = []
    last = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="hurray-fuzz-"))

    def one(case: Case) -> tuple[Case, tuple[str, int | None, str, Path]]:
        return case, run_case(case, template, work, timeout)

    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        for done, (case, (verdict, status, tail, path)) in enumerate(pool.map(one, cases), 1):
            if case.expected == EITHER and verdict in (ACCEPT, REJECT):  # what the rules expect either way
                by_rule[PRIVATE] -= 1
                by_rule[PRIVATE_REFUSED if verdict == REJECT else PRIVATE_ACCEPTED] += 1
                if not by_rule[PRIVATE]:
                    del by_rule[PRIVATE]
                path.unlink(missing_ok=True)
            elif verdict != case.expected:
                out.mkdir(parents=True, exist_ok=True)
                kept = out / path.name
                path.replace(kept)
                kind = "timeout" if verdict == "timeout" else (
                    "accepted invalid" if case.expected == REJECT else "rejected valid")
                disagreements.append(Disagreement(case.index, case.rule, case.expected, kind, status, str(kept),
                                                  seed, tail))
                bad_by_rule[case.rule] += 1
            else:
                path.unlink(missing_ok=True)
            now = time.monotonic()
            if progress is not None and (now - last >= 2.0 or done == len(cases)):
                progress.write(f"[fuzz] {done}/{len(cases)} cases, {len(disagreements)} disagreements, "
                               f"{now - started:.0f} s\n")
                progress.flush()
                last = now
    finally:  # on Ctrl-C too: cases not started are dropped, running ones finish (each within --timeout)
        pool.shutdown(wait=True, cancel_futures=True)
        for leftover in work.glob("*"):
            leftover.unlink(missing_ok=True)
        work.rmdir()
    return disagreements, by_rule, bad_by_rule


def report(disagreements: list[Disagreement], by_rule: Counter, bad_by_rule: Counter, seed: int,
           stream: TextIO) -> None:
    """The human summary: each disagreement, then the counts by rule."""
    total = sum(by_rule.values())
    for d in disagreements:
        stream.write(f"DISAGREE case {d.index} (seed {d.seed}): rule {d.rule}, expected {d.expected}, "
                     f"got {d.kind}" + (f" (exit {d.exit_status})" if d.exit_status is not None else "")
                     + f"; replay: {d.file}\n")
    stream.write(f"\n{total} cases, seed {seed}: {len(disagreements)} disagreements\n")
    stream.write(f"{'rule':<16} {'cases':>6} {'disagreements':>14}\n")
    for rule in sorted(by_rule, key=lambda r: (r != VALID, r)):
        stream.write(f"{rule:<16} {by_rule[rule]:>6} {bad_by_rule.get(rule, 0):>14}\n")
    if by_rule.get(PRIVATE_REFUSED) or by_rule.get(PRIVATE_ACCEPTED):
        stream.write(f"{PRIVATE}: valid descriptors of this project's private schemes (0xF0, 0xF1); refused is what "
                     "HQ-EXT-03 expects of a reader without their agreement, accepted of one party to it: neither "
                     "is a disagreement\n")
