"""The `gamegym` command: new, resume, status, check (and the commands of later modules)."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from gamegym.cliutil import json_object
from gamegym.config import ConfigError, GymConfig
from gamegym.graph import GameGraphError
from gamegym.session import SessionError


def cmd_new(args) -> int:
    from gamegym.gym import GameGym
    from gamegym.graph import load_game
    graph = load_game(args.game, args.game_args)
    config = None
    if args.config:
        config = GymConfig.from_json_file(args.config, fill={"game": args.game,
                                                             "game_args": graph.game_args})
    if Path(args.session, "config.json").exists():
        raise SessionError(f"session {args.session} already exists; use 'gamegym resume'")
    gym = GameGym(args.session, graph=graph, config=config, initial_model=args.initial_model)
    print(f"created session {gym.session.path} for {gym.config.game} {gym.config.game_args}")
    print(f"run it with: gamegym resume {args.session}")
    return 0


def cmd_resume(args) -> int:
    from gamegym.gym import GameGym
    from gamegym.session import Session
    stored = Session(args.session).load_config()  # a clear error for a missing/foreign folder
    config = None
    if args.config:
        config = GymConfig.from_json_file(args.config, fill={"game": stored.game,
                                                             "game_args": stored.game_args})
    gym = GameGym(args.session, config=config)
    return gym.resume(max_seconds=args.max_seconds, max_iterations=args.max_iterations)


def session_status(path: str) -> dict:
    """What `gamegym status` shows: iteration, samples, games, last losses, lock holder, and
    the CPU and memory of each role from the gym's last status line (monitoring/status.jsonl:
    live while a gym runs, the last seen otherwise)."""
    from gamegym.fileio import last_jsonl
    from gamegym.samples import SampleCounter
    from gamegym.session import Session
    session = Session(path)
    config = session.load_config()
    counts = SampleCounter(session.samples_dir).per_iteration()
    reports = session.train_reports()
    holder = session.lock_holder() if session.lock_path.exists() else None
    last = last_jsonl(session.monitoring_dir / "status.jsonl") or {}
    return {
        "session": str(session.path), "game": config.game, "game_args": config.game_args,
        "learner": config.train.learner, "iteration": session.current_iteration(),
        "models": session.model_iterations(), "samples": sum(n for n, _ in counts.values()),
        "samples_per_iteration": {str(k): n for k, (n, _) in sorted(counts.items())},
        "games": sum(g for _, g in counts.values()), "last_losses": reports[-1]["losses"] if reports else {},
        "running": holder is not None, "running_pid": holder["pid"] if holder else None,
        "resources": last.get("resources", {}), "resources_time": last.get("time"),
    }


def cmd_status(args) -> int:
    status = session_status(args.session)
    if args.json:
        print(json.dumps(status, indent=2, sort_keys=True))
        return 0
    print(f"session   {status['session']}")
    print(f"game      {status['game']} {status['game_args']}  (learner {status['learner']})")
    print(f"iteration {status['iteration']}  (model files: {len(status['models'])})")
    print(f"samples   {status['samples']} from {status['games']} games")
    losses = ", ".join(f"{k} {v:.4f}" for k, v in sorted(status["last_losses"].items()))
    print(f"losses    {losses or '(not trained yet)'}")
    print(f"running   {'yes, pid %s' % status['running_pid'] if status['running'] else 'no'}")
    if status["resources"]:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(status["resources_time"]))
        roles = sorted(status["resources"].items())
        print(f"memory    " + ", ".join(f"{role} {r['rss_mib']:.0f} MiB" for role, r in roles) +
              f"  (resident, by role, {'now' if status['running'] else 'last seen'}: {when})")
        print(f"cpu       " + ", ".join(f"{role} {r['cpu_percent']:.0f}%" for role, r in roles) +
              "  (100% = one core)")
    return 0


def cmd_check(args) -> int:
    from gamegym.checker import run_check
    return run_check(args.game, args.game_args, args.games, args.seed)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gamegym", description="A desktop self-play gym.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("new", help="create a session folder (does not start it)")
    p.add_argument("session", help="session folder, e.g. sessions/mygame")
    p.add_argument("--game", required=True, help="the game as package.module:Class")
    p.add_argument("--game-args", type=json_object, default={}, help="JSON keyword arguments")
    p.add_argument("--config", type=Path, help="a config JSON file (see README)")
    p.add_argument("--initial-model", type=Path, help="a .keras model for iteration 0")
    p.set_defaults(run=cmd_new)

    p = sub.add_parser("resume", help="run a session until 'exit', Ctrl+C or a limit")
    p.add_argument("session")
    p.add_argument("--max-seconds", type=float)
    p.add_argument("--max-iterations", type=int, help="stop after this many new iterations")
    p.add_argument("--config", type=Path, help="change settings (fixed fields excepted)")
    p.set_defaults(run=cmd_resume)

    p = sub.add_parser("status", help="show a session's state")
    p.add_argument("session")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_status)

    p = sub.add_parser("check", help="play random games and report GameGraph contract violations")
    p.add_argument("game", help="package.module:Class")
    p.add_argument("--game-args", type=json_object, default={})
    p.add_argument("--games", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=cmd_check)

    from gamegym import bench, evaluation
    bench.add_commands(sub)
    evaluation.add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from gamegym.gym import GymError
    try:
        return int(args.run(args) or 0)
    except (ConfigError, SessionError, GymError, GameGraphError, ValueError) as error:
        print(f"gamegym: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:   # e.g. an unreadable folder or a full disk: name it, no traceback
        from gamegym.fileio import disk_full_message, is_disk_full
        where = Path(getattr(args, "session", None) or ".")
        print(f"gamegym: error: {disk_full_message(where, error) if is_disk_full(error) else error}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
