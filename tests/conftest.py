"""Shared test set-up: how the suite is organised, and the fixtures every test file may use.

Conventions (tests/README.md says the same at more length):
- `python -m pytest` runs everything CI runs, on every core (pytest-xdist, `-n auto` in
  pyproject.toml); `-m "not slow"` leaves out the real-process tests for a quick run, `-n 0`
  runs in one process (for a debugger or `-x`).
- A test that starts real processes (a gym, a `gamegym` command) is marked `slow`.  Keep it
  short: a tiny network, `--max-iterations 1` or 2, small sample counts (`SMALL`).
- Get a session from `new_session` (a copy of a template made once per worker) instead of
  running `gamegym new` again; run commands with `gamegym(...)`.
- Every subprocess imports this checkout's code (PYTHONPATH is set below), not an installed
  copy, and sees no TensorFlow logging settings of ours: what it prints is what a user sees.
- Warnings raised from gamegym's own code are errors (pyproject.toml, filterwarnings).
"""

from __future__ import annotations

import compileall
import fcntl
import json
import multiprocessing
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TICTACTOE = "games.tictactoe:TicTacToe"

# subprocesses (scripts, `python -m gamegym`) import the code under test, wherever they run
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
)

# the consents to import a session folder's modules (gamegym.data.trust) that the suite's
# sessions record go to a folder of this run (made by the controller, shared by the workers
# and every process they start), never to the user's own
if not os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["GAMEGYM_TRUST_DIR"] = tempfile.mkdtemp(prefix="gamegym-trust-")

# the settings of a small tic-tac-toe session that trains an iteration within seconds (its
# Selfplayer waits for each new model after 100 positions, leaving the cores to the Trainer).
# Its search runs on the Python core: a test's Selfplayer lives seconds, and loading numba and
# the compiled core (about 0.5 CPU-s a process) would be much of its work; the compiled core,
# the default, plays the same games (tests/search/test_compiled_core.py) and runs in a real
# session in tests/runtime/test_gym_e2e.py.
SMALL = {
    "network": {"kind": "dense", "width": 16, "blocks": 1},
    "selfplay": {
        "selfplayprocesses": 1,
        "search": {"core": "python", "threads": 4, "searchcount": 16},
        "gamelog_dump_threshold": 5,
        "positions_per_iteration": 100,
    },
    "train": {"min_samplecount": 60, "min_new_samples": 60, "epochs": 1, "batchsize": 32},
    "status_interval": 2.0,
}


def pytest_configure(config):
    """Where the machine turns bytecode caching off (PYTHONDONTWRITEBYTECODE, as some images
    do), every process of the suite -- each worker, and each gym, Trainer, Selfplayer and
    command a test starts -- would compile the package from source again.  Python still reads
    bytecode it finds, so the controller compiles the package and the bundled games once,
    before the workers start, into their usual `__pycache__` folders (which git ignores)."""
    if sys.flags.dont_write_bytecode and not hasattr(config, "workerinput"):
        for package in ("gamegym", "games"):
            compileall.compile_dir(ROOT / package, quiet=1)


# tic-tac-toe boards (cells row by row; 1 the player to move, -1 the opponent)
WIN_IN_ONE = (1, 1, 0, -1, -1, 0, 0, 0, 0)  # cell 2 wins at once (cell 5 would only block)
MUST_BLOCK = (-1, -1, 0, 1, 0, 0, 0, 0, 0)  # the opponent threatens cell 2


def user_env() -> dict:
    """The environment of a user who never heard of TF_CPP_MIN_LOG_LEVEL."""
    return {k: v for k, v in os.environ.items() if not k.startswith("TF_")}


# what TensorFlow, CUDA, XLA, oneDNN and absl print at start-up on a machine without a GPU
NOISE = re.compile(
    r"tensorflow|absl|cuda|cuInit|cudart|oneDNN|XLA|cpu_feature_guard|"
    r"^[IWE]\d{4} |StreamExecutor|TF_ENABLE",
    re.IGNORECASE | re.MULTILINE,
)


