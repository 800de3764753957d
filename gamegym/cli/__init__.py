"""The `gamegym` command: its parser, one function per command, argument types, progress bars.

May import: everything in gamegym.
"""

from gamegym.cli.main import main

__all__ = ["main"]
