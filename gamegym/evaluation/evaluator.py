"""Evaluating a session: the optional Evaluator process, `gamegym evaluate` and `gamegym play`.

Results go to evaluation/results.jsonl (one match per line), ratings to evaluation/ratings.json
and plots/rating.png.
"""

from __future__ import annotations

import json
import logging
import os
import time

import numpy as np

from gamegym import workmeter
from gamegym.cli.progress import ProgressBars
from gamegym.cli.util import add_trust_flag, console_ask
from gamegym.data.fileio import append_jsonl, atomic_write_json, read_jsonl
from gamegym.evaluation.arena import fit_ratings, make_player, model_player, run_match
from gamegym.game.graph import load_game
from gamegym.game.players import Player
from gamegym.game.playerspecs import describe_player_specs
from gamegym.runtime.messages import Report
from gamegym.runtime.process import child_entry

log = logging.getLogger("gamegym.evaluation.evaluator")


def iteration_name(iteration: int) -> str:
    return f"iteration:{iteration}"


class ModelPruned(Exception):
    """A model iteration's file was deleted (`train.keep_models`) before it could be loaded."""


def load_model_player(session, graph, iteration: int, searchcount: int, config=None) -> Player:
    """`model_player` (`config`: the session's, as read with consent; None: read from the
    folder), with ModelPruned when the iteration's file is gone (a newer one has been
    published since the iteration was named, and the older pruned)."""
    if not session.model_path(iteration).is_file():
        raise ModelPruned(f"model iteration {iteration} was pruned before it could be loaded")
    try:
        return model_player(session, graph, iteration, searchcount, config=config)
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


def previous_player(
    session, graph, iteration: int, searchcount: int, config=None
) -> tuple[str, Player] | None:
    """The newest iteration before `iteration` that loads, as a player (a pruned one is
    passed over: iteration 0 is always kept); None when there is none."""
    for earlier in reversed([i for i in session.model_iterations() if i < iteration]):
        try:
            player = load_model_player(session, graph, earlier, searchcount, config)
            return iteration_name(earlier), player
        except ModelPruned as error:
            log.info("%s; taking an older one as the previous iteration", error)
    return None


def evaluate_iteration(session, config, graph, iteration: int, rng: np.random.Generator) -> dict:
    """Play `iteration` against the configured opponents; record results; return ratings.
    ModelPruned when the iteration's model file is gone."""
    cfg = config.evaluate
    player = CountedPlayer(load_model_player(session, graph, iteration, cfg.searchcount, config))
    for spec in cfg.opponents:
        if spec == "previous":
            previous = previous_player(session, graph, iteration, cfg.searchcount, config)
            if previous is None:
                continue
            opponent_name, opponent = previous
        else:
            opponent_name = spec
            opponent = make_player(opponent_name, session, graph, cfg.searchcount)
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
    from gamegym.runtime.monitor import new_figure, save_figure

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


class Evaluator:
    """Rates the session's newest iteration once `evaluate.every` iterations have passed since
    the last one rated (an evaluation can take longer than several iterations: none is waited
    for); `listeners` hear each rating (iteration, ratings, that iteration's result rows)."""

    def __init__(self, session, config, graph, rng: np.random.Generator, listeners=()):
        self.session, self.config, self.graph, self.rng = session, config, graph, rng
        self.listeners = list(listeners)
        self.done = {r["iteration"] for r in read_jsonl(session.evaluation_dir / "results.jsonl")}
        self.last = max(self.done, default=0)

    def step(self) -> int | None:
        """Rate the newest iteration if it is due; returns it (None: none rated).  An
        iteration pruned before it could be loaded is passed over: the next step rates the
        newest."""
        iteration = self.session.current_iteration()
        if iteration < self.last + self.config.evaluate.every or iteration in self.done:
            return None
        try:
            ratings = evaluate_iteration(self.session, self.config, self.graph, iteration, self.rng)
        except ModelPruned as error:
            if self.session.current_iteration() == iteration:  # not pruned: missing
                raise
            log.info("%s; rating the newest iteration instead", error)
            return None
        self.done.add(iteration)
        self.last = iteration
        rows = [
            r
            for r in read_jsonl(self.session.evaluation_dir / "results.jsonl")
            if r.get("iteration") == iteration
        ]
        for listener in self.listeners:
            listener(iteration, ratings, rows)
        return iteration


# how often the Evaluator looks for a new iteration (one small file read): often enough to
# rate an iteration that a short run (`resume --max-iterations N`) stops right after
POLL_S = 0.5


@child_entry("evaluator")
def evaluator_main(session_path, config, seed, *, stop_event, reports):
    from gamegym.data.session import Session
    from gamegym.runtime.tensorboard import BoardWriter, evaluation_scalars

    session = Session(session_path)
    board = BoardWriter(session.tensorboard_dir, "evaluator")

    def rated(iteration: int, ratings: dict, rows: list) -> None:
        board.scalars(iteration, evaluation_scalars(iteration, ratings, rows))
        reports.put(
            Report(
                "evaluator",
                os.getpid(),
                {"rating": ratings.get(iteration_name(iteration)), "rated_iteration": iteration},
            )
        )

    graph = load_game(config.game, config.game_args)
    evaluator = Evaluator(session, config, graph, np.random.default_rng(seed), [rated])
    while not stop_event.is_set():
        workmeter.tick()  # a look for a new iteration; each move of a match counts too
        evaluator.step()
        stop_event.wait(POLL_S)
    board.close()


