"""``python -m hurray_decl.cli``: the ``hurray-decl`` command line."""

import sys

from . import main

sys.exit(main())
