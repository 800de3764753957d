"""The `gamegym` command: new, resume, status, check (and the commands of later modules)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from gamegym.cli.util import Parser, add_trust_flag, console_ask, port_number, read_overrides
from gamegym.config import ConfigError, GymConfig, merged_settings
from gamegym.console import json_object, prints_help
from gamegym.data.session import SessionError
from gamegym.game.graph import GameGraphError
from gamegym.registry import BACKENDS


def cmd_new(args) -> int:
    from gamegym.game.ref import GameRef
    from gamegym.runtime.gym import GameGym

    if Path(args.session, "config.json").exists():
        raise SessionError(f"session {args.session} already exists; use 'gamegym resume'")
    config, initial_model = None, args.initial_model
    if args.preset:
        from gamegym.cli.presets import new_session_settings

        config, starter = new_session_settings(args.preset, args.game, args.game_args, args.config)
        initial_model = initial_model or starter
    elif args.game is None:
        raise ConfigError(
            "give the game (--game MODULE:CLASS) or a preset (--preset NAME; "
            "gamegym presets lists them)"
        )
    else:
        # the game as --game names it (whatever the file says), every argument spelled out
        game = GameRef(args.game, args.game_args or {}).complete().settings()
        file = read_overrides(args.config) if args.config else {}
        config = GymConfig.from_dict(merged_settings(file, game))
    gym = GameGym(args.session, config=config, initial_model=initial_model)
    print(
        f"created session {gym.session.path} for {gym.config.game} {gym.config.game_args}"
        + (f" from the preset {args.preset}" if args.preset else "")
    )
    print(f"run it with: gamegym resume {args.session}")
    return 0


def cmd_resume(args) -> int:
    from gamegym.data.session import Session
    from gamegym.runtime.gym import GameGym

    stored = Session(args.session).load_config()  # a clear error for a missing/foreign folder
    config = None
    if args.config:
        config = GymConfig.from_json_file(
            args.config, fill={"game": stored.game, "game_args": stored.game_args}
        )
    gym = GameGym(args.session, config=config, stored=stored, trust=args.trust, ask=console_ask())
    if args.ray is not None:  # this run only: the session's config.json keeps its backend
        gym.config = gym.config.updated({"selfplay": {"backend": "ray", "ray_address": args.ray}})
    BACKENDS.get(gym.config.selfplay.backend).check_available(gym.config)
    return gym.resume(max_seconds=args.max_seconds, max_iterations=args.max_iterations)


def cmd_continue(args) -> int:
    from gamegym.runtime.continuation import continue_session

    overrides = read_overrides(args.config) if args.config else {}
    new = continue_session(
        args.source,
        args.session,
        args.game,
        args.game_args,
        overrides,
        trust=args.trust,
        ask=console_ask(),
    )
    config = new.load_config()
    origin = json.loads((new.path / "origin.json").read_text())
    print(
        f"created session {new.path} for {config.game} {config.game_args}, continuing "
        f"{origin['source']} at iteration {origin['iteration']} (as iteration "
        f"{origin['first_iteration']}) with its {origin['sample_files']} sample files"
        + (" and replay state" if origin["replay_state"] else "")
    )
    print(f"run it with: gamegym resume {args.session}")
    return 0


def session_status(path: str) -> dict:
    """What `gamegym status` shows: iteration, samples, games, last losses, lock holder, and
    where self-play runs and the CPU and memory of each role (from the gym's newest status
    record, monitoring/status.jsonl: live while a gym runs, the last seen otherwise)."""
    from gamegym.data.fileio import last_jsonl
    from gamegym.data.samplefolder import SampleCounter
    from gamegym.data.session import Session
    from gamegym.data.trust import session_code, trusted_modules

    session = Session(path)
    config = session.load_config()  # imports nothing it names
    try:
        code = session_code(config.game, config.plugins)
        origin, plugins = code.origins[code.game], {m: code.origins[m] for m in code.plugins}
        described = code.describe()
        unallowed = sorted(set(code.foreign()) - trusted_modules(session.path))
    except GameGraphError as error:
        origin = described = f"(refused: {error})"
        plugins, unallowed = {}, []
    counts = SampleCounter(session.samples_dir).per_iteration()
    reports = session.train_reports()
    holder = session.lock_holder() if session.lock_path.exists() else None
    last = last_jsonl(session.monitoring_dir / "status.jsonl") or {}
    return {
        "session": str(session.path),
        "game": config.game,
        "game_args": config.game_args,
        "game_module": origin,
        "plugins": plugins,
        "code": described,
        "code_not_allowed": unallowed,
        "learner": config.train.learner,
        "iteration": session.current_iteration(),
        "models": session.model_iterations(),
        "samples": sum(n for n, _ in counts.values()),
        "samples_per_iteration": {str(k): n for k, (n, _) in sorted(counts.items())},
        "games": sum(g for _, g in counts.values()),
        "last_losses": reports[-1]["losses"] if reports else {},
        "running": holder is not None,
        "running_pid": holder["pid"] if holder else None,
        "replay": config.train.replay,
        "replay_figures": reports[-1].get("replay_figures", {}) if reports else {},
        "backend": backend_status(config, last or None),
        "resources": last.get("resources", {}),
        "resources_time": last.get("time"),
    }


def backend_status(config, record: dict | None) -> dict:
    """The backend of the newest status record (with its time), else the configured one."""
    if record and isinstance(record.get("backend"), dict):
        return {**record["backend"], "time": record.get("time")}
    if config.selfplay.backend not in BACKENDS:  # a plugin's, not imported here
        return {"name": config.selfplay.backend}
    return BACKENDS.get(config.selfplay.backend).describe(config)


def cmd_status(args) -> int:
    status = session_status(args.session)
    if args.json:
        print(json.dumps(status, indent=2, sort_keys=True))
        return 0
    print(f"session   {status['session']}")
    print(f"game      {status['game']} {status['game_args']}  (learner {status['learner']})")
    print(f"code      imports {status['code']} (resuming the session runs it)")
    if status["code_not_allowed"]:
        print(
            f"          not allowed for this folder yet: {', '.join(status['code_not_allowed'])}"
            f" (resume refuses them without --trust)"
        )
    print(f"iteration {status['iteration']}  (model files: {len(status['models'])})")
    print(f"samples   {status['samples']} from {status['games']} games")
    losses = ", ".join(f"{k} {v:.4f}" for k, v in sorted(status["last_losses"].items()))
    print(f"losses    {losses or '(not trained yet)'}")
    if status["replay_figures"]:
        from gamegym.runtime.monitor import replay_summary

        print(
            f"replay    {status['replay']}: {replay_summary(status['replay_figures'])} "
            "(mean replay count, new share of the last draws, priority 10th..90th percentile)"
        )
    running = f"yes, pid {status['running_pid']}" if status["running"] else "no"
    print(f"running   {running}")
    print(f"selfplay  {describe_backend(status['backend'], status['running'])}")
    if status["resources"]:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(status["resources_time"]))
        roles = sorted(status["resources"].items())
        print(
            "memory    "
            + ", ".join(f"{role} {r['rss_mib']:.0f} MiB" for role, r in roles)
            + f"  (resident, by role, {'now' if status['running'] else 'last seen'}: {when})"
        )
        print(
            "cpu       "
            + ", ".join(f"{role} {r['cpu_percent']:.0f}%" for role, r in roles)
            + "  (100% = one core)"
        )
    return 0


def describe_backend(backend: dict, running: bool) -> str:
    """'processes' or 'ray at ADDRESS: N nodes, A of S Selfplayers alive' and per node
    searches/s; figures of a run that ended are marked as such."""
    text = backend["name"]
    if backend.get("address"):
        text += f" at {backend['address']}"
    if "selfplayers" in backend:
        text += (
            f": {backend.get('nodes', 1)} node(s), {backend['selfplayers_alive']} of "
            f"{backend['selfplayers']} Selfplayers alive"
        )
        if not running and backend.get("time"):
            text += time.strftime(
                " (when the last run last reported, %Y-%m-%d %H:%M)",
                time.localtime(backend["time"]),
            )
    for node, rate in sorted(backend.get("searches_per_s_by_node", {}).items()):
        text += f"\n          node {node}: {rate:.0f} searches/s"
    return text


def cmd_check(args) -> int:
    from gamegym.console import ProgressBars
    from gamegym.game.checkreport import run_check

    with ProgressBars(redirect_stderr=True) as bars:  # the violations go to stderr too
        bar = bars.add(f"checking {args.game}", args.games, "random games")
        return run_check(
            args.game,
            args.game_args,
            args.games,
            args.seed,
            after_game=lambda played: bars.update(bar, completed=played),
        )


def cmd_serve(args) -> int:
    from gamegym.serve import run_server

    return run_server(
        args.session, host=args.host, port=args.port, trust=args.trust, ask=console_ask()
    )


NEW_EXAMPLE = """examples:
  gamegym new sessions/ttt --preset tictactoe
  gamegym new sessions/mygame --game games.santorini:Santorini --game-args '{"dimension": 4}'
