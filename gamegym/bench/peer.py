"""`gamegym bench peer openspiel`: our search ceiling beside OpenSpiel's MCTS, game by game.

All sides play whole games against themselves on the same game, with the same searches
(simulations) per move and the same exploration constant, with no network
(`gamegym.bench.peersides`): our search with the uniform stub evaluator (the bench's search
ceiling; one search at a time, and `--threads` concurrent searches) on the core `--core` picks
(`selfplay.search.core`; the end-to-end runs too), OpenSpiel's Python `MCTSBot`
with uniform priors and the value 0 (the same evaluator), and OpenSpiel's C++ `MCTSBot` with the
closest evaluator its Python API builds: the C++ `RandomRolloutEvaluator` at 1 rollout (uniform
priors too, but each leaf's value is one random playout instead of 0, so it does more work per
search than the other sides).  The time is split into slices that alternate between the sides,
so a machine whose load changes during the run slows all alike; each slice plays whole games.
Rates are searches per second of this process's CPU time, which on a loaded machine leaves out
the time other processes held the core (the wall-clock rates are in the JSON too).

`--end-to-end-seconds S` adds, on every game OpenSpiel has, end-to-end AlphaZero self-play at the
game's preset, network included (the throughput bench's end-to-end run: a real Predictor and
`--selfplayers` Selfplayers), between the slices, and its ratio to OpenSpiel's Python MCTSBot's
bare search, both per core: searches per CPU-second (one core busy for one second), ours over
the CPU-seconds of every role, OpenSpiel's over its own.  OpenSpiel is the optional extra
`pip install -e ".[openspiel]"`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from gamegym.bench.peersides import (
    CPP_EVALUATOR,
    EXTRA_MESSAGE,
    OpenSpielCppSide,
    OpenSpielPythonSide,
    OursSide,
    Tally,
    cpp_missing,
    import_openspiel,
    race,
)
from gamegym.bench.presets import preset_config
from gamegym.bench.throughput import ThroughputSettings
from gamegym.config import PRECISIONS
from gamegym.config.search import CORES
from gamegym.console import ProgressBars, comma_list, json_object
from gamegym.search.cores import core_for
from gamegym.search.tree import SearchParams

__all__ = [
    "EXTRA_MESSAGE",
    "MOONSHOT_UNIT",
    "PEER_GAMES",
    "PeerSettings",
    "add_parser",
    "alphazero_self_play",
    "print_peer_report",
    "run_peer_bench",
]

# our bundled game (spec, arguments) -> OpenSpiel's name for the same game (None: it has none)
PEER_GAMES: tuple[tuple[str, dict[str, Any], str | None], ...] = (
    ("games.tictactoe:TicTacToe", {}, "tic_tac_toe"),
    ("games.connectfour:ConnectFour", {"rows": 6, "columns": 7}, "connect_four"),
    ("games.santorini:Santorini", {"dimension": 3, "units_per_player": 1}, None),
    ("games.santorini:Santorini", {"dimension": 5, "units_per_player": 2}, None),
)
MOONSHOT_UNIT = (
    "searches per CPU-second (one core busy for one second); end to end: all searches of the "
    "Selfplayers over the CPU-seconds of every role, Predictor and bench included"
)

# the throughput bench's settings of an end-to-end run -> its figures
SelfPlay = Callable[[ThroughputSettings], dict]


def alphazero_self_play(settings: ThroughputSettings) -> dict:
    """End-to-end AlphaZero self-play at the game's preset, network included: the throughput
    bench's end-to-end run with `settings` (processes, the session's network path), with its
    efficiency and its rate per core."""
    from gamegym.bench.throughput import run_bench

    run = run_bench(settings)
    cores = max(1, min(settings.selfplayers, run["config"]["cores"] or 1))
    return {
        "searches_per_s": run["searches_per_s"],
        "searches_per_cpu_s": run["searches_per_cpu_s"],
        "searches_per_s_per_core": round(run["searches_per_s"] / cores, 1),
        "positions_per_s": run["positions_per_s"],
        "cores": cores,
        "efficiency": run["efficiency"],
        "cpu_efficiency": run["cpu_efficiency"],
        "cpu_by_role": run["cpu_by_role"],
        "network_path": run["network_path"],
        "mean_batch": run["mean_batch"],
    }


def _moonshot(runs: list[dict], groups: list[dict[str, Tally]]) -> dict:
    """Each end-to-end run over OpenSpiel's Python MCTSBot in the slices just before and just
    after it (its rate there: `moonshot_peer_searches_per_s`), per CPU-second and per
    wall-second of a core; the medians of the runs."""
    cpu, wall, peer = [], [], []
    for i, run in enumerate(runs):
        bot = groups[i]["openspiel"] + groups[i + 1]["openspiel"]
        peer.append(bot.per_cpu_s)
        cpu.append(run["searches_per_cpu_s"] / max(bot.per_cpu_s, 1e-9))
        wall.append(run["searches_per_s_per_core"] / max(bot.per_wall_s, 1e-9))
    return {
        "end_to_end": runs,
        "moonshot_peer_searches_per_s": [round(rate, 1) for rate in peer],
        "moonshot": round(float(np.median(cpu)), 3),
        "moonshot_runs": [round(r, 3) for r in cpu],
        "moonshot_wall": round(float(np.median(wall)), 3),
    }


def _ratios(figures: dict, threads: int) -> dict:
    """Ours over OpenSpiel's Python MCTSBot and over its C++ one (None: no C++ side)."""
    python = figures["openspiel"]["searches_per_s"]
    ours = {"1": figures["ours_1"]["searches_per_s"]}
    ours["threads"] = figures[f"ours_{threads}"]["searches_per_s"]
    out: dict[str, float | None] = {f"ratio_{k}": round(v / python, 2) for k, v in ours.items()}
    cpp = figures.get("openspiel_cpp", {}).get("searches_per_s")
    for key, value in ours.items():
        out[f"ratio_cpp_{key}"] = round(value / cpp, 3) if cpp else None
    out["cpp_vs_python"] = round(cpp / python, 2) if cpp else None
    return out


