"""``rule`` and ``schemes``: the rule texts and the table of schemes."""

from __future__ import annotations

import argparse
from typing import Any

from hurray_decl.cli.common import OK, UsageError


def cmd_schemes(args: argparse.Namespace) -> int:
    from hurray_decl.hurray.quantization import scheme_table

    print(scheme_table())
    return OK


def cmd_rule(args: argparse.Namespace) -> int:
    from hurray_decl.rules import all_rules

    rules = all_rules()
    by_id = {code.upper(): row for code, row in rules.items()}  # IDs are read whatever their case
    missing = [code for code in args.codes if code.strip().upper() not in by_id]
    if missing:
        raise UsageError(f"argument ID: no rule {', '.join(missing)} in RULES.md")
    for code in args.codes:
        row = by_id[code.strip().upper()]
        print(f"{row.id} ({row.role}; needs {'+'.join(sorted(row.needs))}): {row.text}\n  source: {row.source}")
    return OK


def register(sub: Any) -> None:
    schemes = sub.add_parser("schemes", help="print the table of registered quantization schemes",
                             description="Print the table of registered quantization schemes (Markdown).")
    schemes.set_defaults(run=cmd_schemes)
    rule = sub.add_parser("rule", help="print the text of rules by their ID (the codes errors carry)",
                          description="Print the text of rules by their ID (the codes errors carry).")
    rule.add_argument("codes", nargs="+", metavar="ID", help="a rule ID such as HQ-PB-03 (any case: hq-pb-03)")
    rule.set_defaults(run=cmd_rule)
