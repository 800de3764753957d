"""Resident memory of a Predictor actor on a Ray node, on the CPU fast path.

    python scripts/ray_predictor_memory.py [PRESET ...]     (needs the [ray] extra)

For each preset (default: tictactoe, santorini-3-1, connectfour) it makes a new session in a
temporary folder, starts a one-CPU local Ray, hands a PredictorActor the session's first model
as the gym does (the model and its fast-path file in one object), has it answer 20 batches, and
prints one JSON line: whether the actor imported TensorFlow, and its process's resident (RSS)
and unique (USS, not shared with other processes) memory in MiB.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from multiprocessing.connection import Client

DEFAULT_PRESETS = ("tictactoe", "santorini-3-1", "connectfour")


def measure(preset: str) -> dict:
    import numpy as np
    import psutil
    import ray

    from gamegym.cli.main import main
    from gamegym.data.session import Session
    from gamegym.game.graph import load_game
    from gamegym.runtime.pipes import PipeService
    from gamegym.runtime.ray.actors import ModelFiles, PredictorActor

    folder = os.path.join(tempfile.mkdtemp(), preset)
    if main(["new", folder, "--preset", preset]) != 0:
        raise SystemExit(f"could not make a session with the preset {preset}")
    session = Session(folder)
    config = session.load_config()
    files = ModelFiles(session.model_path(0).read_bytes(), session.fast_model_path(0).read_bytes())
    graph = load_game(config.game, config.game_args)
    root = graph.roots[0]
    x = np.stack([graph.numpify(v) for v in (root, *graph.children_at(root))] * 8)
    ray.init(address="local", num_cpus=1, include_dashboard=False, object_store_memory=80 * 2**20)
    try:
        key = os.urandom(32)
        actor = ray.remote(PredictorActor).options(max_concurrency=4).remote("p", config, key)
        ray.get(actor.publish.remote(0, ray.put(files)))
        service = PipeService(Client(ray.get(actor.address.remote()), authkey=key))
        for _ in range(20):
            service.submit("evaluate", {"x": x})()
        answer = ray.get(actor.take.remote())
        pid = ray.get(actor.__ray_call__.remote(lambda _: os.getpid()))
        memory = psutil.Process(pid).memory_full_info()
    finally:
        ray.shutdown()
    return {
        "preset": preset,
        "tensorflow": answer["tensorflow"],
        "rss_mib": round(memory.rss / 2**20, 1),
        "uss_mib": round(memory.uss / 2**20, 1),
        "ray": ray.__version__,
    }


if __name__ == "__main__":
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a private one-process Ray
    for name in sys.argv[1:] or DEFAULT_PRESETS:
        print(json.dumps(measure(name)), flush=True)
