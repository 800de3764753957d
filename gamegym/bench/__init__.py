"""Benchmarks, one module per `gamegym bench` subcommand: throughput, learning, training (the
training step's paths side by side, and the Trainer's share of a run), accuracy (a model on a
game's solved positions), calibration (`calibrate`: the yardsticks against each other), peer
(our search beside OpenSpiel's), replay_modes (`replay`: replay modes side by side, and
re-adapting to changed rules).  Their parts: `endtoend` (a real Predictor and Selfplayers) and
`networks` (the network paths side by side) of the throughput bench, `peersides` of the peer
bench, `curve` (a gym trained while its newest iteration is measured) of the learning and
replay benches; `presets` builds every bench's config one way, and `capabilities` says what
each can measure of a learner.  Each takes its settings as one frozen dataclass.

Each subcommand module has `COMMAND` (its name) and `add_parser(subparsers)` (its subcommand,
its own flags, a help text with an example); `add_parser` here collects them.  A bare
`gamegym bench` prints the list (its help) instead of running anything.

May import: everything in gamegym but gamegym.cli (the console helpers it shares with the
command line are in gamegym.console).
"""

from __future__ import annotations

import argparse

from gamegym.bench import (
    accuracy,
    calibration,
    learning,
    peer,
    replay_modes,
    throughput,
    training,
)
from gamegym.console import prints_help

__all__ = ["SUBCOMMANDS", "add_parser"]

# the subcommand modules, in the order `gamegym bench --help` lists them
SUBCOMMANDS = (throughput, learning, training, accuracy, replay_modes, calibration, peer)


def add_parser(sub) -> argparse.ArgumentParser:
    """The `bench` command and one subcommand per benchmark module."""
    parser = sub.add_parser(
        "bench",
        help="measure throughput, learning, training, the yardsticks, a peer, replay modes",
        description="Benchmarks, one subcommand each; `gamegym bench JOB --help` for its flags.",
        epilog="example:\n  gamegym bench throughput --game games.tictactoe:TicTacToe --seconds 10",
    )
    jobs = parser.add_subparsers(dest="bench_job", metavar="JOB")
    for module in SUBCOMMANDS:
        module.add_parser(jobs)
    parser.set_defaults(run=prints_help(parser))
    return parser
