"""Where MuZero's hidden states should live: in the pipes, or kept in the Predictor by id.

    python scripts/bench_hidden_states.py [--seconds S] [--batch B ...]

For each bundled MuZero preset, a server process answers "recurrent" requests over a pipe with
the preset's starter model (LatentModelCall, as the Predictor does), in two ways, alternately:
  pipes   the request carries the parents' hidden states [B, ...] and the answer the new ones
          (what gamegym does)
  kept    the request carries parent ids [B] and the answer new ids; the server keeps every
          hidden state of the current search in a dict (gathers the parents with np.stack,
          stores each new row), and drops them when the client starts a new search
          (every 100 requests here, about one move's search)
and prints the round trips per second of each, their ratio, and the bytes a round trip moves.
"""

import argparse
import multiprocessing
import os
import pickle
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # one BLAS thread per process, as the gym's children

import numpy as np  # noqa: E402

from gamegym.runtime.messages import EvalRequest, EvalResponse  # noqa: E402

SEARCH = 100  # requests per search: the server drops the kept states after each


def serve(path, conn):
    from gamegym.learners.muzero.nets import LatentModelCall
    from gamegym.nets.tfsetup import configure_tensorflow, load_model

    configure_tensorflow(use_gpu=False, threads=1)
    evaluator = LatentModelCall(load_model(path), 0)
    kept, count = {}, [0]

    def keep(hidden):
        ids = np.arange(count[0], count[0] + len(hidden))
        count[0] += len(hidden)
        kept.update(zip(ids.tolist(), hidden))
        return ids

    while True:
        request = conn.recv()
        if request is None:
            return
        inputs = request.inputs
        if request.kind == "initial":  # pipes: the roots' hidden states go back
            outputs = evaluator.run("initial", inputs)
        elif request.kind == "seed":  # kept: a new search; its roots are kept
            kept.clear()
            outputs = {"id": keep(evaluator.run("initial", inputs)["hidden"])}
        elif "hidden" in inputs:  # pipes
            outputs = evaluator.run("recurrent", inputs)
        else:  # kept
            hidden = np.stack([kept[i] for i in inputs["parent"].tolist()])
            outputs = evaluator.run("recurrent", {"hidden": hidden, "action": inputs["action"]})
            outputs["id"] = keep(outputs.pop("hidden"))
        conn.send(EvalResponse(request.request_id, 0, outputs))


def measure(conn, batch, seconds, actions, mode, root):
    """Round trips per second and bytes per round trip of one mode."""
    rng = np.random.default_rng(0)
    roots = {"x": np.repeat(root, batch, axis=0)}
    key = "hidden" if mode == "pipes" else "id"
    count, moved, start = 0, 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        if count % SEARCH == 0:  # a new search from its roots
            conn.send(EvalRequest(-1, "initial" if mode == "pipes" else "seed", roots))
            parents = conn.recv().outputs[key]
        action = rng.integers(0, actions, batch).astype(np.int32)
        request = EvalRequest(
            count,
            "recurrent",
            {"hidden" if mode == "pipes" else "parent": parents, "action": action},
        )
        conn.send(request)
        response = conn.recv()
        moved += len(pickle.dumps(request)) + len(pickle.dumps(response))
        parents = response.outputs[key]  # the next request expands the children just made
        count += 1
    elapsed = time.perf_counter() - start
    return count / elapsed, moved / max(1, count)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--batch", type=int, nargs="+", default=[8, 24])
    parser.add_argument("--rounds", type=int, default=4, help="alternations of the two modes")
    args = parser.parse_args()
    from gamegym.game.graph import load_game
    from gamegym.presets import INITIAL_MODELS, PRESETS, preset_learner

    context = multiprocessing.get_context("spawn")
    for name, preset in sorted(PRESETS.items()):
        if preset_learner(preset) != "muzero":
            continue
        graph = load_game(preset["game"], preset["game_args"])
        root = graph.numpify(graph.roots[0])[None]
        mine, theirs = context.Pipe()
        server = context.Process(target=serve, args=(INITIAL_MODELS / f"{name}.keras", theirs))
        server.start()
        try:
            for batch in args.batch:
                rates = {"pipes": [], "kept": []}
                moved = {}
                for _ in range(args.rounds):
                    for mode in ("pipes", "kept"):
                        rate, size = measure(
                            mine,
                            batch,
                            args.seconds / args.rounds,
                            graph.action_space_size,
                            mode,
                            root,
                        )
                        rates[mode].append(rate)
                        moved[mode] = size
                pipes, kept = np.mean(rates["pipes"]), np.mean(rates["kept"])
                print(
                    f"{name:22s} batch {batch:3d}: pipes {pipes:7.0f} round trips/s "
                    f"({moved['pipes'] / 1024:6.1f} KiB each), kept {kept:7.0f} "
                    f"({moved['kept'] / 1024:6.1f} KiB); kept/pipes {kept / pipes:.2f}",
                    flush=True,
                )
        finally:
            mine.send(None)
            server.join(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
