"""``python -m hurray_decl.cli``: the ``hurray-decl`` command line."""

from hurray_decl.cli import run

run()
