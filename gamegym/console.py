"""Console helpers shared by every command (gamegym.cli, gamegym.bench): progress bars, the
JSON-object argument type and the help a command group prints without its subcommand.

Progress bars show long work at the console (`gamegym evaluate`, `gamegym bench learning`):
how much is done, the time elapsed and the expected end.  Drawn with rich on stderr, and only
when stderr is a terminal: piped or captured output (scripts, CI, `--json > file`) gets none.

    with ProgressBars() as bars:
        games = bars.add("iteration:7 vs solver", total=20, unit="games")
        ...
        bars.update(games, completed=5)

May import: the standard library and rich; nothing of gamegym (every floor above may use it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from rich.progress import Progress

__all__ = ["ProgressBars", "json_object", "prints_help"]


def json_object(text: str) -> dict:
    """An argparse type: a JSON object, e.g. --game-args '{"dimension": 3}'."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not valid JSON: {error}") from error
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object, e.g. '{\"dimension\": 3}'")
    return value


def prints_help(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """The `run` of a command group called without a subcommand (`gamegym`, `gamegym bench`):
    its help, which lists the subcommands, on stderr, and exit status 2 (a usage error)."""

    def run(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    return run


class ProgressBars:
    """Any number of bars, drawn together; every method is a no-op when they are off."""

    def __init__(self, enabled: bool | None = None, file=None):
        stream = file if file is not None else sys.stderr
        self.enabled = _is_terminal(stream) if enabled is None else enabled
        self._file = file
        self._progress: Progress | None = None

    def __enter__(self) -> ProgressBars:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            console = Console(
                file=self._file,
                stderr=self._file is None,
                force_terminal=True if self._file is not None else None,
            )
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[unit]}"),
                TimeElapsedColumn(),
                _EndColumn(),
                console=console,
                # prints to stdout go above the bars when both are on this terminal
                redirect_stdout=self._file is None and _is_terminal(sys.stdout),
                redirect_stderr=False,
            )
            self._progress.start()
        return self

    def add(self, description: str, total: float, unit: str = ""):
        """A new bar; returns its handle (None when bars are off)."""
        if self._progress is None:
            return None
        return self._progress.add_task(description, total=total, unit=unit)

    def update(
        self,
        bar,
        completed: float | None = None,
        description: str | None = None,
        total: float | None = None,
    ) -> None:
        if self._progress is None or bar is None:
            return
        fields: dict[str, Any] = {
            k: v
            for k, v in (("completed", completed), ("description", description), ("total", total))
            if v is not None
        }
        self._progress.update(bar, **fields)

    def remove(self, bar) -> None:
        if self._progress is not None and bar is not None:
            self._progress.remove_task(bar)

    def __exit__(self, *exc) -> Literal[False]:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
        return False


def _is_terminal(stream) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _end_column_class():
    from rich.progress import ProgressColumn
    from rich.text import Text

    class EndColumn(ProgressColumn):
        """The wall-clock time the bar is expected to be full."""

        def render(self, task) -> Text:
            if task.finished or task.time_remaining is None:
                return Text("")
            end = time.localtime(time.time() + task.time_remaining)
            return Text(f"ends ~{time.strftime('%H:%M:%S', end)}", style="progress.remaining")

    return EndColumn


def _EndColumn():
    return _end_column_class()()
