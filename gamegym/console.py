"""Console helpers shared by every command (gamegym.cli, gamegym.bench): progress bars, the
JSON-object argument type and the help a command group prints without its subcommand.

Progress bars show long work at the console (`gamegym evaluate`, `gamegym check`, the benches):
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
import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from rich.progress import Progress

__all__ = ["ProgressBars", "comma_list", "json_object", "prints_help"]


def json_object(text: str) -> dict:
    """An argparse type: a JSON object, e.g. --game-args '{"dimension": 3}'."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not valid JSON: {error}") from error
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object, e.g. '{\"dimension\": 3}'")
    return value


def comma_list(item: Callable[[str], Any] = str, choices: Any = None) -> Callable[[str], list]:
    """An argparse type: one or more values in one argument, comma-separated (`--seed 0,1`),
    each read by `item` and, with `choices`, one of them."""

    def values(text: str) -> list:
        words = [word.strip() for word in text.split(",")]
        if not all(words):
            raise argparse.ArgumentTypeError(
                f"{text!r}: values are separated by single commas, e.g. 'a,b'"
            )
        parsed = []
        for word in words:
            try:
                parsed.append(item(word))
            except (TypeError, ValueError, argparse.ArgumentTypeError):
                name = getattr(item, "__name__", "")
                what = {"int": "an integer", "float": "a number"}.get(name, f"a {name} value")
                raise argparse.ArgumentTypeError(f"{word!r} in {text!r} is not {what}") from None
        unknown = [word for word in parsed if choices is not None and word not in choices]
        if unknown:
            raise argparse.ArgumentTypeError(
                f"unknown {', '.join(map(str, unknown))}; the known ones are "
                + ", ".join(map(str, choices))
            )
        return parsed

    values.__name__ = "comma-separated list"
    return values


def prints_help(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """The `run` of a command group called without a subcommand (`gamegym`, `gamegym bench`):
    its help, which lists the subcommands, on stderr, and exit status 2 (a usage error)."""

    def run(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    return run


class ProgressBars:
    """Any number of bars, drawn together; every method is a no-op when they are off.
    `redirect_stderr`: what the command itself writes to sys.stderr while the bars are drawn
    goes above them (a report on stderr), instead of through them."""

    def __init__(self, enabled: bool | None = None, file=None, redirect_stderr: bool = False):
        stream = file if file is not None else sys.stderr
        self.enabled = _is_terminal(stream) if enabled is None else enabled
        self._file = file
        self._redirect_stderr = redirect_stderr
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
                redirect_stderr=self._file is None and self._redirect_stderr,
            )
            self._progress.start()
        return self

    def add(self, description: str, total: float | None, unit: str = ""):
        """A new bar; returns its handle (None when bars are off).  A total of None: work of
        unknown length (a bar that pulses)."""
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

    @contextlib.contextmanager
    def timed(self, description: str, seconds: float) -> Iterator[None]:
        """A bar for work of a known length (a measurement that runs `seconds`), filled by the
        clock while the block runs and removed after it."""
        bar = self.add(description, total=max(seconds, 1e-3), unit="s")
        if bar is None:
            yield
            return
        stop, start = threading.Event(), time.monotonic()

        def tick() -> None:
            while not stop.wait(0.25):
                self.update(bar, completed=min(seconds, time.monotonic() - start))

        clock = threading.Thread(target=tick, name="progress-clock", daemon=True)
        clock.start()
        try:
            yield
        finally:
            stop.set()
            clock.join()
            self.remove(bar)

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
