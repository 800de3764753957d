"""The Ray backend with real Ray: a two-node `ray.cluster_utils.Cluster` on this machine, a node
removed mid-run, `exit`, SIGTERM of a gym that started its own Ray.  Skipped without Ray
(`pip install -e ".[ray]"`; CI installs it)."""

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from conftest import create_session, finish, gamegym_command

from gamegym.data.samples import read_sample_file

pytestmark = pytest.mark.slow

# every Ray here listens on 127.0.0.1 only, without a token (set before ray is imported)
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
ray = pytest.importorskip("ray", reason='ray is not installed: pip install -e ".[ray]"')

SMALL = {
    "selfplay": {
        "selfplayprocesses": 1,
        "search": {"threads": 4, "searchcount": 16},
        "gamelog_dump_threshold": 3,
        "positions_per_iteration": 100,
        "ray_selfplayer_cpus": 0.5,
        "ray_predictor_cpus": 0.5,
    },
    "train": {"min_samplecount": 60, "min_new_samples": 60, "epochs": 1, "batchsize": 32},
    "status_interval": 1.0,
}
ACTORS = ("ray::SelfplayerActor", "ray::PredictorActor")
MARK = "GAMEGYM_TEST_CLUSTER"  # the environment variable that tells one test's cluster apart


@pytest.fixture(scope="module")
def new_session(tmp_path_factory):
    """One new session for the module, made in this worker; each test copies it."""
    return create_session(
        tmp_path_factory.mktemp("ray") / "ttt", "games.tictactoe:TicTacToe", SMALL
    )


@pytest.fixture
def session(new_session, tmp_path):
    return Path(shutil.copytree(new_session, tmp_path / "ttt"))


@pytest.fixture
def cluster(monkeypatch):
    """Two nodes of one CPU each on this machine; whatever Ray process they started is gone
    afterwards (the agents of a removed node outlive it by a minute otherwise). Its processes
    carry `cluster.mark` in their environment: another test's Ray, in another worker, may run
    beside it."""
    from ray.cluster_utils import Cluster

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    mark = f"{os.getpid()}-{time.monotonic_ns()}"
    monkeypatch.setenv(MARK, mark)
    node = {"num_cpus": 1, "object_store_memory": 80 * 2**20}
    # not what ran before, e.g. this worker's multiprocessing resource tracker (killed, the next
    # spawn in this worker warns that it died)
    before = set(psutil.Process().children(recursive=True))
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    cluster.worker = cluster.add_node(**node)
    cluster.mark = mark
    started = [
        (p, p.create_time()) for p in psutil.Process().children(recursive=True) if p not in before
    ]
    yield cluster
    cluster.shutdown()
    for process, created in started:
        try:
            if process.create_time() == created:
                process.kill()
        except psutil.Error:
            pass