@dataclasses.dataclass(frozen=True)
class PeerSettings:
    """One peer bench run's settings (the flags of `gamegym bench peer`)."""

    games: tuple[str, ...] | None = None  # bundled game specs of PEER_GAMES (None: all)
    seconds: float = 10.0  # time per side and game, over all its slices
    searchcount: int = 100  # searches (simulations) per move, every side
    threads: int = 24  # concurrent searches of our second side, and end to end
    c: float = 1.5  # exploration constant, every side
    slices: int = 5  # alternating slices per side, before and after each end-to-end run
    seed: int = 0
    end_to_end_seconds: float = 0.0  # 0: no end-to-end runs
    end_to_end_runs: int = 1
    selfplayers: int = 4  # Selfplayers end to end
    core: str = "auto"  # our search's core (selfplay.search.core)
    network: dict | None = None  # end to end: network config fields instead of the preset's
    precision: str = "float32"  # end to end: predict.precision

    def __post_init__(self) -> None:
        if self.seconds <= 0 or self.slices < 1 or self.searchcount < 1 or self.threads < 1:
            raise ValueError(
                "the peer bench needs seconds > 0, slices >= 1, searchcount >= 1 and threads "
                f">= 1 (got {self.seconds}, {self.slices}, {self.searchcount}, {self.threads})"
            )
        if self.core not in CORES:
            raise ValueError(
                f"the peer bench's core must be one of {list(CORES)}, got {self.core!r}"
            )
        if self.end_to_end_seconds < 0 or self.end_to_end_runs < 1 or self.selfplayers < 1:
            raise ValueError(
                "the peer bench needs end-to-end seconds >= 0, end-to-end runs >= 1 and "
                f"selfplayers >= 1 (got {self.end_to_end_seconds}, {self.end_to_end_runs}, "
                f"{self.selfplayers})"
            )
        if self.precision not in PRECISIONS:
            raise ValueError(
                f"the peer bench's precision must be one of {list(PRECISIONS)}, "
                f"got {self.precision!r}"
            )
        if self.network is not None and not isinstance(self.network, dict):
            raise ValueError(
                f"the peer bench's network must be network config fields (a dict), "
                f"got {self.network!r}"
            )
        if self.network:  # its fields' names and ranges, before any slice runs (ConfigError)
            preset_config({"game": PEER_GAMES[0][0]}, {"network": self.network})

    @property
    def runs(self) -> int:
        """End-to-end runs per game OpenSpiel has (0: none)."""
        return self.end_to_end_runs if self.end_to_end_seconds > 0 else 0

    def end_to_end(self, game: str, game_args: dict) -> ThroughputSettings:
        """The throughput bench's settings of an end-to-end run on a game: our search on this
        bench's core, with its threads, searches, Selfplayers, network and precision, and no
        network paths side by side."""
        return ThroughputSettings(
            game=game,
            game_args=game_args,
            seconds=self.end_to_end_seconds,
            selfplayers=self.selfplayers,
            threads=self.threads,
            searchcount=self.searchcount,
            network_seconds=0.0,
            network=self.network,
            precision=self.precision,
            core=self.core,
        )


