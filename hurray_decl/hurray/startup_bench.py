"""``hurray-decl bench --startup``: how long ``hurray-decl validate`` of a bundled descriptor takes
to start and finish, as a ratio to ``python -c "import numpy"``, from paired runs in one session.

The two commands run alternately (a pair at a time, so that a change in the machine's load
falls on both), each in a fresh interpreter with this one's environment; the figures are the
medians of their wall times and of their CPU times (user + system, from the child's resource
usage, which a loaded machine disturbs less), and the median of the ratios within each pair.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from importlib.util import cache_from_source
from pathlib import Path
from typing import TextIO

from hurray_decl.hurray.examples import bundled

EXAMPLE = "valid_block_paged.bin"
"""The descriptor ``validate`` reads: a bundled example (quantized, per-block, a paged layout)."""

BASELINE = ("-c", "import numpy")
"""The reference command's arguments to the interpreter."""


def validate_command(example: Path) -> tuple[str, ...]:
    return ("-m", "hurray_decl", "validate", str(example))


def timed(arguments: tuple[str, ...]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of the interpreter with ``arguments``."""
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, *arguments], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    error = child.stderr.read() if child.stderr is not None else b""
    if child.stderr is not None:
        child.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(arguments)} failed: {error.decode(errors='replace')[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime


def bytecode_note() -> str | None:
    """A warning when the package's modules are compiled from source at every start (bytecode
    caching off and no cached bytecode), which ``import numpy`` (installed compiled) does not pay."""
    source = Path(__file__).with_name("__init__.py")
    if sys.dont_write_bytecode and not Path(cache_from_source(str(source))).exists():
        return ("note: PYTHONDONTWRITEBYTECODE is set and hurray_decl has no cached bytecode: every start "
                "compiles its sources (python -m compileall hurray_decl, or unset it)")
    return None


def run(pairs: int = 21, out: TextIO = sys.stdout) -> dict[str, float]:
    """Time ``pairs`` pairs of runs and print the table; returns the figures by name."""
    example = bundled() / EXAMPLE
    command = validate_command(example)
    timed(command)  # one run first: the file system's caches, and bytecode written if it is cached
    walls: tuple[list[float], list[float]] = ([], [])
    cpus: tuple[list[float], list[float]] = ([], [])
    for _ in range(pairs):
        for index, arguments in enumerate((BASELINE, command)):
            wall, cpu = timed(arguments)
            walls[index].append(wall)
            cpus[index].append(cpu)
    figures = {
        "numpy_wall": statistics.median(walls[0]), "validate_wall": statistics.median(walls[1]),
        "numpy_cpu": statistics.median(cpus[0]), "validate_cpu": statistics.median(cpus[1]),
        "pair_ratio": statistics.median(v / n for n, v in zip(walls[0], walls[1])),
    }
    figures["wall_ratio"] = figures["validate_wall"] / figures["numpy_wall"]
    figures["cpu_ratio"] = figures["validate_cpu"] / figures["numpy_cpu"]
    print(f"start-up: hurray-decl validate {EXAMPLE} against python -c \"import numpy\", "
          f"{pairs} paired runs, medians", file=out)
    print(f"{'':24}{'numpy':>10}{'validate':>10}{'ratio':>8}", file=out)
    print(f"{'wall (ms)':24}{1000 * figures['numpy_wall']:10.1f}{1000 * figures['validate_wall']:10.1f}"
          f"{figures['wall_ratio']:8.2f}", file=out)
    print(f"{'cpu, user+sys (ms)':24}{1000 * figures['numpy_cpu']:10.1f}{1000 * figures['validate_cpu']:10.1f}"
          f"{figures['cpu_ratio']:8.2f}", file=out)
    print(f"{'ratio within pairs':24}{'':20}{figures['pair_ratio']:8.2f}", file=out)
    note = bytecode_note()
    if note:
        print(note, file=out)
    return figures
