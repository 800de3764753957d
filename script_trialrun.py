"""Trial run: a small self-play session on tic-tac-toe that learns visibly on a 2-core CPU.

    python script_trialrun.py                      # starts sessions/trialrun, or resumes it
    python script_trialrun.py --max-seconds 300    # stop by itself after 5 minutes

Type 'status' for a status line, 'exit' (or Ctrl+C) to stop; run it again to resume.  When it
stops, the newest model plays 20 quick games against the perfect player (tic-tac-toe's exact
solver) and one line says how it did.
"""

import argparse
import sys
import time
from pathlib import Path

from gamegym import GameGym, GymConfig
from gamegym.presets import PRESETS, initial_model_path

SESSION = Path(__file__).resolve().parent / "sessions" / "trialrun"
PRESET = PRESETS["tictactoe"]


def trial_config() -> GymConfig:
    """The tic-tac-toe preset: learns within minutes on two cores."""
    return GymConfig.from_dict({**PRESET, "status_interval": 10.0})


def show_verdict(gym: GameGym) -> None:
    """How strong the newest model is: a short match against the exact solver (seconds)."""
    from gamegym.evaluation.ratings import verdict

    print("[gamegym] checking the newest model against the perfect player ...", flush=True)
    started = time.monotonic()
    try:
        line = verdict(gym.session, "solver", games=20)
    except KeyboardInterrupt:
        print("[gamegym] check skipped", flush=True)
        return
    print(f"[gamegym] {line} ({time.monotonic() - started:.0f} s)", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-seconds", type=float, help="stop after this many seconds")
    parser.add_argument("--max-iterations", type=int, help="stop after this many new iterations")
    parser.add_argument(
        "--session", type=Path, default=SESSION, help="the session folder (made on the first run)"
    )
    args = parser.parse_args()
    if (args.session / "config.json").exists():
        print(f"resuming {args.session}")
        gym = GameGym(args.session)
    else:
        print(f"starting {args.session}")
        config = trial_config()
        gym = GameGym(
            args.session,
            config=config,
            initial_model=initial_model_path(config.game, config.game_args, config.network),
        )
    code = gym.resume(max_seconds=args.max_seconds, max_iterations=args.max_iterations)
    if code == 0:
        show_verdict(gym)
    return code


if __name__ == "__main__":
    sys.exit(main())