def _sides(game: str, game_args: dict, peer: str, s: PeerSettings, cpp: bool) -> dict[str, Any]:
    """The sides of one game's race, by their names in the report."""
    sides: dict[str, Any] = {
        "ours_1": OursSide(game, game_args, s.searchcount, 1, s.c, s.seed, s.core),
        f"ours_{s.threads}": OursSide(
            game, game_args, s.searchcount, s.threads, s.c, s.seed, s.core
        ),
        "openspiel": OpenSpielPythonSide(peer, s.searchcount, s.c, s.seed),
    }
    if cpp:
        sides["openspiel_cpp"] = OpenSpielCppSide(peer, s.searchcount, s.c, s.seed)
    return sides


def _peer_row(
    spec: tuple, s: PeerSettings, cpp: bool, self_play: SelfPlay, bars: ProgressBars
) -> dict:
    """One game's race, with the end-to-end runs between its groups of slices; a bar of its
    slices and runs on `bars`."""
    game, game_args, peer = spec
    row: dict[str, Any] = {"game": game, "game_args": game_args, "openspiel_game": peer}
    if peer is None:
        row["note"] = "OpenSpiel has no such game"
        return row
    sides = _sides(game, game_args, peer, s, cpp)
    slice_seconds = s.seconds / (s.slices * (s.runs + 1))
    steps = len(sides) * s.slices * (s.runs + 1) + s.runs  # slices and end-to-end runs
    title = _name({"game": game, "game_args": game_args})
    bar = bars.add(f"{title}: slices", steps, "steps")
    done_steps = 0

    def step() -> None:
        nonlocal done_steps
        done_steps += 1
        bars.update(bar, completed=done_steps)

    groups = [race(sides, slice_seconds, s.slices, step)]
    done = []
    for run in range(s.runs):
        bars.update(bar, description=f"{title}: end-to-end run {run + 1} of {s.runs}")
        done.append(self_play(s.end_to_end(game, game_args)))
        step()
        bars.update(bar, description=f"{title}: slices")
        groups.append(race(sides, slice_seconds, s.slices, step))
    figures = {name: sum((g[name] for g in groups), Tally()).figures() for name in sides}
    row.update(figures)
    row.update(_ratios(figures, s.threads))
    if s.runs:
        row.update(_moonshot(done, groups))
    return row


def _chosen(games: tuple[str, ...] | None) -> list[tuple]:
    """The PEER_GAMES rows of the game specs asked for (all when none are)."""
    if not games:
        return list(PEER_GAMES)
    known = [spec for spec, _, _ in PEER_GAMES]
    unknown = [game for game in games if game not in known]
    if unknown:
        raise ValueError(
            f"the peer bench has no game {', '.join(unknown)}; its games are "
            + ", ".join(dict.fromkeys(known))
        )
    return [row for row in PEER_GAMES if row[0] in games]


