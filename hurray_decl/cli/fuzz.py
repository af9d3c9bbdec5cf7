"""``fuzz``: the external-reader harness of :mod:`hurray_decl.fuzz` as a command."""

from __future__ import annotations

import argparse
from typing import Any


def cmd_fuzz(args: argparse.Namespace) -> int:
    from .. import fuzz

    return fuzz.run(args)


def register(sub: Any) -> None:
    from ..fuzz import DESCRIPTION, add_arguments

    command = sub.add_parser("fuzz", help="fuzz an external reader with valid and rule-labelled invalid descriptors",
                             description=DESCRIPTION)
    add_arguments(command)
    command.set_defaults(run=cmd_fuzz)
