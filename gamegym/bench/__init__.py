"""Benchmarks, one module per `gamegym bench` subcommand: throughput, learning, training (the
training step's paths side by side, and the Trainer's share of a run), calibrate (the
yardsticks against each other), peer (our search beside OpenSpiel's), replay (replay modes side
by side, and re-adapting to changed rules); `endtoend` (a real Predictor and Selfplayers) and
`networks` (the network paths side by side) are parts of the throughput bench.

Each subcommand module has `COMMAND` (its name), `add_parser(subparsers)` (its subcommand,
its own flags, a help text with an example) and `legacy_argv(tail)`: the subcommand's spelling
of the one-command form `gamegym bench --FLAG ...` when that form meant its job, else None.
`add_parser` here collects them; `modern_argv` turns an old spelling into the new one with one
deprecation line.

May import: everything in gamegym but gamegym.cli's commands (its argument types and progress
bars are fine).
"""

from __future__ import annotations

import argparse
import shlex
import sys

from gamegym.bench import calibration, learning, peer, replay, throughput, training

__all__ = ["SUBCOMMANDS", "add_parser", "modern_argv"]

# the subcommand modules, in the order `gamegym bench --help` lists them; for an old spelling
# the first whose `legacy_argv` claims it wins (throughput claims every one: it was the default)
SUBCOMMANDS = (replay, learning, training, calibration, peer, throughput)
HELP_ORDER = (throughput, learning, training, replay, calibration, peer)


def add_parser(sub) -> argparse.ArgumentParser:
    """The `bench` command and one subcommand per benchmark module."""
    parser = sub.add_parser(
        "bench",
        help="measure throughput, learning, training, the yardsticks, a peer, replay modes",
        description="Benchmarks, one subcommand each; `gamegym bench JOB --help` for its flags.",
        epilog="example:\n  gamegym bench throughput --game games.tictactoe:TicTacToe --seconds 10",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    jobs = parser.add_subparsers(dest="bench_job", required=True, metavar="JOB")
    for module in HELP_ORDER:
        module.add_parser(jobs)
    return parser


def modern_argv(tail: list[str], stderr=None) -> list[str]:
    """The arguments after `bench`, in the subcommand spelling.  An old one-command spelling
    (`--learning GAME`, `--calibrate`, `--peer openspiel`, `--replay`/`--adapt-to`, or no
    subcommand: throughput) is rewritten and one deprecation line goes to stderr."""
    names = {module.COMMAND for module in SUBCOMMANDS}
    if tail[:1] and (tail[0] in names or tail[0] in ("-h", "--help")):
        return list(tail)
    for module in SUBCOMMANDS:
        new = module.legacy_argv(list(tail))
        if new is not None:
            command = shlex.join(["gamegym", "bench", *new])
            print(
                f"gamegym: 'gamegym bench' without a subcommand is deprecated; the same job "
                f"is: {command}",
                file=stderr or sys.stderr,
                flush=True,
            )
            return new
    raise AssertionError("the throughput bench claims every old spelling")
