"""Make the untrained starter models in gamegym/initialmodels/: one per bundled game preset,
seed 0.

    python scripts/make_initialmodels.py [PRESET ...]     # default: every preset

Writes gamegym/initialmodels/<preset name>.keras (tictactoe, connectfour, santorini-3-1 and
their -muzero presets), each built by its preset's learner with the preset's network, and fails
if a file is not well under 1 MB (they are committed, and shipped in the package as package
data: setup.cfg [options.package_data]).
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from gamegym.config import GymConfig  # noqa: E402
from gamegym.game.graph import load_game  # noqa: E402
from gamegym.learners import get_learner  # noqa: E402
from gamegym.presets import INITIAL_MODELS, PRESETS, preset_learner  # noqa: E402

SEED = 0
MAX_BYTES = 800_000


def main(names: list[str]) -> int:
    unknown = sorted(set(names) - set(PRESETS))
    if unknown:
        print(f"unknown preset(s) {unknown}; known: {sorted(PRESETS)}", file=sys.stderr)
        return 2
    INITIAL_MODELS.mkdir(exist_ok=True)
    too_big = []
    for name, preset in sorted(PRESETS.items()):
        if names and name not in names:
            continue
        graph = load_game(preset["game"], preset["game_args"])
        learner = get_learner(preset_learner(preset))
        model = learner.build_model(graph, GymConfig.from_dict(preset).network_options(), seed=SEED)
        path = INITIAL_MODELS / f"{name}.keras"
        model.save(path)
        size = path.stat().st_size
        print(
            f"{path.name}: {model.name}, input {tuple(model.inputs[0].shape[1:])}, "
            f"{graph.action_space_size} actions, {model.count_params()} parameters, "
            f"{size} bytes"
        )
        if size > MAX_BYTES:
            too_big.append(path.name)
    if too_big:
        print(f"too big to commit (> {MAX_BYTES} bytes): {', '.join(too_big)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