"""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="gamegym", description="A desktop self-play gym.")
    sub = parser.add_subparsers(dest="command")
    parser.set_defaults(run=prints_help(parser))

    p = sub.add_parser(
        "new",
        help="create a session folder (does not start it)",
        epilog=NEW_EXAMPLE,
    )
    p.add_argument("session", help="session folder, e.g. sessions/mygame")
    p.add_argument("--game", metavar="MODULE:CLASS", help="the game (or from --preset)")
    p.add_argument("--game-args", type=json_object, help="JSON keyword arguments")
    p.add_argument(
        "--preset",
        metavar="NAME",
        help="start from a bundled preset: its game, settings and starter model "
        "(gamegym presets lists them); --game, --game-args, --config change it",
    )
    p.add_argument(
        "--config",
        type=Path,
        help="a config JSON file (see README); with --preset the changes to the preset's settings",
    )
    p.add_argument("--initial-model", type=Path, help="a .keras model for iteration 0")
    p.set_defaults(run=cmd_new)

    p = sub.add_parser("resume", help="run a session until 'exit', Ctrl+C or a limit")
    p.add_argument("session", help="the session folder")
    p.add_argument(
        "--max-seconds", type=float, help="stop after this many seconds (default: no limit)"
    )
    p.add_argument(
        "--max-iterations",
        type=int,
        help="stop after this many new iterations (default: no limit)",
    )
    p.add_argument("--config", type=Path, help="change settings (fixed fields excepted)")
    p.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run the Selfplayers on Ray for this run: alone, a Ray started on this "
        "machine; 'auto' or HOST:PORT, the cluster there (needs the [ray] extra)",
    )
    add_trust_flag(p, "the game module and the plugins")
    p.set_defaults(run=cmd_resume)

    p = sub.add_parser(
        "continue",
        help="a new session carrying on from another one's model "
        "and samples under changed game arguments (or rules)",
    )
    p.add_argument("source", help="the session to carry on from (only read)")
    p.add_argument("session", help="the new session folder")
    p.add_argument("--game-args", type=json_object, help="the new game arguments (JSON)")
    p.add_argument(
        "--game",
        metavar="MODULE:CLASS",
        help="another game with the same input shape and action space",
    )
    p.add_argument("--config", type=Path, help="other settings to change (a config JSON file)")
    add_trust_flag(p, "the game module and the plugins of the source session")
    p.set_defaults(run=cmd_continue)

    p = sub.add_parser("status", help="show a session's state (imports none of the code it names)")
    p.add_argument("session", help="the session folder")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=cmd_status)

    p = sub.add_parser("check", help="play random games and report GameGraph contract violations")
    p.add_argument(
        "--game",
        required=True,
        metavar="MODULE:CLASS",
        help="the game, e.g. games.tictactoe:TicTacToe",
    )
    p.add_argument("--game-args", type=json_object, default={}, help="JSON keyword arguments")
    p.add_argument("--games", type=int, default=50, help="random games to play")
    p.add_argument("--seed", type=int, default=0, help="the random games' seed")
    p.set_defaults(run=cmd_check)

    p = sub.add_parser(
        "serve",
        help="a web page to watch a session learn, replay its "
        "self-play games and play its models (only reads the session)",
    )
    p.add_argument("session", help="the session folder (only read)")
    p.add_argument("--port", type=port_number, default=8000, help="port to listen on")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (127.0.0.1: this computer only)",
    )
    add_trust_flag(p, "the game module (never a plugin)")
    p.set_defaults(run=cmd_serve)

    from gamegym import bench
    from gamegym.cli import evaluate, presets

    bench.add_parser(sub)
    evaluate.add_commands(sub)
    presets.add_parser(sub)
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line as a namespace whose `run` is the command (a command group without
    its subcommand: its help, on stderr).  A usage error exits with status 2, on stderr."""
    return build_parser().parse_args(sys.argv[1:] if argv is None else argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from gamegym.runtime.gym import GymError

    try:
        return int(args.run(args) or 0)
    except (ConfigError, SessionError, GymError, GameGraphError, ValueError) as error:
        print(f"gamegym: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # e.g. an unreadable folder or a full disk: name it, no traceback
        from gamegym.data.fileio import disk_full_message, is_disk_full

        where = Path(getattr(args, "session", None) or ".")
        print(
            f"gamegym: error: {disk_full_message(where, error) if is_disk_full(error) else error}",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