def run_peer_bench(
    s: PeerSettings, self_play: SelfPlay = alphazero_self_play, bars: ProgressBars | None = None
) -> dict:
    """For every bundled game (or `s.games`): our search ceiling (one search at a time, and
    `s.threads` concurrent searches), OpenSpiel's Python and C++ MCTSBot, `s.seconds` each in
    alternating slices; with `s.end_to_end_seconds`, `s.end_to_end_runs` runs of `self_play`
    between the slices and the moonshot ratio (see the module docstring).  The games and each
    game's slices are drawn on `bars` (none by default)."""
    pyspiel, _ = import_openspiel()
    skipped = cpp_missing(pyspiel)
    bars = bars or ProgressBars(enabled=False)
    chosen = _chosen(s.games)
    overall = bars.add("games", len(chosen), "games") if len(chosen) > 1 else None
    rows = []
    for spec in chosen:
        rows.append(_peer_row(spec, s, skipped is None, self_play, bars))
        bars.update(overall, completed=len(rows))
    return {
        "search_core": core_for(SearchParams(rule="puct", core=s.core)),
        "searchcount": s.searchcount,
        "threads": s.threads,
        "exploration_const": s.c,
        "seconds": s.seconds,
        "slices": s.slices,
        "games": rows,
        "openspiel_cpp_evaluator": CPP_EVALUATOR if skipped is None else None,
        "openspiel_cpp_skipped": skipped,
        "end_to_end_seconds": s.end_to_end_seconds,
        "end_to_end_runs": s.runs,
        "selfplayers": s.selfplayers,
        "end_to_end_network": s.network,
        "end_to_end_precision": s.precision,
        "moonshot_unit": MOONSHOT_UNIT if s.runs else None,
    }


def _name(row: dict) -> str:
    arguments = ", ".join(f"{k}={v}" for k, v in row["game_args"].items())
    return f"{row['game'].split(':')[1]}({arguments})"


def _rate(row: dict, side: str) -> str:
    return f"{row[side]['searches_per_s']:>9.0f}" if side in row else f"{'-':>9}"


def _times(value: float | None) -> str:
    return f"{value:>7.2f}x" if value is not None else f"{'-':>8}"


def print_peer_report(figures: dict) -> None:
    """The race as a table, the C++ side's evaluator, and the moonshot lines if measured."""
    t = figures["threads"]
    print(
        f"search ceiling vs OpenSpiel's MCTSBot: ours on the {figures['search_core']} core, "
        f"{figures['searchcount']} searches per move, "
        f"c {figures['exploration_const']}, no network, {figures['seconds']:g} s per side in "
        f"alternating slices; searches per CPU-second; ours and OpenSpiel's Python MCTSBot with "
        f"uniform priors and value 0"
    )
    print(
        "OpenSpiel's C++ side: "
        + (figures["openspiel_cpp_evaluator"] or figures["openspiel_cpp_skipped"])
    )
    print(
        f"{'game':44} {'ours, 1':>9} {f'ours, {t}':>9} {'Python':>9} {'C++':>9} "
        f"{'÷Py, 1':>8} {f'÷Py, {t}':>8} {'÷C++, 1':>8} {f'÷C++, {t}':>8}"
    )
    for row in figures["games"]:
        if "note" in row:
            print(f"{_name(row):44} {row['note']}")
            continue
        print(
            f"{_name(row):44} {_rate(row, 'ours_1')} {_rate(row, f'ours_{t}')} "
            f"{_rate(row, 'openspiel')} {_rate(row, 'openspiel_cpp')} "
            + " ".join(
                _times(row[key])
                for key in ("ratio_1", "ratio_threads", "ratio_cpp_1", "ratio_cpp_threads")
            )
        )
    if figures["end_to_end_runs"]:
        _print_moonshot(figures)


