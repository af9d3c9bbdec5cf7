"""``python -m hurray_decl``: the ``hurray-decl`` command line."""

from hurray_decl.cli import run

run()
