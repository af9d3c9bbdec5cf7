"""``python -m hurray_decl``: the ``hurray-decl`` command line."""

import sys

from .cli import main

sys.exit(main())
