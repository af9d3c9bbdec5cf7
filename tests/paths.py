"""Where the test suite finds the files it reads: one place for every location.

The conformance vectors and the spec texts are copies kept inside the repository, so that a clone
with nothing beside it passes its tests. They mirror the project's shared folder (``../shared`` from
the repository root): ``tests/conformance/`` mirrors ``../shared/conformance/`` and
``hurray_decl/spec/`` mirrors ``../shared/spec/``. Only ``tests/test_shared_sync.py`` looks at the
shared folder itself, to check that the copies are whole and identical.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
"""The repository's root."""

CONFORMANCE = REPO / "tests" / "conformance" / "hurray"
"""The Hurray golden corpus: ``manifest.json`` and ``descriptors/`` (tensor descriptors),
``files/`` (``.hrry`` containers and their manifest), ``streams/`` (streams and their manifest)."""
DESCRIPTORS = CONFORMANCE / "descriptors"
FILES = CONFORMANCE / "files"
STREAMS = CONFORMANCE / "streams"

SPEC = REPO / "hurray_decl" / "spec"
"""``RULES.md`` (shipped with the package) and the spec texts (``hurray/``, ``onnx-light/``)."""
RULES = SPEC / "RULES.md"
HURRAY_SPEC = SPEC / "hurray"

SHARED = Path(os.environ.get("HURRAY_DECL_SHARED") or REPO.parent / "shared")
"""The shared folder the copies come from, for the sync test only: ``../shared``, or the folder
that ``HURRAY_DECL_SHARED`` names. A clone without it skips the sync test and nothing else."""

MIRRORS = ((CONFORMANCE.parent, "conformance"), (SPEC, "spec"))
"""Each copy with the folder of ``SHARED`` it mirrors."""

NOT_MIRRORED = {"spec/STYLE.md"}
"""Files of the shared folder's mirrored parts that the repository does not copy (the conventions
note: no test or code reads it)."""


def suite_sources() -> list[Path]:
    """Every Python file of the test suite, without the copied corpus (``streams/make_vectors.py``
    is the shared folder's script, not a test: the rule IDs and offsets in it prove nothing)."""
    return sorted(p for p in (REPO / "tests").rglob("*.py") if CONFORMANCE.parent not in p.parents)
