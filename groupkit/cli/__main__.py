"""``python -m groupkit.cli``: the same as the ``groupkit`` command."""

import sys

from groupkit.cli import main

sys.exit(main())