def _print_moonshot(figures: dict) -> None:
    print(
        f"end-to-end AlphaZero self-play per core over OpenSpiel's Python MCTSBot's bare search "
        f"per core (the moonshot): {_what_runs(figures)}, network included, "
        f"{figures['selfplayers']} Selfplayers x {figures['threads']} concurrent searches, "
        f"{figures['end_to_end_seconds']:g} s a run\n  unit: {figures['moonshot_unit']}"
    )
    for row in figures["games"]:
        if "moonshot" not in row:
            continue
        runs = row["end_to_end"]
        ours = float(np.median([run["searches_per_cpu_s"] for run in runs]))
        spread = ", ".join(f"{r:.2f}" for r in row["moonshot_runs"])
        efficiency = ", ".join(f"{run['efficiency']}" for run in runs)
        print(
            f"  {_name(row):30} ours {ours:,.0f} searches per CPU-second (efficiency "
            f"{efficiency}), MCTSBot {row['openspiel']['searches_per_s']:,.0f}: moonshot "
            f"{row['moonshot']:.2f}x (runs {spread}; per wall-second of a core "
            f"{row['moonshot_wall']:.2f}x)"
        )


def _what_runs(figures: dict) -> str:
    """The end-to-end runs' network and precision, as the report names them."""
    network = figures.get("end_to_end_network")
    precision = figures.get("end_to_end_precision", "float32")
    what = "the game's preset" + (f" with the network {json.dumps(network)}" if network else "")
    return what + (f", {precision}" if precision != "float32" else "")


COMMAND = "peer"
EXAMPLE = """examples:
  gamegym bench peer openspiel --seconds 10 --searchcount 100 --threads 24
  gamegym bench peer openspiel --game games.connectfour:ConnectFour --seconds 20 \\
      --end-to-end-seconds 20 --end-to-end-runs 3       # the moonshot ratio, three runs
"""


def add_parser(sub) -> None:
    """`gamegym bench peer openspiel`: our search ceiling beside the peer's, game by game."""
    p = sub.add_parser(
        COMMAND,
        help="our search ceiling beside a peer's MCTS on every bundled game",
        description=__doc__,
        epilog=EXAMPLE,
    )
    p.add_argument("peer", choices=["openspiel"], help="the peer (OpenSpiel's MCTSBot)")
    p.add_argument("--seconds", type=float, default=20.0, help="time per side and game")
    p.add_argument("--searchcount", type=int, default=100, help="searches per move")
    p.add_argument("--threads", type=int, default=24, help="concurrent searches of our second side")
    p.add_argument("--slices", type=int, default=5, help="alternating slices per side and run")
    p.add_argument(
        "--game",
        type=comma_list(),
        metavar="MODULE:CLASS,...",
        help="only these bundled games, comma-separated (default: every bundled game)",
    )
    p.add_argument(
        "--end-to-end-seconds",
        type=float,
        default=0.0,
        help="also run end-to-end AlphaZero self-play this long on every game OpenSpiel has, "
        "and print its ratio to OpenSpiel's Python MCTSBot per core (the moonshot)",
    )
    p.add_argument(
        "--end-to-end-runs", type=int, default=1, help="end-to-end runs, between the slices"
    )
    p.add_argument("--selfplayers", type=int, default=4, help="Selfplayers end to end")
    p.add_argument(
        "--core",
        choices=list(CORES),
        default="auto",
        help="our search's core (selfplay.search.core; auto: compiled where numba is installed)",
    )
    p.add_argument(
        "--network",
        type=json_object,
        default=None,
        help="end to end: network config fields instead of the preset's, e.g. "
        '\'{"kind": "residual", "width": 24, "blocks": 3}\'',
    )
    p.add_argument(
        "--precision",
        choices=list(PRECISIONS),
        default="float32",
        help="end to end: the fast path's precision (predict.precision)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=cmd_peer)


def cmd_peer(args) -> int:
    settings = PeerSettings(
        games=tuple(args.game) if args.game else None,
        seconds=args.seconds,
        searchcount=args.searchcount,
        threads=args.threads,
        slices=args.slices,
        end_to_end_seconds=args.end_to_end_seconds,
        end_to_end_runs=args.end_to_end_runs,
        selfplayers=args.selfplayers,
        core=args.core,
        network=args.network,
        precision=args.precision,
    )
    with ProgressBars() as bars:
        figures = run_peer_bench(settings, bars=bars)
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    else:
        print_peer_report(figures)
    return 0
