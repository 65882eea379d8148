"""``python -m connectrt.cli``: the ``connectrt`` command."""

import sys

from connectrt.cli.main import main

sys.exit(main())