def start_gym(session, *args, env=None):
    return subprocess.Popen(
        gamegym_command("resume", str(session), *args),
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def read_until(gym, pattern, lines, timeout=150):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = gym.stdout.readline()
        if not line:
            break
        lines.append(line)
        found = re.search(pattern, line)
        if found:
            return found
    raise AssertionError(f"never saw {pattern!r}:\n" + "".join(lines))


def actor_processes(mark):
    """The gym's actors alive on the cluster whose processes carry `mark` (not another test's)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if any(a in " ".join(process.info["cmdline"] or ()) for a in ACTORS):
            try:
                if process.environ().get(MARK) == mark:
                    found.append(process)
            except psutil.Error:  # gone meanwhile
                pass
    return found


def writers(session) -> set[str]:
    """The Selfplayer slots whose sample files are in the session."""
    files = (session / "samples").glob("*/*.npz")
    return {f.name.split("-")[0] for f in files if not f.name.startswith(".")}


def test_two_nodes_a_killed_actor_a_node_lost_mid_run_and_exit(session, cluster):
    # a bound for a test gone wrong, far above the iteration the test waits for (the node goes
    # at iteration 1 on a quiet machine, later under load): a stop at the bound would race
    # the `exit` typed below
    gym = start_gym(session, "--ray", cluster.address, "--max-iterations", "40")
    lines = []
    try:
        read_until(gym, r"ray 2 nodes, selfplayers 2/2, searches/s by node \S+ \d+ \S+ \d+", lines)
        ours = psutil.Process().children(recursive=True)  # the cluster's processes
        killed = [
            p
            for p in actor_processes(cluster.mark)
            if p in ours and "SelfplayerActor" in " ".join(p.cmdline())
        ]
        killed[0].kill()  # a killed worker process: restarted on its node
        read_until(gym, r"selfplayer\d on node \S+ died \(.*\); restarting it", lines)
        read_until(gym, r"ray 2 nodes, selfplayers 2/2", lines)
        deadline = time.monotonic() + 150
        while writers(session) != {"selfplayer0", "selfplayer1"}:  # each node's first file
            assert time.monotonic() < deadline, f"only {writers(session)} wrote sample files"
            read_until(gym, r"\| games ", lines)  # the next status line: the pipe flows
        lost_at = int(read_until(gym, r"\bit (\d+) \| games", lines).group(1))
        assert lost_at < 30, "".join(lines)
        cluster.remove_node(cluster.worker)
        read_until(gym, r"node \S+ left the cluster: its 1 Selfplayers", lines)
        read_until(gym, r"ray 1 node, selfplayers 1/1", lines)
        read_until(gym, rf"it ({lost_at + 2}|{lost_at + 3}) ", lines)  # training goes on
        gym.stdin.write("exit\n")
        gym.stdin.flush()
        assert gym.wait(timeout=60) == 0, "".join(lines) + gym.stdout.read()
    finally:
        if gym.poll() is None:
            gym.kill()
    output = "".join(lines) + gym.stdout.read()
    finish(gym)
    assert "stopping: 'exit' typed" in output, output
    deadline = time.monotonic() + 15
    while actor_processes(cluster.mark) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not actor_processes(cluster.mark), "an actor outlived the gym"
    assert cluster.head_node.remaining_processes_alive()  # a joined cluster is left running
    # every sample file is whole and in the folder of the iteration that played it; both
    # nodes' Selfplayers wrote some; the Trainer read them
    files = sorted((session / "samples").glob("*/*.npz"))
    assert {f.name.split("-")[0] for f in files} == {"selfplayer0", "selfplayer1"}
    final = json.loads((session / "models" / "current.json").read_text())["iteration"]
    assert final >= lost_at + 2
    assert {int(f.parent.name) for f in files} >= {0, 1}
    assert all(int(f.parent.name) <= final for f in files)
    for path in files:
        assert len(read_sample_file(path)["z"]) > 0
    assert not list(session.rglob(".*.tmp*"))
    for it in range(1, final + 1):
        report = json.loads((session / "train" / f"{it}.json").read_text())
        assert all((session / "samples" / name).is_file() for name in report["sources"])
    for name in ("selfplayer0", "selfplayer1"):
        log = (session / "logs" / f"{name}.log").read_text()
        assert f"{name} starting" in log and "Traceback" not in log
    status = subprocess.run(
        gamegym_command("status", str(session), "--json"), capture_output=True, text=True
    )
    assert json.loads(status.stdout)["backend"]["name"] == "ray"


def running(processes, word: str) -> list:
    """The processes whose command line holds `word` (those gone meanwhile left out)."""
    found = []
    for process in processes:
        try:
            if word in " ".join(process.cmdline()):
                found.append(process)
        except psutil.Error:
            pass
    return found


def listening_addresses(processes) -> list[tuple[str, str]]:
    """(process name, address) of every socket the processes listen on."""
    found = []
    for process in processes:
        try:
            for connection in process.net_connections(kind="inet"):
                if connection.status == psutil.CONN_LISTEN:
                    found.append((process.name(), connection.laddr.ip))
        except psutil.Error:
            continue  # gone meanwhile
    return found


def test_a_stopped_actor_and_a_killed_predictor_come_back_and_sigterm_stops_the_gym_and_its_ray(
    session,
):
    """On a Ray the gym starts itself: a Selfplayer actor stopped by SIGSTOP is named, killed
    and restarted; a Predictor actor killed by SIGKILL is restarted, and its Selfplayer, not
    killed, hands over the games it finished and starts again on the new one (as with Predictor
    processes); then SIGTERM stops the gym, and every process it started (Ray's too) is
    gone within seconds. It starts its own Ray even where RAY_ADDRESS (or the last Ray started
    on this machine, such as another test's cluster) names another."""
    config = json.loads((session / "config.json").read_text())
    config["heartbeat_timeout"] = 5.0
    (session / "config.json").write_text(json.dumps(config))
    elsewhere = {**os.environ, "RAY_ADDRESS": "127.0.0.1:9"}  # nothing answers there
    gym = start_gym(session, "--ray", "--max-iterations", "50", env=elsewhere)
    lines: list[str] = []
    try:
        read_until(gym, r"ray 1 node, selfplayers 1/1", lines)
        started = psutil.Process(gym.pid).children(recursive=True)
        assert any("raylet" in " ".join(p.cmdline()) for p in started)
        listening = listening_addresses(started)  # Ray's servers, on this machine's loopback
        loopback = ("127.0.0.1", "::1", "::ffff:127.0.0.1")  # (the last: IPv4 on an IPv6 socket)
        assert listening and all(ip in loopback for _, ip in listening), listening
        [stopped] = [p for p in started if "SelfplayerActor" in " ".join(p.cmdline())]
        stopped.send_signal(signal.SIGSTOP)  # alive, and answering nothing
        read_until(gym, r"selfplayer0 on node \S+ is not responding \(no answer for \d+ s", lines)
        read_until(gym, r"selfplayer0 on node \S+ died \(.*\); restarting it", lines)
        restarted = read_until(gym, r"\| games (\d+) .*ray 1 node, selfplayers 1/1", lines)
        assert psutil.wait_procs([stopped], timeout=30)[0], "the stopped actor was not killed"
        games, deadline = int(restarted.group(1)), time.monotonic() + 120
        while int(read_until(gym, r"\| games (\d+) ", lines).group(1)) <= games:
            assert time.monotonic() < deadline, "".join(lines)  # until the new Selfplayer
            # hands in games: past its start (its first search compiles for seconds, touching
            # no connection), it finds its Predictor gone at its next request
        started += psutil.Process(gym.pid).children(recursive=True)  # and its replacement
        [predictor] = running(psutil.Process(gym.pid).children(recursive=True), "PredictorActor")
        predictor.kill()
        read_until(
            gym, r"the Predictor on node \S+ died \(.*\); restarting it and its Selfplayers", lines
        )
        selfplayer_log = session / "logs" / "selfplayer0.log"
        deadline = time.monotonic() + 120
        while selfplayer_log.read_text().count("selfplayer0 starting") < 3:  # then after each
            assert time.monotonic() < deadline, "".join(lines)  # restart: the stop, the kill
            read_until(gym, r"\| games ", lines)  # the next status line
        text = selfplayer_log.read_text()
        assert "the Predictor is gone; the games finished are handed over" in text
        started += psutil.Process(gym.pid).children(recursive=True)  # the new actors
        gym.send_signal(signal.SIGTERM)
        assert gym.wait(timeout=60) == 0, "".join(lines) + gym.stdout.read()
    finally:
        finish(gym)
    _, alive = psutil.wait_procs(set(started), timeout=10)
    assert not alive, f"outlived the gym: {[p.cmdline()[:2] for p in alive]}"
    log = (session / "logs" / "gym.log").read_text()
    assert "stopped or hung); killing it" in log and "ray shut down" in log
    assert not (session / "session.lock").exists()


def test_a_node_predictor_answers_from_the_broadcast_fast_form_without_tensorflow(
    new_session, monkeypatch
):
    """The Predictor actor gets the model and its fast-path file as one broadcast object (its
    node shares no folder with the session), answers from the fast form what that form
    answers here, and its process never imports TensorFlow (nor converts the model). Ray's
    figures are asked of the Ray this process is connected to, even where RAY_ADDRESS names
    another."""
    from multiprocessing.connection import Client

    from gamegym.data.session import Session
    from gamegym.learners import get_learner
    from gamegym.nets.fastmodels import cpu_fast_path, load_fast_model
    from gamegym.runtime.pipes import PipeService
    from gamegym.runtime.ray.actors import ModelFiles, PredictorActor
    from gamegym.runtime.ray.cluster import PLACING, actor_state, object_store_use
    from games.tictactoe import TicTacToe

    session = Session(new_session)
    config = session.load_config()
    assert cpu_fast_path(config.predict)
    files = ModelFiles(session.model_path(0).read_bytes(), session.fast_model_path(0).read_bytes())
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:9")  # nothing answers there
    ray.init(  # its own Ray, not one another test started on this machine
        address="local", num_cpus=1, include_dashboard=False, object_store_memory=80 * 2**20
    )
    try:
        key = os.urandom(32)
        actor = ray.remote(PredictorActor).options(max_concurrency=4).remote("p", config, key)
        ray.get(actor.publish.remote(0, ray.put(files)))
        service = PipeService(Client(ray.get(actor.address.remote()), authkey=key))
        graph = TicTacToe()
        x = np.stack(
            [graph.numpify(v) for v in [graph.roots[0], *graph.children_at(graph.roots[0])]]
        )
        outputs, iteration = service.submit("evaluate", {"x": x})()
        answer = ray.get(actor.take.remote())
        placed = actor_state(actor)  # Ray's own word, which the gym's liveness asks for
        nowhere = ray.remote(PredictorActor).options(resources={"no-such-node": 1})
        unplaced = nowhere.remote("q", config, key)
        time.sleep(0.5)
        waiting = actor_state(unplaced)
        service.conn.close()  # the client leaves first, as the gym's Selfplayers do
        logs = "\n".join(answer["logs"] + ray.get(actor.stop.remote()))
        store = object_store_use()  # of the Ray connected to, not of RAY_ADDRESS's
    finally:
        ray.shutdown()
    reference = load_fast_model(get_learner(config.train.learner), session.model_path(0), 0)
    expected = reference.run("evaluate", {"x": x})
    assert iteration == 0 and set(outputs) == set(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(outputs[name], value, rtol=1e-5, atol=1e-6)
    assert placed == "ALIVE" and waiting in PLACING
    assert store is not None and store["used_mib"] >= 0
    assert answer["tensorflow"] is False, logs
    assert "loaded model iteration 0" in logs and "(tensorflow)" not in logs, logs
    assert "converted" not in logs, logs  # the fast form came with the model