OPPONENT_NAMES = {"solver": "the perfect player (exact solver)", "random": "a random player"}


def verdict(
    session, opponent: str = "solver", games: int = 20, searchcount: int = 64, seed: int = 0
) -> str:
    """One line on how strong the newest iteration is: a short match against `opponent`."""
    config = session.load_config()
    graph = load_game(config.game, config.game_args)
    iteration = session.current_iteration()
    player = model_player(session, graph, iteration, searchcount)
    result = run_match(
        graph,
        player,
        make_player(opponent, session, graph, searchcount),
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


# ----- command line ---------------------------------------------------------------------------
def cmd_evaluate(args) -> int:
    from gamegym.data.trust import read_session

    session, config = read_session(args.session, "evaluate", args.trust, console_ask())
    graph = load_game(config.game, config.game_args)
    iteration = session.current_iteration() if args.iteration is None else args.iteration
    opponent = make_player(args.opponent, session, graph, args.searchcount)  # a bad one: at once
    player = model_player(session, graph, iteration, args.searchcount)
    with ProgressBars() as bars:
        bar = bars.add(f"{iteration_name(iteration)} vs {args.opponent}", args.games, "games")
        result = run_match(
            graph,
            player,
            opponent,
            args.games,
            np.random.default_rng(args.seed),
            names=(iteration_name(iteration), args.opponent),
            max_moves=config.selfplay.max_moves,
            after_game=lambda so_far: bars.update(bar, completed=so_far.games),
        )
    record = {**result.to_dict(), "iteration": iteration, "time": time.time()}
    if args.json:
        print(json.dumps(record, sort_keys=True))
    else:
        print(
            f"{result.player} vs {result.opponent}: {result.wins} wins, {result.draws} draws, "
            f"{result.losses} losses in {result.games} games (score {result.score:.2f}; "
            f"{result.sides_text()})"
        )
    return 0


def cmd_play(args) -> int:
    from gamegym.data.trust import read_session
    from gamegym.evaluation.arena import HumanPlayer, describe_move

    session, config = read_session(args.session, "play", args.trust, console_ask())
    graph = load_game(config.game, config.game_args)
    if args.opponent:
        model = make_player(args.opponent, session, graph, args.searchcount)
        name = args.opponent
    else:
        model = model_player(session, graph, args.iteration, args.searchcount)
        name = iteration_name(
            session.current_iteration() if args.iteration is None else args.iteration
        )
    human = HumanPlayer()
    rng = np.random.default_rng(args.seed)
    human_first = not args.second
    print(f"you play {'first' if human_first else 'second'} against {name}")
    vertex, move, limit = graph.roots[0], 0, config.selfplay.max_moves
    try:
        while graph.children_at(vertex) and move < limit:
            humans_turn = (move % 2 == 0) == human_first
            if humans_turn:
                vertex = human.move(graph, vertex, rng)
            else:
                action = model.choose(graph, vertex, rng)
                child = graph.child_by_action(vertex, action)
                print(f"\n{name} plays {describe_move(graph, vertex, action, child)}")
                vertex = child
            move += 1
    except (EOFError, KeyboardInterrupt):
        print("\ngame abandoned")
        return 1
    print()
    print(graph.render(vertex))
    if graph.children_at(vertex):
        print(f"a draw: the game was cut at {limit} moves (selfplay.max_moves).")
        return 0
    score = float(graph.score_at(vertex))  # the view of the player to move now
    humans_view = score if (move % 2 == 0) == human_first else -score
    print("you won!" if humans_view > 0 else "you lost." if humans_view < 0 else "a draw.")
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("evaluate", help="play a model iteration against an opponent")
    p.add_argument("session", help="the session folder")
    p.add_argument(
        "--opponent",
        default="random",
        metavar="SPEC",
        help="the player to meet: "
        + describe_player_specs()
        + " (see the evaluation guide, 'Player specs')",
    )
    p.add_argument("--iteration", type=int, help="model iteration (default: the newest)")
    p.add_argument("--games", type=int, default=20, help="games to play, half as each side")
    p.add_argument(
        "--searchcount", type=int, default=100, help="searches a move of the model's player"
    )
    p.add_argument("--seed", type=int, default=0, help="the games' seed")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_trust_flag(p, "the game module (never a plugin)")
    p.set_defaults(run=cmd_evaluate)

    p = sub.add_parser("play", help="play against a model iteration at the console")
    p.add_argument("session", help="the session folder")
    p.add_argument("--iteration", type=int, help="model iteration (default: the newest)")
    p.add_argument(
        "--opponent",
        metavar="SPEC",
        help="play against this player instead of the model (e.g. mcts:1000, "
        "alphabeta:5; the specs of evaluate --opponent)",
    )
    side = p.add_mutually_exclusive_group()
    side.add_argument("--first", action="store_true", help="you move first (default)")
    side.add_argument("--second", action="store_true", help="the model moves first")
    p.add_argument(
        "--searchcount", type=int, default=200, help="searches a move of the model's player"
    )
    p.add_argument("--seed", type=int, default=0, help="the model's seed")
    add_trust_flag(p, "the game module (never a plugin)")
    p.set_defaults(run=cmd_play)
