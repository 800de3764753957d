"""Make the untrained starter models in initialmodels/: one per bundled game preset, seed 0.

    python scripts/make_initialmodels.py

Writes initialmodels/<preset name>.keras (tictactoe, connectfour, santorini-3-1) with the
preset's network, and fails if a file is not well under 1 MB (they are committed).
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from gamegym.graph import load_game  # noqa: E402
from gamegym.networks import network_for_game  # noqa: E402
from gamegym.presets import INITIAL_MODELS, PRESETS  # noqa: E402

SEED = 0
MAX_BYTES = 800_000


def main() -> int:
    INITIAL_MODELS.mkdir(exist_ok=True)
    too_big = []
    for name, preset in sorted(PRESETS.items()):
        graph = load_game(preset["game"], preset["game_args"])
        model = network_for_game(graph, preset["network"], seed=SEED)
        path = INITIAL_MODELS / f"{name}.keras"
        model.save(path)
        size = path.stat().st_size
        print(f"{path.name}: {model.name}, input {tuple(model.inputs[0].shape[1:])}, "
              f"{graph.action_space_size} actions, {model.count_params()} parameters, "
              f"{size} bytes")
        if size > MAX_BYTES:
            too_big.append(path.name)
    if too_big:
        print(f"too big to commit (> {MAX_BYTES} bytes): {', '.join(too_big)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
