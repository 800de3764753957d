"""The `gamegym` command: its parser, one function per command (`evaluate` holds `gamegym
evaluate` and `gamegym play`), its argument types; the console helpers it shares with the
benchmarks are gamegym.console.

May import: everything in gamegym.
"""

from gamegym.cli.main import main

__all__ = ["main"]
