"""Every rule in scope has a test naming it, every raised code exists, and RULES.md is in sync."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hurray_decl.rules import all_rules, project_rules_text, rules_text
from tests.paths import REPO as ROOT, RULES, suite_sources

# (area, needs that put a rule in scope): grows as issues land.
SCOPE = [
    *((area, {"bytes", "data"}) for area in ("HQ-HDR", "HQ-EXT")),
    *((area, {"bytes", "tensor", "buffers", "data"}) for area in (
        "HQ-PT", "HQ-PC", "HQ-PB", "HQ-NF4", "HQ-MX", "HQ-BUF", "HQ-ZP",
        "HT-HDR", "HT-LAY", "HT-BUFT", "HT-SEC", "HE")),
    *((area, {"bytes", "tensor", "buffers", "data"}) for area in ("OL-PROF", "OL-PLAN", "OL-WIRE", "OL-NUM", "OL-CAL",
                                                                       "OL-ORT", "OL-SHR", "OL-OP")),
    *((area, {"bytes", "file"}) for area in ("HF-HDR", "HF-IDX", "HF-META", "HF-DATA")),
    ("HX", {"tensor", "buffers"}),
    ("CV-DLP", {"tensor"}), ("CV-SHD", {"file"}), ("CV-EDT", {"file"}),  # the project's own table
    *((area, {"bytes", "tensor", "buffers", "stream"}) for area in ("HS-FRM", "HS-VER", "HS-CMP", "HS-SYNC", "HS-WR")),
]
PENDING: set[str] = set()
"""Rules in scope whose feature lands with a later issue."""

_ID = re.compile(r"""["']((?:HQ|HT|HE|OL|HF|HX|HS|CV)(?:-[A-Z0-9]+)*-\d+)["']""")


def _ids_in(paths) -> set[str]:
    found: set[str] = set()
    for path in paths:
        found.update(_ID.findall(path.read_text(encoding="utf-8")))
    return found


def named_in_tests() -> set[str]:
    return _ids_in(p for p in suite_sources() if p.name != Path(__file__).name)


def in_scope() -> list[str]:
    return [r.id for r in all_rules().values()
            if any(r.area == area and r.needs <= needs for area, needs in SCOPE) and r.id not in PENDING]


def test_the_rules_read_are_the_packaged_copy():
    """The rule table comes from hurray_decl/spec/RULES.md, the file tests/test_shared_sync.py
    compares with ../shared/spec/RULES.md."""
    assert rules_text() == RULES.read_text(encoding="utf-8")


def test_rules_table_parses_completely():
    rules = all_rules()
    total = re.search(r"^\| \*\*total\*\* \| \*\*(\d+)\*\* \|$", rules_text(), re.M)
    shared = [code for code in rules if not code.startswith("CV-")]
    assert total and len(shared) == int(total.group(1))  # the MUST count RULES.md states
    assert rules["HQ-PB-03"].needs == {"bytes"} and rules["HQ-PB-03"].role == "reader"


@pytest.mark.parametrize("rule_id", in_scope())
def test_rule_has_a_test(rule_id):
    assert rule_id in named_in_tests(), f"{rule_id} has no test naming it (raises_rule or covers)"


def test_the_project_table_is_read_after_the_shared_one():
    """PROJECT_RULES.md's rows parse in the same columns; none reuses a shared ID."""
    codes = [line.split(" | ")[0][2:] for line in project_rules_text().splitlines() if line.startswith("| CV-")]
    assert codes and all(code in all_rules() for code in codes)
    assert not set(codes) & set(re.findall(r"^\| ([A-Z][A-Z0-9-]+) \|", rules_text(), re.M))
    assert all_rules()["CV-DLP-03"].needs == {"tensor"} and all_rules()["CV-DLP-03"].role == "reader"


def test_library_raises_only_known_codes():
    known = set(all_rules())
    raised = _ids_in((ROOT / "hurray_decl").rglob("*.py"))
    assert raised <= known, f"codes not in RULES.md: {sorted(raised - known)}"
