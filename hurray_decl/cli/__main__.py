"""``python -m hurray_decl.cli``: the ``hurray-decl`` command line."""

import sys

from hurray_decl.cli import main

sys.exit(main())
