"""`python -m gamegym`: the `gamegym` command."""

import sys

from gamegym.cli import main

if __name__ == "__main__":
    sys.exit(main())
