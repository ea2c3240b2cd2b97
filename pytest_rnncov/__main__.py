"""``python -m pytest_rnncov``: the command line (see :mod:`pytest_rnncov.cli`)."""

import sys

from .cli import main

sys.exit(main())
