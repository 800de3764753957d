"""Rating a session's model iterations: an iteration's matches against the configured opponents
(`evaluate_iteration`), recorded in evaluation/results.jsonl (one match per line), the ratings
fitted to every result in evaluation/ratings.json and plots/rating.png, and a one-line verdict
on the newest iteration.  The Evaluator process (gamegym.runtime.evaluator) rates with it.
"""

from __future__ import annotations

import dataclasses
import logging
import time

import numpy as np

from gamegym import workmeter
from gamegym.data.figures import new_figure, save_figure
from gamegym.data.fileio import append_jsonl, atomic_write_json, read_jsonl
from gamegym.evaluation.arena import fit_ratings, make_player, model_player, run_match
from gamegym.game.players import Player

__all__ = [
    "ModelPruned",
    "iteration_name",
    "load_model_player",
    "previous_player",
    "evaluate_iteration",
    "update_ratings",
    "plot_ratings",
    "verdict",
]

log = logging.getLogger("gamegym.evaluation.ratings")


def iteration_name(iteration: int) -> str:
    return f"iteration:{iteration}"


class ModelPruned(Exception):
    """A model iteration's file was deleted (`train.keep_models`) before it could be loaded."""


def load_model_player(session, iteration: int, search, config=None) -> Player:
    """`model_player` (`config`: the session's, as read with consent; None: read from the
    folder), with ModelPruned when the iteration's file is gone (a newer one has been
    published since the iteration was named, and the older pruned)."""
    if not session.model_path(iteration).is_file():
        raise ModelPruned(f"model iteration {iteration} was pruned before it could be loaded")
    try:
        return model_player(session, iteration, search, config=config)
    except Exception:
        if session.model_path(iteration).is_file():
            raise
        raise ModelPruned(
            f"model iteration {iteration} was pruned while it was being loaded"
        ) from None


class CountedPlayer(Player):
    """A player whose every move counts as the Evaluator's work (gamegym.workmeter)."""

    def __init__(self, player: Player):
        self.player = player

    def choose(self, graph, vertex, rng: np.random.Generator) -> int:
        action = self.player.choose(graph, vertex, rng)
        workmeter.tick()
        return action

    def move(self, graph, vertex, rng: np.random.Generator):
        child = self.player.move(graph, vertex, rng)
        workmeter.tick()
        return child


def previous_player(session, iteration: int, search, config=None) -> tuple[str, Player] | None:
    """The newest iteration before `iteration` that loads, as a player (a pruned one is
    passed over: iteration 0 is always kept); None when there is none."""
    for earlier in reversed([i for i in session.model_iterations() if i < iteration]):
        try:
            player = load_model_player(session, earlier, search, config)
            return iteration_name(earlier), player
        except ModelPruned as error:
            log.info("%s; taking an older one as the previous iteration", error)
    return None


def evaluate_iteration(session, config, iteration: int, rng: np.random.Generator) -> dict:
    """Play `iteration` against the configured opponents (on this process's graph of the
    game `config` names); record results; return ratings.  ModelPruned when the iteration's
    model file is gone."""
    cfg = config.evaluate
    graph = config.game_ref.build()
    player = CountedPlayer(load_model_player(session, iteration, cfg.search, config))
    for spec in cfg.opponents:
        if spec == "previous":
            previous = previous_player(session, iteration, cfg.search, config)
            if previous is None:
                continue
            opponent_name, opponent = previous
        else:
            opponent_name = spec
            opponent = make_player(opponent_name, session, cfg.search, config)
        started = time.time()
        result = run_match(
            graph,
            player,
            CountedPlayer(opponent),
            cfg.games,
            rng,
            names=(iteration_name(iteration), opponent_name),
            max_moves=config.selfplay.max_moves,
        )
        record = {
            **result.to_dict(),
            "iteration": iteration,
            "time": time.time(),
            "seconds": round(time.time() - started, 2),
        }
        append_jsonl(session.evaluation_dir / "results.jsonl", record)
        log.info(
            "%s vs %s: +%d =%d -%d",
            result.player,
            opponent_name,
            result.wins,
            result.draws,
            result.losses,
        )
    return update_ratings(session)


def update_ratings(session) -> dict:
    results = read_jsonl(session.evaluation_dir / "results.jsonl")
    ratings = fit_ratings(results)
    atomic_write_json(session.evaluation_dir / "ratings.json", ratings)
    plot_ratings(session, ratings)
    return ratings


def plot_ratings(session, ratings: dict) -> None:
    points = sorted(
        (int(n.split(":")[1]), r) for n, r in ratings.items() if n.startswith("iteration:")
    )
    if not points:
        return
    figure, axis = new_figure()
    axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", label="model")
    for name, rating in sorted(ratings.items()):
        if not name.startswith("iteration:"):
            axis.axhline(rating, linestyle="--", linewidth=0.8, color="gray")
            axis.annotate(name, (points[0][0], rating), fontsize="small", color="gray")
    axis.set_xlabel("iteration")
    axis.set_ylabel("Elo (random = 0)")
    axis.set_title("rating over iterations")
    axis.grid(alpha=0.3)
    save_figure(figure, session.plots_dir / "rating.png")


OPPONENT_NAMES = {"solver": "the perfect player (exact solver)", "random": "a random player"}


def verdict(
    session, opponent: str = "solver", games: int = 20, searchcount: int = 64, seed: int = 0
) -> str:
    """One line on how strong the newest iteration is: a short match against `opponent`."""
    config = session.load_config()
    graph = config.game_ref.build()
    iteration = session.current_iteration()
    search = dataclasses.replace(config.evaluate.search, searchcount=searchcount)
    player = model_player(session, iteration, search, config)
    result = run_match(
        graph,
        player,
        make_player(opponent, session, search, config),
        games,
        np.random.default_rng(seed),
        (iteration_name(iteration), opponent),
        max_moves=config.selfplay.max_moves,
    )
    against = OPPONENT_NAMES.get(opponent, opponent.replace("alphabeta:", "alpha-beta depth "))
    return (
        f"iteration {iteration} against {against}: {result.wins} wins, {result.draws} "
        f"draws, {result.losses} losses in {result.games} games"
    )
