"""Assertions shared by the test suite.

The RULES.md coverage test (tests/test_rules_coverage.py) finds, in the test sources, every
``raises_rule("ID")`` and ``covers("ID")`` call: a rule counts as tested when one of them names it.
"""

from __future__ import annotations

import contextlib
import os
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from hurray_decl.errors import HurrayDeclError

REPO = Path(__file__).resolve().parents[1]


def run_cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m hurray_decl ARGV`` in ``cwd`` with this checkout's package, output captured as text."""
    return subprocess.run([sys.executable, "-m", "hurray_decl", *argv], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=300)


@contextlib.contextmanager
def raises_rule(code: str, *, offset: int | None = None, path: str | None = None) -> Iterator[pytest.ExceptionInfo]:
    """Expect a HurrayDeclError with exactly ``code`` (and, when given, offset and path end)."""
    with pytest.raises(HurrayDeclError) as info:
        yield info
    err = info.value
    assert err.code == code, f"expected {code}, got {err.code}: {err}"
    if offset is not None:
        assert err.offset == offset, f"expected offset {offset}, got {err.offset}: {err}"
    if path is not None:
        assert err.path.endswith(path), f"expected path ending {path!r}, got {err.path!r}"


def covers(*codes: str):
    """Mark a test as the acceptance or exact-value test of rules that refuse nothing."""
    return pytest.mark.rules(*codes)


def on_terminal(command: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None,
                columns: int = 100) -> tuple[int, bytes]:
    """Run ``command`` with its standard error on a pseudo-terminal ``columns`` wide (POSIX only):
    its exit status and every byte it showed there, read while it runs (a closed pty may drop
    what is left unread)."""
    import fcntl
    import termios

    primary, secondary = os.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    shown = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                return
            if not chunk:
                return
            shown.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        result = subprocess.run(list(command), cwd=cwd, stdout=subprocess.PIPE, stderr=secondary,
                                env=None if env is None else dict(env), timeout=300)
    finally:
        os.close(secondary)
        reader.join(timeout=10)
        os.close(primary)
    return result.returncode, bytes(shown)


def dump_verdict(text: str) -> str:
    """The verdict of a text dump, on one line: the lines after its last blank line (a verdict
    wider than the dump's 100 columns continues on indented lines)."""
    lines = text.rstrip("\n").split("\n")
    start = len(lines) - 1 - lines[::-1].index("")
    return " ".join(line.strip() for line in lines[start + 1:])


def fresh_process(argv: list[str]) -> list[str]:
    """``argv`` run by a shell that forks it: a process exec'd straight from the test runner
    inherits the runner's peak resident size as its own (Linux keeps the high-water mark across
    ``exec``), so a limit such as libFuzzer's ``-rss_limit_mb`` would count the runner's memory."""
    return ["sh", "-c", '"$@"; exit $?', "sh", *argv]


PEAK_WRAPPER = ("import json, resource, subprocess, sys\n"
                "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
                "print(json.dumps({'rc': done.returncode, 'out': done.stdout, 'err': done.stderr,\n"
                "                  'peak': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))\n")


def measured(*argv: str, cwd: Path) -> dict:
    """The child's exit status, output and peak resident bytes (ru_maxrss of the only child of a
    wrapper process, so nothing else this test run did is counted)."""
    import json

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", PEAK_WRAPPER, *argv], capture_output=True, text=True, cwd=cwd,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, check=True)
    result: dict = json.loads(done.stdout)
    return result
