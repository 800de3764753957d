"""`gamegym evaluate` (a model iteration against an opponent, with a progress bar) and
`gamegym play` (a person against a model iteration or a player spec at the console)."""

from __future__ import annotations

import dataclasses
import json
import time

import numpy as np

from gamegym.cli.util import add_trust_flag, console_ask
from gamegym.console import ProgressBars
from gamegym.evaluation.arena import make_player, model_player, run_match
from gamegym.evaluation.ratings import iteration_name
from gamegym.game.playerspecs import describe_player_specs

__all__ = ["add_commands", "cmd_evaluate", "cmd_play"]


def cmd_evaluate(args) -> int:
    from gamegym.data.trust import read_session

    session, config = read_session(args.session, "evaluate", args.trust, console_ask())
    graph = config.game_ref.build()
    iteration = session.current_iteration() if args.iteration is None else args.iteration
    search = dataclasses.replace(config.evaluate.search, searchcount=args.searchcount)
    opponent = make_player(args.opponent, session, search, config)  # a bad one: at once
    player = model_player(session, iteration, search, config)
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
    graph = config.game_ref.build()
    search = dataclasses.replace(config.evaluate.search, searchcount=args.searchcount)
    if args.opponent:
        model = make_player(args.opponent, session, search, config)
        name = args.opponent
    else:
        model = model_player(session, args.iteration, search, config)
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
        "--searchcount",
        type=int,
        default=100,
        help="searches per move of the model (the rest of its search: evaluate.search)",
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
        "--searchcount",
        type=int,
        default=200,
        help="searches per move of the model (the rest of its search: evaluate.search)",
    )
    p.add_argument("--seed", type=int, default=0, help="the model's seed")
    add_trust_flag(p, "the game module (never a plugin)")
    p.set_defaults(run=cmd_play)
