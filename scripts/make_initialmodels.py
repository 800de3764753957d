"""Make the untrained starter models in initialmodels/ (one per bundled game, fixed seeds).

    python scripts/make_initialmodels.py
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from gamegym.config import NetworkConfig  # noqa: E402
from gamegym.graph import load_game  # noqa: E402
from gamegym.networks import network_for_game  # noqa: E402
from gamegym.presets import INITIAL_MODELS, PRESETS  # noqa: E402


def main() -> int:
    INITIAL_MODELS.mkdir(exist_ok=True)
    for seed, (name, preset) in enumerate(sorted(PRESETS.items())):
        graph = load_game(preset["game"], preset["game_args"])
        model = network_for_game(graph, NetworkConfig(**preset["network"]), seed=seed)
        path = INITIAL_MODELS / f"{name}.keras"
        model.save(path)
        print(f"{path.name}: {model.count_params()} parameters, {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
