"""Trial run: a small self-play session on tic-tac-toe that learns visibly on a 2-core CPU.

    python script_trialrun.py                # starts sessions/trialrun, or resumes it
    python script_trialrun.py --minutes 5    # stop by itself after 5 minutes

Type 'status' for a status line, 'exit' (or Ctrl+C) to stop; run it again to resume.
"""
import argparse
import sys
from pathlib import Path

from gamegym import GameGym, GymConfig
from games.tictactoe import TicTacToe

SESSION = Path(__file__).resolve().parent / "sessions" / "trialrun"
INITIAL_MODEL = Path(__file__).resolve().parent / "initialmodels" / "tictactoe.keras"


def trial_config() -> GymConfig:
    """Defaults that learn within minutes on two cores."""
    return GymConfig(
        game="games.tictactoe:TicTacToe",
        selfplay={"selfplayprocesses": 1, "searchthreadcount": 8, "searchcount": 64,
                  "temperature_drop_move": 4, "gamelog_dump_threshold": 20,
                  "dirichlet_alpha": 1.0},
        train={"min_samplecount": 400, "min_new_samples": 400, "max_samplecount": 8000,
               "max_sampleage": 6, "epochs": 4, "batchsize": 64},
        status_interval=10.0,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, help="stop after this many minutes")
    parser.add_argument("--iterations", type=int, help="stop after this many new iterations")
    parser.add_argument("--session", type=Path, default=SESSION)
    args = parser.parse_args()
    if (args.session / "config.json").exists():
        print(f"resuming {args.session}")
        gym = GameGym(args.session)
    else:
        print(f"starting {args.session}")
        initial = INITIAL_MODEL if INITIAL_MODEL.exists() else None
        gym = GameGym(args.session, graph=TicTacToe(), config=trial_config(),
                      initial_model=initial)
    seconds = args.minutes * 60 if args.minutes else None
    return gym.resume(max_seconds=seconds, max_iterations=args.iterations)


if __name__ == "__main__":
    sys.exit(main())
