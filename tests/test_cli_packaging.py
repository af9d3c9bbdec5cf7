"""What `pip install .` ships: build requirements that build, the license, py.typed, the commands' dependencies.

The fresh-venv install itself (acceptance 5 of issue #14) is too slow for the suite; this pins the
declarations it depends on.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_setuptools_can_build_an_spdx_license():
    """``license = "MIT"`` (an SPDX expression) needs setuptools 77 or later."""
    (requirement,) = [r for r in PROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    minimum = re.fullmatch(r"setuptools>=(\d+)(\.\d+)*", requirement)
    assert minimum and int(minimum.group(1)) >= 77
    assert PROJECT["project"]["license"] == "MIT"


def test_license_file_is_mit_and_shipped():
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")
    assert PROJECT["project"]["license-files"] == ["LICENSE"]


def test_py_typed_is_in_the_package_data():
    assert (ROOT / "hurray_decl" / "py.typed").is_file()
    assert "py.typed" in PROJECT["tool"]["setuptools"]["package-data"]["hurray_decl"]


def test_every_command_runs_without_extras():
    """fuzz draws its cases with Hypothesis: a dependency, not only a test extra."""
    names = {re.split(r"[<>=!~ ;\[]", r, maxsplit=1)[0].lower() for r in PROJECT["project"]["dependencies"]}
    assert {"hypothesis", "numpy", "pydantic", "construct"} <= names
    assert PROJECT["project"]["scripts"] == {"hurray-decl": "hurray_decl.cli:run"}


def test_rules_md_ships_and_the_spec_texts_stay_in_the_repository():
    """``hurray_decl.rules`` reads RULES.md at run time (rule texts, codes); the spec texts beside it
    (``spec/hurray/``, ``spec/onnx-light/``) are read by the tests only, so the wheel leaves them out."""
    data = PROJECT["tool"]["setuptools"]["package-data"]["hurray_decl"]
    assert "spec/RULES.md" in data and (ROOT / "hurray_decl" / "spec" / "RULES.md").is_file()
    assert [d for d in data if d.startswith("spec/")] == ["spec/RULES.md"]
    assert "PROJECT_RULES.md" in data and (ROOT / "hurray_decl" / "PROJECT_RULES.md").is_file()  # the CV-* codes
