"""The normative rules (RULES.md, shipped with the package): ID, role, needs and text.

Every error's ``code`` is one of these IDs; :func:`rule` gives the row behind a code so that
tools can print the rule an input broke. ``spec/RULES.md`` is the shared table of the formats;
``PROJECT_RULES.md`` the project's own (the formats and protocols converted besides them), in
the same columns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

_ROW = re.compile(r"^\| (?P<id>[A-Z]+(?:-[A-Z0-9]+)*-\d+(?:-S)?) \| (?P<role>[a-z]+) \| (?P<needs>[a-z+]+) \| "
                  r"(?P<text>.*?) \| (?P<source>[^|]*) \|$")


@dataclass(frozen=True)
class RuleRow:
    id: str
    role: str
    needs: frozenset[str]
    text: str
    source: str

    @property
    def area(self) -> str:
        """``HQ-PB`` for ``HQ-PB-03``."""
        return self.id.rsplit("-", 1)[0]

    @property
    def must(self) -> bool:
        """False for the SHOULD rows (``-S``), which are not error codes."""
        return not self.id.endswith("-S")


def rules_text() -> str:
    return resources.files("hurray_decl").joinpath("spec/RULES.md").read_text(encoding="utf-8")


def project_rules_text() -> str:
    return resources.files("hurray_decl").joinpath("PROJECT_RULES.md").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def all_rules() -> dict[str, RuleRow]:
    """Every MUST rule, keyed by ID, in file order: the shared table's, then the project's."""
    rows = {}
    for line in (rules_text() + "\n" + project_rules_text()).splitlines():
        match = _ROW.match(line)
        if match and not match["id"].endswith("-S"):
            rows[match["id"]] = RuleRow(match["id"], match["role"],
                                        frozenset(match["needs"].split("+")), match["text"], match["source"])
    return rows


def rule(code: str) -> RuleRow:
    """The row of one rule ID (a KeyError names an ID RULES.md does not have)."""
    return all_rules()[code]
