"""``python -m gpusim``: the ``gpusim`` command line (see :mod:`gpusim.cli`)."""

import sys

from gpusim.cli import main

if __name__ == "__main__":
    sys.exit(main())
