"""The names of players on the command line and in configs, checked in one place.

A player spec is `NAME` or `NAME:N`.  `check_player_spec` says what is wrong with one without
building it (the config validates `evaluate.opponents` with it); `gamegym.evaluation.arena.make_player`
builds the player.
"""

from __future__ import annotations

__all__ = ["PLAYER_SPECS", "check_player_spec", "describe_player_specs"]

# name -> (what N is, its least value), or None when the name takes no number
PLAYER_SPECS: dict[str, tuple[str, int] | None] = {
    "random": None,  # a uniformly random legal move
    "alphabeta": ("depth", 1),  # alpha-beta to that many plies, game's heuristic
    "alphabeta0": ("depth", 1),  # alpha-beta to that many plies, no heuristic
    "solver": None,  # the exact solver (small games)
    "mcts": ("simulations", 1),  # UCT with random rollouts (gamegym.search.uct)
    "iteration": ("iteration", 0),  # a model iteration of the session
    "previous": None,  # (Evaluator) the iteration rated before
    "openspiel-random": None,  # OpenSpiel's random bot (extra .[openspiel])
    "openspiel-mcts": ("simulations", 1),  # OpenSpiel's MCTSBot, random rollouts
}


def describe_player_specs() -> str:
    """'random, alphabeta:DEPTH, ...' for error messages and --help."""
    return ", ".join(
        name if arg is None else f"{name}:{arg[0].upper()}" for name, arg in PLAYER_SPECS.items()
    )


def check_player_spec(spec: object) -> str | None:
    """None when `spec` names a player, else what is wrong with it."""
    if not isinstance(spec, str):
        return f"a player must be a string, got {spec!r}"
    name, colon, arg = spec.partition(":")
    if name not in PLAYER_SPECS:
        return f"unknown player {spec!r}; use {describe_player_specs()}"
    needs = PLAYER_SPECS[name]
    if needs is None:
        return None if not colon else f"player {name!r} takes no ':{arg}'"
    what, least = needs
    if not arg.isdigit() or int(arg) < least:
        return f"player {spec!r} needs {name}:{what.upper()} with {what} >= {least}"
    return None