def assert_quiet_start(done: subprocess.CompletedProcess, session: Path) -> None:
    """A gym run (`gamegym resume` in `user_env()`) printed no TensorFlow, CUDA or absl line,
    and only its Trainer imported TensorFlow: the gym's own process, the Selfplayer and the
    Predictor on the CPU fast path (it reads the models' fast-path files) did not.  TensorFlow's
    start-up text is kept, in the Trainer's log, at INFO."""
    assert done.stderr == "", done.stderr
    assert not NOISE.search(done.stdout), done.stdout
    logs = {
        role: (session / "logs" / f"{role}.log").read_text()
        for role in ("gym", "selfplayer0", "predictor", "trainer")
    }
    for role in ("gym", "selfplayer0", "predictor"):
        assert f"{role} exiting (TensorFlow not imported)" in logs[role], logs[role][-2000:]
    assert "trainer exiting (TensorFlow imported)" in logs["trainer"]
    assert re.search(
        r"INFO \w+\[\d+\] gamegym\.tensorflow: .*(oneDNN|cuda|TensorFlow)", logs["trainer"]
    ), logs["trainer"][-2000:]


def read_scalars(folder) -> dict:
    """{tag: [(step, value), ...]} of every event file in `folder` (one run), as TensorBoard
    reads them."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    board = EventAccumulator(str(folder))
    board.Reload()
    return {
        tag: [(e.step, pytest.approx(e.value)) for e in board.Scalars(tag)]
        for tag in board.Tags()["scalars"]
    }


def batchnorm_as_trained(layer, rng) -> bool:
    """Give a BatchNormalization layer statistics and scales away from their initial 1 and 0,
    as after training (so a fast path's folding of them is put to the test); False for any
    other layer."""
    if type(layer).__name__ != "BatchNormalization":
        return False
    c = layer.gamma.shape[0]
    layer.set_weights(
        [
            rng.uniform(0.5, 1.5, c),
            rng.normal(0, 0.3, c),
            rng.normal(0, 0.5, c),
            rng.uniform(0.2, 2.0, c),
        ]
    )
    return True


def gamegym_command(*args) -> list[str]:
    """The command line `python -m gamegym ARGS` (for a process the test watches itself)."""
    return [sys.executable, "-m", "gamegym", *map(str, args)]


def gamegym(
    *args, timeout: float = 240, input: str | None = None, env: dict | None = None, **kwargs
) -> subprocess.CompletedProcess:
    """Run `python -m gamegym ARGS` (this checkout's code) and capture its output."""
    return subprocess.run(
        gamegym_command(*args),
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        env=env,
        **kwargs,
    )


def finish(process: subprocess.Popen) -> None:
    """Kill `process` if it still runs, reap it, and close its pipes (an unclosed pipe is a
    ResourceWarning whenever the garbage collector gets to it, in whatever test runs then)."""
    if process.poll() is None:
        process.kill()
    process.wait()
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()


def publish_as_trained(session, model, iteration: int, learner: str = "alphazero") -> None:
    """Publish `model` as iteration `iteration` with its fast-path file, as a Trainer does (the
    processes that load it then need no TensorFlow; tests/nets/test_fastpath.py covers a model
    published without one)."""
    from gamegym.learners import get_learner
    from gamegym.nets.fastmodels import fast_model_bytes

    fast_form = fast_model_bytes(get_learner(learner), model)
    assert fast_form is not None, f"{learner} has no fast form for this model"
    session.publish_model(model, iteration, fast_form=fast_form)


def assert_state_matches_the_files(session: Path, iteration: int) -> dict:
    """replay/<iteration>.npz exists and every file it lists is on disk with its rows."""
    from gamegym.data.replaybuffer import read_state
    from gamegym.data.samples import read_sample_file

    state = read_state((session / "replay" / f"{iteration}.npz").read_bytes())
    assert state["keys"] and len(state["count"]) == sum(r[3] - r[2] for r in state["rows"])
    for key, (_, file_rows, _, _) in zip(state["keys"], state["rows"]):
        assert len(read_sample_file(session / "samples" / key)["z"]) == file_rows
    return state


def assert_curious_replay_trained(session: Path, iteration: int, learner: str) -> None:
    """`learner` trained `iteration` with curious replay: the replay state matches the files,
    only drawn samples were replayed, and those got a priority from their own loss."""
    state = assert_state_matches_the_files(session, iteration)
    drawn = state["count"] > 0
    assert drawn.any()
    assert (state["priority"][~drawn] == 1e5).all()  # never drawn: priority_max
    assert (state["priority"][drawn] < 1e5).all()
    report = json.loads((session / "train" / f"{iteration}.json").read_text())
    assert (report["learner"], report["replay"]) == (learner, "curious")


def random_vertices(graph, rng, games: int):
    """The positions (not over) of `games` uniformly random games, one after the other."""
    for _ in range(games):
        vertex = graph.roots[0]
        while graph.children_at(vertex):
            yield vertex
            children = graph.children_at(vertex)
            vertex = children[rng.integers(len(children))]


def random_game(graph, rng, heads: int | None = None):
    """One uniformly random game as self-play samples (pi one-hot on the move played, the result
    from the first mover's view); with `heads`, the bootstrapped learner's own columns too
    (a Bernoulli(0.7) mask over the heads, head 0, terminal on the last move)."""
    import numpy as np

    from gamegym.data.samples import GameRecord

    extra: dict = {"mask": [], "head": [], "terminal": []} if heads else {}
    record, vertex = GameRecord(extra=extra), graph.roots[0]
    while graph.children_at(vertex):
        actions = graph.actions_at(vertex)
        index = int(rng.integers(len(actions)))
        pi = np.zeros(graph.action_space_size, np.float32)
        pi[actions[index]] = 1.0
        record.x.append(graph.numpify(vertex))
        record.pi.append(pi)
        record.action.append(actions[index])
        record.root_value.append(0.0)
        record.legal.append(graph.legal_mask(vertex))
        if extra:
            extra["mask"].append(rng.random(heads) < 0.7)
            extra["head"].append(np.int16(0))
            extra["terminal"].append(False)
        vertex = graph.children_at(vertex)[index]
    if extra:
        extra["terminal"][-1] = True
    # the player to move at the end lost (or drew); seen from the first mover:
    record.result = graph.score_at(vertex) * (1 if len(record) % 2 == 0 else -1)
    return record


def merged(base: dict, changes: dict) -> dict:
    """`base` with `changes` merged in, section by section (nested sections too), as
    `GymConfig.updated` merges them."""
    from gamegym.config import merged_settings

    return merged_settings(base, changes)


@pytest.fixture(scope="session")
def session_template(tmp_path_factory) -> Path:
    """A new tic-tac-toe session with SMALL's settings, made once per worker as `gamegym new`
    makes it (`create_session`: its first model is made in the worker, which imports
    TensorFlow once for every test it runs)."""
    return create_session(tmp_path_factory.mktemp("template") / "ttt", TICTACTOE, SMALL)


@pytest.fixture
def new_session(session_template, tmp_path):
    """Make a new tic-tac-toe session (as `gamegym new` would) at tmp_path/NAME, with SMALL's
    settings changed by `changes` (any field but the network), by copying the template."""

    def make(name: str = "ttt", changes: dict | None = None) -> Path:
        path = tmp_path / name
        shutil.copytree(session_template, path)
        config = json.loads((path / "config.json").read_text())
        changes = dict(changes or {})
        if "network" in changes:
            raise ValueError(
                "the template's network is fixed; make a session with `gamegym new` for another one"
            )
        (path / "config.json").write_text(json.dumps(merged(config, changes), indent=2))
        return path

    return make


@pytest.fixture
def two_iterations(tmp_path):
    """A tic-tac-toe gym whose session has iterations 0 and 1 (the same network published
    twice, each with its fast-path file, as a Trainer publishes it: the commands that play it
    need no TensorFlow) and an `evaluate` section of four opponents, made in this process
    (TensorFlow imported first: its first model is not made in a child)."""
    import tensorflow  # noqa: F401

    from gamegym.config import GymConfig
    from gamegym.nets.tfsetup import load_model
    from gamegym.runtime.gym import GameGym

    config = GymConfig(
        game=TICTACTOE,
        evaluate={
            "games": 4,
            "search": {"searchcount": 8},
            "opponents": ["random", "alphabeta:1", "previous", "mcts:20"],
        },
    )
    gym = GameGym(tmp_path / "s", config=config)
    publish_as_trained(gym.session, load_model(gym.session.model_path(0)), 1)
    return gym


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: two workers more than this process may use cores.  The end-to-end tests spend
    part of their time waiting on processes, timers and signals; the extra workers fill those
    waits (quiet runs on 2 cores: the whole suite in 231 s and 238 s with 4 workers, 241 s with
    3, 281 s with 5; the same machine's runs spread by up to a quarter between hours).  Without
    the slow tests (`-m "not slow"`) nothing waits, and each worker's start (its collection,
    TensorFlow's import) is a cost the extra workers only add: one worker a core."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if "not slow" in (config.getoption("markexpr", "") or ""):
        return cores or 1
    return (cores or 1) + 2


# seconds each long test took (setup, call and teardown) in a whole run of the suite on 2 cores;
# `GAMEGYM_STORE_DURATIONS=1 python -m pytest` rewrites it at the end of a run with no failure,
# keeping the lines of the tests that run skipped (a machine without Chromium skips the browser's)
DURATIONS = Path(__file__).with_name("durations.json")
STORED_FROM = 1.0  # tests faster than this are not worth a line of the file
UNKNOWN_SLOW = 5.0  # the guess for a slow test the file does not have yet
UNKNOWN_QUICK = 0.05


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected: the shares are of what runs
def pytest_collection_modifyitems(config, items):
    """The order the workers take the tests in: the long tests dealt out first.

    pytest-xdist's `worksteal` gives each of k workers one contiguous k-th of this order and
    lets an idle worker take the tail of the busiest one's queue.  So the slow tests are dealt
    to the k shares longest first, each to the share with the least work so far (by
    `durations.json`), and each share starts with its own: the long tests run side by side from
    the start and none is left for last, where the suite would wait on it alone."""
    weights = _durations()
    worker = getattr(config, "workerinput", None)
    items[:] = dealt(items, weights, int(worker["workercount"]) if worker else 1)


def _durations() -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(DURATIONS.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def dealt(items: list, weights: dict[str, float], shares: int) -> list:
    """`items` in the order described in `pytest_collection_modifyitems`: `shares` runs of
    the sizes worksteal cuts (n // k, then the rest // (k - 1), ...), each its slow tests
    longest first and then quick ones, the longest of those first too."""

    def slow(item) -> bool:
        return item.get_closest_marker("slow") is not None

    def weight(item) -> float:
        return weights.get(item.nodeid, UNKNOWN_SLOW if slow(item) else UNKNOWN_QUICK)

    sizes, left = [], len(items)
    for share in range(shares):
        sizes.append(left // (shares - share))
        left -= sizes[-1]
    piles: list[list] = [[] for _ in range(shares)]
    loads = [0.0] * shares
    for item in sorted(items, key=lambda i: (not slow(i), -weight(i))):
        open_piles = [p for p in range(shares) if len(piles[p]) < sizes[p]]
        pile = min(open_piles, key=lambda p: loads[p])
        piles[pile].append(item)
        loads[pile] += weight(item)
    return [item for pile in piles for item in pile]


_measured: dict[str, float] = {}
_skipped: set[str] = set()


def pytest_runtest_logreport(report):
    if os.environ.get("GAMEGYM_STORE_DURATIONS"):
        _measured[report.nodeid] = _measured.get(report.nodeid, 0.0) + report.duration
        if report.skipped:
            _skipped.add(report.nodeid)
    for key, value in report.user_properties:
        if key == "cpu_s":
            _cpu_by_test[report.nodeid] = _cpu_by_test.get(report.nodeid, 0.0) + value


def pytest_sessionfinish(session, exitstatus):
    if (
        os.environ.get("GAMEGYM_STORE_DURATIONS")
        and not hasattr(session.config, "workerinput")  # the controller, which hears every test
        and exitstatus == 0
        and _measured
    ):
        DURATIONS.write_text(
            json.dumps(stored_durations(_durations(), _measured, _skipped), indent=1) + "\n"
        )


def stored_durations(
    old: dict[str, float], measured: dict[str, float], skipped: set[str]
) -> dict[str, float]:
    """The new `durations.json`: the tests that ran and took `STORED_FROM` seconds or more, and
    the old line of each test this run skipped; the longest first."""
    kept = {k: v for k, v in old.items() if k in skipped}
    ran = {k: round(v, 1) for k, v in measured.items() if v >= STORED_FROM and k not in skipped}
    return dict(sorted({**kept, **ran}.items(), key=lambda kv: (-kv[1], kv[0])))


# `GAMEGYM_CPU_REPORT=N python -m pytest`: after the run, the N tests that used the most CPU
# (their own and that of the processes they started and waited for) and the suite's total
CPU_KEY = pytest.StashKey[float]()
_cpu_by_test: dict[str, float] = {}


def _cpu_seconds() -> float:
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    item.stash[CPU_KEY] = _cpu_seconds()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Each phase's report (setup, call, teardown) carries the CPU seconds it used, so the
    controller hears them from every worker."""
    outcome = yield
    now = _cpu_seconds()
    outcome.get_result().user_properties.append(("cpu_s", now - item.stash.get(CPU_KEY, now)))
    item.stash[CPU_KEY] = now


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    shown = int(os.environ.get("GAMEGYM_CPU_REPORT") or 0)
    if shown <= 0 or not _cpu_by_test:
        return
    write = terminalreporter.write_line
    ranked = sorted(_cpu_by_test.items(), key=lambda kv: -kv[1])
    write(f"CPU of the tests and their processes: {sum(_cpu_by_test.values()):.1f} s in all")
    for nodeid, seconds in ranked[:shown]:
        write(f"{seconds:8.1f} s  {nodeid}")


@pytest.fixture(autouse=True)
def slow_if_it_starts_processes(request, monkeypatch):
    """The marker convention, enforced: a test not marked `slow` that starts a process (a
    multiprocessing child, or a `python` or `gamegym` command) fails and says so, so the quick
    run stays quick and holds no real process."""
    if request.node.get_closest_marker("slow") is not None:
        return
    import multiprocessing.process

    def refuse(what: str):
        raise AssertionError(
            f"{request.node.nodeid} starts {what}: mark it @pytest.mark.slow (tests/README.md)"
        )

    def start(process):
        refuse(f"a process ({process.name})")

    popen_init = subprocess.Popen.__init__

    def init(popen, args, *more, **options):
        words = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
        program = Path(os.fsdecode(words[0])).name if words else ""
        if program.startswith("python") or program == "gamegym" or str(words[0]) == sys.executable:
            refuse(f"the command {program}")
        popen_init(popen, args, *more, **options)

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", start)
    monkeypatch.setattr(subprocess.Popen, "__init__", init)


@pytest.fixture(autouse=True)
def games_built_anew():
    """No test sees the graphs another built: the ones this process keeps by reference
    (gamegym.game.ref.GameRef.build) are forgotten after each test."""
    yield
    from gamegym.game.ref import forget_built

    forget_built()


@pytest.fixture
def builds(monkeypatch):
    """What this process builds while a test runs: "game" (a TicTacToe GameGraph) and
    "config" (a GymConfig), each a list with one entry per build: the names of the functions
    that led to it, innermost first ("build_game < build < run_learning_bench < ...").  The
    graphs this process built before (gamegym.game.ref keeps them) are forgotten first."""
    import traceback

    from gamegym.config import GymConfig
    from gamegym.game.ref import forget_built
    from games.tictactoe import TicTacToe

    forget_built()
    made: dict[str, list] = {"game": [], "config": []}

    def callers(_kwargs) -> str:  # (the frames of callers and record_calls' wrapper left out)
        return " < ".join(frame.name for frame in traceback.extract_stack(limit=9)[-3::-1])

    record_calls(monkeypatch, TicTacToe, "__init__", made["game"], callers)
    record_calls(monkeypatch, GymConfig, "__post_init__", made["config"], callers)
    return made


@pytest.fixture
def connectfour_builds(monkeypatch):
    """The arguments of every ConnectFour built in this process while the test runs (the
    graphs this process built before are forgotten first)."""
    from gamegym.game.ref import forget_built
    from games.connectfour import ConnectFour

    forget_built()
    built: list[dict] = []
    record_calls(monkeypatch, ConnectFour, "__init__", built, dict)
    return built


def record_calls(monkeypatch, cls, method: str, entries: list, entry) -> None:
    """Patch `cls.method` to append `entry(kwargs)` to `entries` at each call, then call it
    (its signature kept: a graph records its arguments by it)."""
    import functools

    original = getattr(cls, method)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        entries.append(entry(kwargs))
        return original(*args, **kwargs)

    monkeypatch.setattr(cls, method, wrapper)


@pytest.fixture
def drawn_bars(monkeypatch):
    """The progress bars a command makes in this process, drawn as on a terminal into a
    buffer (a StringIO: its text is every frame drawn)."""
    import io

    from gamegym.console import ProgressBars

    out = io.StringIO()
    init = ProgressBars.__init__

    def drawn(self, enabled=None, file=None, redirect_stderr=False):
        init(self, enabled=True, file=out, redirect_stderr=redirect_stderr)

    monkeypatch.setattr(ProgressBars, "__init__", drawn)
    return out


def built_once(tmp_path_factory, name: str, build) -> Path:
    """The folder NAME, made by `build(path)` once for the whole run of the suite: by the
    first worker that asks, while the others wait for it (a file lock), instead of once per
    worker.  The tests that use it only read it, or copy it to change it."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's folder, which every worker's folder is in
    folder = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not folder.is_dir():
            building = root / f"{name}.building"
            shutil.rmtree(building, ignore_errors=True)  # a worker that failed to build it
            build(building)
            building.rename(folder)
    return folder


def create_session(
    path: Path,
    game: str,
    settings: dict,
    game_args: dict | None = None,
    initial_model: Path | None = None,
) -> Path:
    """A new session at `path`, as `gamegym new PATH --game GAME --game-args ARGS --config
    SETTINGS [--initial-model FILE]` makes it, made in this process: with TensorFlow imported
    here (once per worker) its first model is published here, not in a `gamegym new` child that
    imports TensorFlow anew."""
    import tensorflow  # noqa: F401

    from gamegym.config import GymConfig
    from gamegym.game.ref import GameRef
    from gamegym.runtime.gym import GameGym

    game_args = GameRef(game, game_args).complete().args  # as `gamegym new` stores them
    config = GymConfig.from_dict({**settings, "game": game, "game_args": game_args})
    GameGym(path, config=config, initial_model=initial_model)
    return path


SPAWN = multiprocessing.get_context("spawn")


def start_predictor(session, config, client_ends):
    """A real Predictor process serving `client_ends`: (process, the control pipe's sending
    end, its stop flag)."""
    from gamegym.runtime.predictor import predictor_main
    from gamegym.runtime.stopflag import StopFlag

    control_in, control_out = SPAWN.Pipe(duplex=False)
    stop = StopFlag(SPAWN)
    process = SPAWN.Process(
        target=predictor_main,
        args=(
            session.logs_dir,
            "INFO",
            "predictor",
            str(session.path),
            config,
            list(client_ends),
            control_in,
        ),
        kwargs={"stop_event": stop},
    )
    process.start()
    control_in.close()
    return process, control_out, stop


def stop_predictor(process, stop, client_ends, timeout: float = 10.0):
    """Stop a Predictor from `start_predictor` as the gym does: the stop, then its clients leave
    (it serves until they have), then a join (a kill after `timeout` s); its exit code."""
    stop.set()
    for end in client_ends:
        end.close()
    process.join(timeout)
    if process.is_alive():
        process.kill()
        process.join()
    return process.exitcode
