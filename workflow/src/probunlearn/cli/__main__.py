"""``python -m probunlearn.cli``: the ``probunlearn`` console script."""

import sys

from probunlearn.cli import main

sys.exit(main())
