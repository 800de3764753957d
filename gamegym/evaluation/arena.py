"""Matches and ratings: model iterations against each other and against the reference players.

Players: `model_player` (a model iteration, as its learner plays: `MCTSPlayer` for AlphaZero),
`HumanPlayer` (the console) and the reference players: random, alpha-beta with and
without the game's heuristic and the exact solver (gamegym.game.players), and UCT with random
rollouts (gamegym.search.uct); `make_player` builds any of them from a player spec.  A match alternates who starts and
counts wins, draws and losses from the first player's view.  Ratings are Elo numbers fitted to
all results (Bradley-Terry maximum likelihood), with the random player anchored at 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from gamegym.game.graph import GameGraph
from gamegym.game.players import AlphaBetaPlayer, Player, RandomPlayer, SolverPlayer, game_heuristic
from gamegym.game.playerspecs import check_player_spec
from gamegym.search.play import MCTSPlayer
from gamegym.search.tree import SearchParams
from gamegym.search.uct import UCTPlayer

if TYPE_CHECKING:
    from gamegym.config import GymConfig, SearchConfig

__all__ = [
    "MCTSPlayer",
    "model_player",
    "HumanPlayer",
    "MatchResult",
    "play_match",
    "run_match",
    "make_player",
    "fit_ratings",
]


def model_player(
    session,
    iteration: int | None = None,
    search: SearchConfig | None = None,
    config: GymConfig | None = None,
) -> Player:
    """A model iteration of a session as a Player, built by the session's learner (an
    MCTSPlayer for AlphaZero, the heads' vote for Bootstrapped) on this process's graph of
    the session's game, its network called in this process: from the model's fast-path file
    as the Predictor would load it (no TensorFlow), else with TensorFlow.  It searches as
    `search` says (default: the session's `evaluate.search`), without root noise; `config`:
    the session's, when the caller holds it (else read from the folder)."""
    from gamegym.learners import get_learner
    from gamegym.nets.inference import LocalService

    iteration = session.current_iteration() if iteration is None else iteration
    if iteration not in session.model_iterations():  # said before TensorFlow's seconds
        raise ValueError(
            f"session {session.path} has no model iteration {iteration} "
            f"(it has {session.model_iterations()})"
        )
    if config is None:
        config = session.load_config()
    learner = get_learner(config.train.learner)
    path = session.model_path(iteration)
    evaluator = _fast_evaluator(learner, path, iteration, config)
    if evaluator is None:
        from gamegym.nets.tfsetup import configure_tensorflow, load_model

        configure_tensorflow(use_gpu=False)
        evaluator = learner.make_evaluator(load_model(path), iteration)
    search = config.evaluate.search if search is None else search
    params = SearchParams.from_config(search, noise=False)
    return learner.player(config.game_ref.build(), LocalService(evaluator), params, config)


def _fast_evaluator(learner, path, iteration: int, config: GymConfig):
    """The model's evaluator on the CPU fast path when the session's Predictor would use it
    (gamegym.nets.fastmodels.cpu_fast_path), or None."""
    from gamegym.nets.fastmodels import cpu_fast_path, load_fast_model_or_none

    if not cpu_fast_path(config.predict):
        return None
    # a converting child imports the plugins only when this process did (GymConfig.runs_plugins)
    plugins = config.plugins if config.runs_plugins else []
    return load_fast_model_or_none(learner, path, iteration, plugins)


class HumanPlayer(Player):
    """A person at the console: shows the board, lists the legal moves, reads a number."""

    def __init__(self, read: Callable[[str], str] = input, write: Callable[[str], None] = print):
        self.read, self.write = read, write

    def choose(self, graph: GameGraph, vertex, rng: np.random.Generator) -> int:
        actions = graph.actions_at(vertex)
        children = graph.children_at(vertex)
        self.write(graph.render(vertex))
        self.write(
            "your moves: "
            + ", ".join(
                f"[{i}] {describe_move(graph, vertex, a, c)}"
                for i, (a, c) in enumerate(zip(actions, children))
            )
        )
        while True:
            answer = self.read(f"move number 0-{len(actions) - 1}: ").strip()
            if answer.isdigit() and int(answer) < len(actions):
                return int(actions[int(answer)])
            self.write(
                f"'{answer}' is not a move number between 0 and {len(actions) - 1}; try again"
            )


def describe_move(graph: GameGraph, vertex, action: int, child=None) -> str:
    try:
        return str(graph.describe_action(vertex, int(action)))
    except Exception:  # a broken describe_action must not end the user's game
        return f"action {action}"


def _tally() -> dict[str, int]:
    return {"wins": 0, "draws": 0, "losses": 0}


@dataclass
class MatchResult:
    """Results from the first-named player's view; `by_side` splits them by the side it
    played ("first": it made the game's first move, "second")."""

    player: str
    opponent: str
    wins: int = 0
    draws: int = 0
    losses: int = 0
    by_side: dict[str, dict[str, int]] = field(
        default_factory=lambda: {"first": _tally(), "second": _tally()}
    )

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.0

    def add(self, score: float, first: bool) -> None:
        """Count one game: its final score from the player's view, and whether it moved first."""
        outcome = "wins" if score > 0 else "losses" if score < 0 else "draws"
        setattr(self, outcome, getattr(self, outcome) + 1)
        self.by_side["first" if first else "second"][outcome] += 1

    def sides_text(self) -> str:
        """The split by side, e.g. "as first 38-0-2, as second 30-2-8 (wins-draws-losses)"."""
        parts = [
            f"as {side} {t['wins']}-{t['draws']}-{t['losses']}" for side, t in self.by_side.items()
        ]
        return ", ".join(parts) + " (wins-draws-losses)"

    def to_dict(self) -> dict:
        return {**asdict(self), "games": self.games, "score": round(self.score, 4)}


def play_match(
    graph: GameGraph, first: Player, second: Player, rng: np.random.Generator, max_moves: int = 1000
) -> float:
    """One game from the graph's first root; the final score from the first mover's view
    (0 when cut at max_moves)."""
    vertex, players, move = graph.roots[0], (first, second), 0
    while graph.children_at(vertex):
        if move >= max_moves:
            return 0.0
        vertex = players[move % 2].move(graph, vertex, rng)
        move += 1
    score = float(graph.score_at(vertex))
    return score if move % 2 == 0 else -score


def run_match(
    graph: GameGraph,
    player: Player,
    opponent: Player,
    games: int,
    rng: np.random.Generator,
    names: tuple[str, str] = ("player", "opponent"),
    max_moves: int = 1000,
    after_game: Callable[[MatchResult], None] | None = None,
) -> MatchResult:
    """`games` games, alternating who starts; results from `player`'s view.  `after_game` is
    called with the result so far after each game (a progress bar listens)."""
    result = MatchResult(*names)
    for game in range(games):
        if game % 2 == 0:
            score = play_match(graph, player, opponent, rng, max_moves)
        else:
            score = -play_match(graph, opponent, player, rng, max_moves)
        result.add(score, first=game % 2 == 0)
        if after_game is not None:
            after_game(result)
    return result


def make_player(
    spec: str,
    session=None,
    search: SearchConfig | None = None,
    config: GymConfig | None = None,
) -> Player:
    """A player from its spec (gamegym.game.playerspecs): random, alphabeta:D (the game's heuristic at
    the leaves), alphabeta0:D (no heuristic), solver, mcts:N (UCT with N random rollouts a
    move), iteration:K (needs a session: `model_player`, with `config` the session's when the
    caller holds it), openspiel-random and openspiel-mcts:N (OpenSpiel's bots, the extra
    .[openspiel])."""
    problem = check_player_spec(spec)
    if problem is not None:
        raise ValueError(problem)
    name, _, arg = spec.partition(":")
    if name == "random":
        return RandomPlayer()
    if name == "alphabeta":
        return AlphaBetaPlayer(int(arg), heuristic=game_heuristic)
    if name == "alphabeta0":
        return AlphaBetaPlayer(int(arg))
    if name == "solver":
        return SolverPlayer(hurry=False)  # hurry needs every ply count: too slow beyond tic-tac-toe
    if name == "mcts":
        return UCTPlayer(int(arg))
    if name == "iteration" and session is not None:
        return model_player(session, int(arg), search, config)
    if name.startswith("openspiel-"):
        from gamegym.adapters.openspiel import make_openspiel_player

        player = make_openspiel_player(spec)
        if player is not None:
            return player
    raise ValueError(
        f"player {spec!r} cannot be made here"
        + (" without a session" if name == "iteration" else "")
    )


def fit_ratings(results: list[dict], anchor: str = "random", steps: int = 2000) -> dict:
    """Elo ratings from match results (dicts with player, opponent, wins, draws, losses):
    Bradley-Terry maximum likelihood by gradient ascent, `anchor` fixed at 0."""
    names = sorted({r["player"] for r in results} | {r["opponent"] for r in results})
    if not names:
        return {}
    index = {n: i for i, n in enumerate(names)}
    pairs = [
        (
            index[r["player"]],
            index[r["opponent"]],
            r["wins"] + 0.5 * r["draws"],
            r["wins"] + r["draws"] + r["losses"],
        )
        for r in results
    ]
    strength = np.zeros(len(names))
    prior = 1e-2  # a weak pull toward 0 keeps unbeaten players finite
    for _ in range(steps):
        grad = -prior * strength
        for i, j, score, games in pairs:
            expected = games / (1.0 + math.exp(strength[j] - strength[i]))
            grad[i] += score - expected
            grad[j] -= score - expected
        strength += 0.5 * grad / max(1.0, max(p[3] for p in pairs))
    if anchor in index:
        strength -= strength[index[anchor]]
    scale = 400.0 / math.log(10.0)
    return {n: round(float(strength[index[n]] * scale), 1) for n in names}
