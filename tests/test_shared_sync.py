"""The repository's copies of the shared folder are whole and identical, and nothing reads past them.

The tests read the conformance vectors from ``tests/conformance/`` and the spec texts (RULES.md
among them) from ``hurray_decl/spec/`` (``tests/paths.py``), so that a clone with nothing beside
it passes. Where the shared folder is at hand (``../shared``, or ``HURRAY_DECL_SHARED``), every
file of its mirrored parts must have a byte-identical copy, and every copied file a twin there:
a vector or rule changed, added or removed in the shared folder fails here until copied again.
Without the shared folder those comparisons skip; the check that no test or module builds a path
into the shared folder runs everywhere.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.paths import MIRRORS, NOT_MIRRORED, REPO, SHARED, suite_sources


def tree(root: Path) -> dict[str, Path]:
    """Every file under ``root`` by its path relative to it (caches left out)."""
    return {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def differences(copy: Path, shared: Path, prefix: str) -> list[str]:
    """What keeps ``copy`` from being ``shared`` file for file (``prefix``: the mirrored part's
    name, as NOT_MIRRORED spells its entries)."""
    ours, theirs = tree(copy), tree(shared)
    theirs = {k: v for k, v in theirs.items() if f"{prefix}/{k}" not in NOT_MIRRORED}
    found = [f"missing from the copy: {k}" for k in sorted(theirs.keys() - ours.keys())]
    found += [f"not in the shared folder: {k}" for k in sorted(ours.keys() - theirs.keys())]
    found += [f"differs: {k}" for k in sorted(ours.keys() & theirs.keys())
              if ours[k].read_bytes() != theirs[k].read_bytes()]
    return found


@pytest.mark.parametrize("copy, part", MIRRORS, ids=[part for _, part in MIRRORS])
def test_copy_matches_the_shared_folder(copy: Path, part: str):
    if not SHARED.is_dir():
        pytest.skip(f"no shared folder at {SHARED} (set HURRAY_DECL_SHARED to compare the copies with one)")
    assert (SHARED / part).is_dir(), f"{SHARED} has no {part}/"
    found = differences(copy, SHARED / part, part)
    assert not found, (f"{copy.relative_to(REPO)} is not a copy of {SHARED / part}; copy it again:\n"
                       + "\n".join(found))


def test_the_comparison_sees_a_missing_an_extra_and_a_changed_file(tmp_path):
    """The check above, on made-up folders: it must name each kind of drift, and skip what
    NOT_MIRRORED lists."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for root in (ours, theirs):
        (root / "sub").mkdir(parents=True)
        (root / "same.bin").write_bytes(b"\x01\x02")
    (theirs / "sub" / "only-shared.bin").write_bytes(b"")
    (ours / "only-ours.bin").write_bytes(b"")
    (ours / "sub" / "changed.txt").write_bytes(b"a")
    (theirs / "sub" / "changed.txt").write_bytes(b"b")
    name, = (n for n in NOT_MIRRORED if n.startswith("spec/"))
    (theirs / name.removeprefix("spec/")).write_bytes(b"not copied")
    assert differences(ours, theirs, "spec") == [
        "missing from the copy: sub/only-shared.bin", "not in the shared folder: only-ours.bin",
        "differs: sub/changed.txt"]
    assert differences(ours, ours, "spec") == []


SHARED_PATH = re.compile(r"""/\s*["']shared["']|["']shared["']\s*/|HURRAY_DECL_SHARED|\bSHARED\b""")
"""A path joined onto a folder named ``shared``, or the sync test's location of it."""


def test_nothing_but_the_sync_test_reads_the_shared_folder():
    """Tests and package code read the in-repository copies (through ``tests/paths.py`` or the
    package's own data); only this module and the definition of its location name the shared folder."""
    allowed = {REPO / "tests" / "paths.py", Path(__file__).resolve()}
    scanned = suite_sources() + sorted((REPO / "hurray_decl").rglob("*.py"))
    hits = [f"{p.relative_to(REPO)}:{n}: {line.strip()}" for p in scanned if p not in allowed
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if SHARED_PATH.search(line)]
    assert not hits, "read the copy (tests/paths.py), not the shared folder:\n" + "\n".join(hits)
