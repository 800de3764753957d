"""The Ray backend's decisions, checked exactly and fast against a stand-in for Ray (no Ray
needed): nodes filled as their CPUs allow, one object put per model iteration, sample files
written by the gym, restarts, lost nodes, the stop; and the actors' relay and the clear error
without Ray.  tests/test_ray.py runs the real thing."""

import io
import json
import sys
import threading
import time
import types
from types import SimpleNamespace

import numpy as np
import pytest

from gamegym.config import ConfigError, GymConfig
from gamegym.data.samples import GameRecord, encode_sample_file, read_sample_file
from gamegym.data.session import Session
from gamegym.runtime.messages import Reload, Report
from gamegym.runtime.monitor import Monitor, backend_summary


class Ref:
    """An ObjectRef: ready with a value or an error, or pending."""

    def __init__(self, value=None, error=None, ready=True):
        self.value, self.error, self.ready = value, error, ready

    def answer(self, value=None, error=None):
        self.value, self.error, self.ready = value, error, True


class RayError(Exception):
    pass


class Actor:
    def __init__(self, cls, args, options):
        self.kind, self.args, self.options = cls.__name__, args, options
        self.node = options["scheduling_strategy"].node_id
        self.calls: list = []
        self.killed = False

    def __getattr__(self, method):
        def remote(*args):
            self.calls.append((method, args))
            if method == "take":  # answered by the test
                ref = Ref(ready=False)
                self.takes.append(ref)
                return ref
            return Ref(
                {"address": f"socket-{self.node}", "publish": args[:1], "stop": []}.get(method)
            )

        if method.startswith("_"):
            raise AttributeError(method)
        return SimpleNamespace(remote=remote)


class FakeRay(types.ModuleType):
    """What the backend uses of ray, recording it."""

    def __init__(self):
        super().__init__("ray")
        self.__version__ = "fake"
        self.exceptions = SimpleNamespace(RayError=RayError)
        self.node_list = [
            {
                "NodeID": "head0000",
                "Alive": True,
                "NodeManagerAddress": "10.0.0.1",
                "Resources": {"CPU": 2.0},
            }
        ]
        self.actors: list[Actor] = []
        self.puts: list = []
        self.shut_down = False

    def init(self, **kwargs):
        self.init_kwargs = kwargs

    def is_initialized(self):
        return hasattr(self, "init_kwargs") and not self.shut_down

    def nodes(self):
        return self.node_list

    def cluster_resources(self):
        return {}

    def get_runtime_context(self):
        return SimpleNamespace(get_node_id=lambda: "head0000")

    def put(self, data):
        self.puts.append(data)
        return Ref(data)

    def remote(self, cls):
        fake = self

        class Options:
            def options(self, **options):
                def make(*args):
                    actor = Actor(cls, args, options)
                    actor.takes = []
                    fake.actors.append(actor)
                    return actor

                return SimpleNamespace(remote=make)

        return Options()

    def wait(self, refs, num_returns=1, timeout=None):
        ready = [r for r in refs if r.ready]
        return ready, [r for r in refs if not r.ready]

    def get(self, ref):
        if ref.error is not None:
            raise ref.error
        return ref.value

    def kill(self, actor, no_restart=True):
        actor.killed = True

    def shutdown(self):
        self.shut_down = True

    def alive(self, kind):
        return [a for a in self.actors if a.kind == kind and not a.killed]


@pytest.fixture
def fake_ray(monkeypatch):
    fake = FakeRay()
    strategies = types.ModuleType("ray.util.scheduling_strategies")
    strategies.NodeAffinitySchedulingStrategy = lambda node_id, soft: SimpleNamespace(
        node_id=node_id, soft=soft
    )
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setitem(sys.modules, "ray.util", types.ModuleType("ray.util"))
    monkeypatch.setitem(sys.modules, "ray.util.scheduling_strategies", strategies)
    return fake


MADE: list = []  # the backends a test made: their log files are closed after it


@pytest.fixture(autouse=True)
def close_actor_logs():
    yield
    while MADE:
        MADE.pop()._logs.close()


def make_backend(tmp_path, selfplay=None, address="auto"):
    import multiprocessing

    from gamegym.runtime.ray.backend import RayBackend

    config = GymConfig(
        game="games.tictactoe:TicTacToe",
        selfplay={
            "backend": "ray",
            "ray_address": address,
            "selfplayprocesses": 8,
            **(selfplay or {}),
        },
    )
    session = Session(tmp_path / "s")
    session.create(config)
    session.model_path(0).write_bytes(b"model 0")
    (session.models_dir / "current.json").write_text(json.dumps({"iteration": 0}))
    gym = SimpleNamespace(monitor=Monitor(), force=False)
    host = SimpleNamespace(
        session=session,
        config=config,
        gym=gym,
        run_number=1,
        ctx=multiprocessing.get_context("spawn"),
    )
    backend = RayBackend(host)
    MADE.append(backend)
    backend.start()
    return backend


def answer_addresses(backend):
    """The Predictors answer where their Selfplayers connect; the next poll starts those."""
    backend.poll()


def game(n=3):
    record = GameRecord()
    for i in range(n):
        record.x.append(np.full((3, 3, 2), i, np.float32))
        record.pi.append(np.full(9, 1 / 9, np.float32))
        record.action.append(i)
        record.root_value.append(0.0)
        record.legal.append(np.ones(9, bool))
    record.result = 1.0
    return record


def take_answer(files=(), reports=(), closed=False, error="", pid=4242, predictor_gone=False):
    return {
        "files": list(files),
        "reports": list(reports),
        "logs": ["a line"],
        "closed": closed,
        "error": error,
        "pid": pid,
        "predictor_gone": predictor_gone,
    }


def test_each_node_gets_a_predictor_and_the_selfplayers_its_cpus_hold(fake_ray, tmp_path):
    fake_ray.node_list += [
        {
            "NodeID": "gpu00000",
            "Alive": True,
            "NodeManagerAddress": "10.0.0.2",
            "Resources": {"CPU": 4.0, "GPU": 1.0},
        },
        {
            "NodeID": "tiny0000",
            "Alive": True,
            "NodeManagerAddress": "10.0.0.3",
            "Resources": {"CPU": 0.75},
        },
    ]
    backend = make_backend(tmp_path)
    assert not fake_ray.alive("SelfplayerActor")  # they wait for their Predictor's address
    answer_addresses(backend)
    by_node = {}
    for actor in fake_ray.alive("SelfplayerActor"):
        assert actor.options["num_cpus"] == 0.5 and actor.options["max_restarts"] == 0
        assert actor.args[3] == f"socket-{actor.node}"  # its own node's Predictor
        by_node[actor.node] = by_node.get(actor.node, 0) + 1
    assert by_node == {"head0000": 3, "gpu00000": 7}  # (CPUs - 0.5) / 0.5, at most 8
    predictors = {a.node: a for a in fake_ray.alive("PredictorActor")}
    assert set(predictors) == {"head0000", "gpu00000"}
    assert predictors["gpu00000"].options["num_gpus"] == 1
    assert predictors["head0000"].options["num_gpus"] == 0
    assert all(not a.options["scheduling_strategy"].soft for a in fake_ray.actors)
    names = [a.args[0] for a in fake_ray.alive("SelfplayerActor")]
    assert sorted(names) == sorted(f"selfplayer{i}" for i in range(10))
    assert len({a.args[2] for a in fake_ray.alive("SelfplayerActor")}) == 10  # seeds
    status = backend.status()
    assert (status["nodes"], status["selfplayers"], status["selfplayers_alive"]) == (2, 10, 0)


def test_pids_name_this_machines_actors_its_predictor_and_the_ray_it_started(
    fake_ray, tmp_path, monkeypatch
):
    """What the throughput bench measures the CPU time of: the Selfplayers and the Predictor on
    this machine by name, and the Ray processes the gym started; another node's are not here."""
    fake_ray.node_list.append(
        {
            "NodeID": "gpu00000",
            "Alive": True,
            "NodeManagerAddress": "10.0.0.2",
            "Resources": {"CPU": 2.0},
        }
    )
    backend = make_backend(tmp_path)
    here, there = backend.groups["head0000"], backend.groups["gpu00000"]
    assert here.slots and there.slots
    here.pid, there.pid = 100, 200
    for i, slot in enumerate(here.slots):
        slot.pid = 110 + i
    for i, slot in enumerate(there.slots):
        slot.pid = 210 + i
    monkeypatch.setattr(backend.connection, "ray_pids", lambda: [110, 900])  # 110: an actor
    assert backend.pids() == {
        **{slot.name: slot.pid for slot in here.slots},
        "predictor": 100,
        "ray-daemon900": 900,
    }


def test_a_model_iteration_is_put_once_for_every_node(fake_ray, tmp_path):
    fake_ray.node_list.append(
        {"NodeID": "other000", "Alive": True, "NodeManagerAddress": "x", "Resources": {"CPU": 2.0}}
    )
    from gamegym.runtime.ray.actors import ModelFiles

    backend = make_backend(tmp_path)
    backend.session.model_path(1).write_bytes(b"model 1")
    fast = stamped(b"model 1")  # made from that model file
    backend.session.fast_model_path(1).write_bytes(fast)
    backend.model_channel().send(Reload(1))
    backend.poll()
    sent = [ModelFiles(b"model 0", None), ModelFiles(b"model 1", fast)]
    assert fake_ray.puts == sent
    for predictor in fake_ray.alive("PredictorActor"):
        published = [args for method, args in predictor.calls if method == "publish"]
        assert [(it, ref.value) for it, ref in published] == list(enumerate(sent))
    assert backend.model_ref.value == sent[1]  # the newest only is held


def stamped(model: bytes) -> bytes:
    """A fast-path file (an .npz, here of one array) made from a model file of these bytes."""
    import hashlib

    from gamegym.data.session import stamped_fast_form

    buffer = io.BytesIO()
    np.savez(buffer, header=np.zeros(1, np.uint8))
    return stamped_fast_form(buffer.getvalue(), hashlib.sha256(model).hexdigest())


def test_a_fast_file_of_another_model_is_not_broadcast(fake_ray, tmp_path):
    backend = make_backend(tmp_path)
    fast, model = backend.session.fast_model_path(1), backend.session.model_path(1)
    fast.write_bytes(b"fast of an earlier model 1")  # records no model at all
    model.write_bytes(b"model 1")
    assert backend._model_files(1) == (b"model 1", None)
    fast.write_bytes(stamped(b"an earlier model 1"))
    assert backend._model_files(1) == (b"model 1", None)
    fast.write_bytes(stamped(b"model 1"))
    assert backend._model_files(1) == (b"model 1", fast.read_bytes())


def test_a_node_keeps_the_fast_file_with_its_model_and_prunes_both(tmp_path):
    from gamegym.nets.fastmodels import _matching
    from gamegym.runtime.ray.actors import ModelFiles, NodeModels

    models = NodeModels(keep=2)
    try:
        for it in range(3):
            fast = stamped(b"model %d" % it) if it else None
            models.add(it, ModelFiles(b"model %d" % it, fast))
        names = sorted(p.name for p in models.folder.iterdir())
        assert names == ["1.fast.npz", "1.keras", "2.fast.npz", "2.keras"]
        assert _matching(models.folder / "2.fast.npz", models.model_path(2))  # used, not remade
        models.add(2, ModelFiles(b"model 2 again", None))  # no fast form now: none kept
        assert not (models.folder / "2.fast.npz").exists()
    finally:
        models.remove()


def test_taken_sample_files_are_written_by_the_gym_tagged_and_counted(fake_ray, tmp_path):
    backend = make_backend(tmp_path, {"selfplayprocesses": 1})
    answer_addresses(backend)
    [actor] = fake_ray.alive("SelfplayerActor")
    data, samples = encode_sample_file([game(3), game(2)])
    report = Report("selfplayer0", 4242, {"games": 2, "searches": 80, "seconds": 2.0})
    actor.takes[-1].answer(take_answer([(3, data, samples, 2)], [report]))
    backend.poll()
    [path] = (backend.session.samples_dir / "3").glob("*.npz")
    assert path.name.startswith("selfplayer0-")
    assert path.read_bytes() == data and len(read_sample_file(path)["z"]) == 5
    assert not list(backend.session.samples_dir.rglob(".*"))  # nothing half-written
    monitor = backend.host.gym.monitor
    assert monitor.totals["selfplayer.samples"] == 5 and monitor.totals["selfplayer.games"] == 2
    assert len(actor.takes) == 2 and not actor.takes[-1].ready  # the next take is open
    assert "a line" in (backend.session.logs_dir / "selfplayer0.log").read_text()
    status = backend.status()
    assert status["selfplayers_alive"] == 1
    assert list(status["searches_per_s_by_node"].values())[0] > 0
    assert "ray 1 node, selfplayers 1/1, searches/s by node head00@10.0.0.1" in backend_summary(
        status
    )


def test_the_status_counts_the_predictors_that_run_tensorflow(fake_ray, tmp_path):
    fake_ray.node_list.append(
        {"NodeID": "gpu00000", "Alive": True, "NodeManagerAddress": "y", "Resources": {"CPU": 2.0}}
    )
    backend = make_backend(tmp_path, {"selfplayprocesses": 1})
    answer_addresses(backend)
    assert backend.status()["predictors_with_tensorflow"] == 0
    for group in backend.groups.values():
        group.last_poll = 0.0
    backend.poll()  # opens the Predictors' takes
    for predictor in fake_ray.alive("PredictorActor"):
        answer = take_answer(pid=100)
        answer["tensorflow"] = predictor.node == "gpu00000"  # off the CPU fast path there
        predictor.takes[-1].answer(answer)
    backend.poll()
    assert backend.status()["predictors_with_tensorflow"] == 1


def test_a_dead_selfplayer_is_restarted_on_its_node_with_a_new_seed_until_the_limit(
    fake_ray, tmp_path, capsys
):
    from gamegym.runtime.backends import MAX_SELFPLAYER_RESTARTS

    backend = make_backend(tmp_path, {"selfplayprocesses": 1})
    answer_addresses(backend)
    seeds = []
    for _ in range(MAX_SELFPLAYER_RESTARTS):
        [actor] = fake_ray.alive("SelfplayerActor")
        seeds.append(actor.args[2])
        actor.takes[-1].answer(error=RayError("the actor died"))
        assert backend.poll() == ""
        assert actor.killed
    [actor] = fake_ray.alive("SelfplayerActor")
    assert actor.node == "head0000" and len(set(seeds + [actor.args[2]])) == len(seeds) + 1
    said = capsys.readouterr().out
    assert "selfplayer0 on node head00@10.0.0.1 died (the actor died); restarting it" in said
    actor.takes[-1].answer(take_answer(error="Traceback ...\nPredictorTimeout: no answer"))
    failure = backend.poll()
    assert failure.startswith(
        "selfplayer0 on node head00@10.0.0.1 died (PredictorTimeout: no answer), too many "
        f"restarts ({MAX_SELFPLAYER_RESTARTS} restarts in 60 minutes); see "
    )
    assert failure.endswith("selfplayer0.log")


def poll_answered(backend, fake_ray):
    """A poll after the node Predictors answered the gym's open takes (they are alive)."""
    for predictor in fake_ray.alive("PredictorActor"):
        for ref in predictor.takes:
            if not ref.ready:
                ref.answer(take_answer(pid=100))
    return backend.poll()


def test_a_selfplayer_that_stops_answering_is_named_killed_and_restarted_within_the_budget(
    fake_ray, tmp_path, capsys
):
    from gamegym.runtime.backends import MAX_SELFPLAYER_RESTARTS
    from gamegym.runtime.heartbeat import STARTUP_GRACE

    backend = make_backend(tmp_path, {"selfplayprocesses": 1})
    now = [1000.0]
    backend.clock = lambda: now[0]
    answer_addresses(backend)
    deadline = backend.config.heartbeat_timeout
    [actor] = fake_ray.alive("SelfplayerActor")
    now[0] += STARTUP_GRACE * deadline - 1  # never answered yet: the longer deadline
    assert poll_answered(backend, fake_ray) == "" and not actor.killed
    actor.takes[-1].answer(take_answer())  # its first answer; the next take stays open
    poll_answered(backend, fake_ray)
    now[0] += deadline - 1
    assert (
        poll_answered(backend, fake_ray) == "" and not actor.killed
    )  # busy, not yet silent too long
    for _ in range(MAX_SELFPLAYER_RESTARTS):
        now[0] += STARTUP_GRACE * deadline  # a SIGSTOP: no take answers any more
        assert poll_answered(backend, fake_ray) == ""
        assert actor.killed
        out = capsys.readouterr().out
        assert "selfplayer0 on node head00@10.0.0.1 is not responding (no answer for " in out
        assert "stopped or hung); killing it" in out
        assert "died (no answer for " in out and "stopped or hung); restarting it" in out
        [actor] = fake_ray.alive("SelfplayerActor")  # its replacement, on the same node
        assert actor.node == "head0000"
    now[0] += STARTUP_GRACE * deadline
    failure = poll_answered(backend, fake_ray)
    assert failure.startswith("selfplayer0 on node head00@10.0.0.1 died (no answer for ")
    assert "stopped or hung), too many restarts (" in failure


def test_an_actor_ray_has_not_placed_yet_waits_and_is_not_called_hung(
    fake_ray, tmp_path, capsys, monkeypatch
):
    from gamegym.runtime.heartbeat import STARTUP_GRACE

    states = {}  # actor -> Ray's state of it; ALIVE unless a test says otherwise
    monkeypatch.setattr(
        "gamegym.runtime.ray.places.actor_state", lambda actor: states.get(actor, "ALIVE")
    )
    backend = make_backend(tmp_path, {"selfplayprocesses": 1})
    now = [1000.0]
    backend.clock = lambda: now[0]
    answer_addresses(backend)
    grace = STARTUP_GRACE * backend.config.heartbeat_timeout
    [actor] = fake_ray.alive("SelfplayerActor")
    states[actor] = "PENDING_CREATION"  # the node has no free CPU for it
    for _ in range(3):  # three graces and more: still waiting for its place, not hung
        now[0] += grace + 1
        assert poll_answered(backend, fake_ray) == "" and not actor.killed
    out = capsys.readouterr().out
    assert out.count("selfplayer0 on node head00@10.0.0.1 waits for Ray to place it") == 1
    assert "not responding" not in out
    states[actor] = "ALIVE"  # placed; its grace runs from the last time it was seen waiting
    now[0] += grace - 1
    assert poll_answered(backend, fake_ray) == "" and not actor.killed
    now[0] += 2  # and then silent past its grace: hung, as any other
    assert poll_answered(backend, fake_ray) == "" and actor.killed
    assert "selfplayer0 on node head00@10.0.0.1 is not responding" in capsys.readouterr().out


def test_a_predictor_that_stops_answering_comes_back_with_its_selfplayers(
    fake_ray, tmp_path, capsys
):
    backend = make_backend(tmp_path, {"selfplayprocesses": 2})
    now = [1000.0]
    backend.clock = lambda: now[0]
    answer_addresses(backend)
    first = fake_ray.alive("SelfplayerActor")
    for actor in first:  # the Selfplayers answer; only the Predictor falls silent
        actor.takes[-1].answer(take_answer())
    backend.groups["head0000"].last_poll = 0.0
    backend.poll()  # opens the Predictor's take, which never answers
    [predictor] = fake_ray.alive("PredictorActor")
    now[0] += backend.config.heartbeat_timeout + 1
    for actor in first:
        actor.takes[-1].answer(take_answer())
    assert backend.poll() == ""
    assert predictor.killed and not any(a.killed for a in first)
    out = capsys.readouterr().out
    assert "the Predictor on node head00@10.0.0.1 is not responding (no answer for 21 s" in out
    assert (
        "the Predictor on node head00@10.0.0.1 died (no answer for 21 s: stopped or hung); "
        "restarting it and its Selfplayers"
    ) in out
    for actor in first:  # their connections to it close: each ends
        actor.takes[-1].answer(take_answer(closed=True, predictor_gone=True))
    answer_addresses(backend)
    assert len(fake_ray.alive("PredictorActor")) == 1
    assert len(fake_ray.alive("SelfplayerActor")) == 2 and all(a.killed for a in first)


def test_no_heartbeat_deadline_leaves_silent_actors_alone(fake_ray, tmp_path):
    backend = make_backend(tmp_path, {"selfplayprocesses": 1})
    backend.config.heartbeat_timeout = 0.0
    now = [1000.0]
    backend.clock = lambda: now[0]
    answer_addresses(backend)
    now[0] += 10**6
    assert backend.poll() == ""
    assert not any(a.killed for a in fake_ray.actors)


def test_a_lost_node_costs_its_selfplayers_and_restarts_nothing(fake_ray, tmp_path, capsys):
    fake_ray.node_list.append(
        {"NodeID": "gone0000", "Alive": True, "NodeManagerAddress": "y", "Resources": {"CPU": 1.0}}
    )
    backend = make_backend(tmp_path, {"selfplayprocesses": 1})
    answer_addresses(backend)
    gone = [a for a in fake_ray.alive("SelfplayerActor") if a.node == "gone0000"]
    fake_ray.node_list[1]["Alive"] = False
    gone[0].takes[-1].answer(error=RayError("node died"))
    assert backend.poll() == ""
    assert "node gone00@y left the cluster: its 1 Selfplayers" in capsys.readouterr().out
    assert [a.node for a in fake_ray.alive("SelfplayerActor")] == ["head0000"]
    assert [a.node for a in fake_ray.alive("PredictorActor")] == ["head0000"]
    assert backend.status()["nodes"] == 1 and backend.status()["selfplayers"] == 1
    fake_ray.node_list[1].update(Alive=True, NodeID="back0000")  # a node joins: filled
    backend._last_reconcile = 0.0
    backend.poll()
    answer_addresses(backend)
    assert sorted(a.node for a in fake_ray.alive("SelfplayerActor")) == ["back0000", "head0000"]


def fail_the_predictor(backend, fake_ray):
    """The node's Predictor answers the gym's take with an error; returns it."""
    backend.groups["head0000"].last_poll = 0.0
    backend.poll()  # opens the Predictor's take
    [predictor] = fake_ray.alive("PredictorActor")
    predictor.takes[-1].answer(take_answer(error="Traceback\nValueError: cannot load model"))
    return predictor


def test_a_failed_predictor_comes_back_and_its_selfplayers_hand_over_their_games_first(
    fake_ray, tmp_path, capsys
):
    """As a Predictor process: a node's Predictor that fails is killed and started again at
    once; its Selfplayers are not killed but find their connection to it closed, hand over the
    games they finished (the gym writes them), end, and start again on the new Predictor,
    each with a seed of its own and its slot's budget untouched."""
    backend = make_backend(tmp_path, {"selfplayprocesses": 2})
    answer_addresses(backend)
    first = fake_ray.alive("SelfplayerActor")
    for actor in first:  # playing
        actor.takes[-1].answer(take_answer())
    predictor = fail_the_predictor(backend, fake_ray)
    assert backend.poll() == ""  # the failure, then the Predictor's restart
    assert predictor.killed and not any(a.killed for a in first)
    assert (
        "the Predictor on node head00@10.0.0.1 died (ValueError: cannot load model); "
        "restarting it and its Selfplayers"
    ) in capsys.readouterr().out
    answer_addresses(backend)  # the new Predictor is up
    assert len(fake_ray.alive("PredictorActor")) == 1  # a new one: the failed one is killed
    assert fake_ray.alive("SelfplayerActor") == first  # still ending: not replaced yet
    data, samples = encode_sample_file([game(3)])
    for actor in first:  # each hands over its last games and ends
        files = [(0, data, samples, 1)]
        actor.takes[-1].answer(take_answer(files, closed=True, predictor_gone=True))
    assert backend.poll() == ""
    assert all(a.killed for a in first)
    assert len(list((backend.session.samples_dir / "0").glob("*.npz"))) == 2  # none lost
    second = fake_ray.alive("SelfplayerActor")
    assert len(second) == 2 and all(a.args[3] == "socket-head0000" for a in second)
    assert len({a.args[2] for a in first + second}) == 4  # no seed plays twice
    [group] = backend.groups.values()
    assert len(group.budget.times) == 1 and not any(slot.budget.times for slot in group.slots)
    assert "selfplayer" not in capsys.readouterr().out  # no Selfplayer restart of their own


def left_to_end(fake_ray, tmp_path):
    """A backend on a clock of the test's, its one Selfplayer playing when its Predictor
    failed and was restarted: that Selfplayer's actor is left to end."""
    backend = make_backend(tmp_path, {"selfplayprocesses": 1})
    now = [1000.0]
    backend.clock = lambda: now[0]
    answer_addresses(backend)
    [actor] = fake_ray.alive("SelfplayerActor")
    actor.takes[-1].answer(take_answer())
    fail_the_predictor(backend, fake_ray)
    poll_answered(backend, fake_ray)  # failed, restarted
    poll_answered(backend, fake_ray)  # the new Predictor is up
    return backend, now, actor


def test_a_selfplayer_that_does_not_end_after_its_predictor_failed_is_killed_and_restarted(
    fake_ray, tmp_path
):
    from gamegym.runtime.backends import JOIN_SELFPLAYERS_S

    backend, now, actor = left_to_end(fake_ray, tmp_path)
    for seconds in (JOIN_SELFPLAYERS_S - 1, 2):  # it answers, and does not end
        now[0] += seconds
        actor.takes[-1].answer(take_answer())
        backend._last_reconcile = 0.0
        assert poll_answered(backend, fake_ray) == ""
    assert actor.killed
    [second] = fake_ray.alive("SelfplayerActor")
    assert second.args[2] != actor.args[2] and second.args[3] == "socket-head0000"
    [group] = backend.groups.values()
    assert not group.slots[0].budget.times


def test_a_selfplayer_silent_while_it_ends_after_its_predictor_failed_has_the_whole_grace(
    fake_ray, tmp_path, capsys
):
    """Left to end when its Predictor failed, a Selfplayer may answer nothing for longer than
    the heartbeat timeout (waiting on the dead Predictor until Ray says it died, on a loaded
    machine): the hand-over's grace bounds it, not the liveness watch."""
    from gamegym.runtime.backends import JOIN_SELFPLAYERS_S

    backend, now, actor = left_to_end(fake_ray, tmp_path)
    backend.config.heartbeat_timeout = 5.0  # (as the gym-started Ray test's)
    now[0] += JOIN_SELFPLAYERS_S - 1  # silent all along
    backend._last_reconcile = 0.0
    assert poll_answered(backend, fake_ray) == ""
    assert not actor.killed and "not responding" not in capsys.readouterr().out
    now[0] += 2
    backend._last_reconcile = 0.0
    assert poll_answered(backend, fake_ray) == ""
    assert actor.killed  # its grace is over


def test_a_selfplayer_that_finds_its_predictor_gone_first_has_it_restarted(
    fake_ray, tmp_path, capsys
):
    """A Selfplayer whose connection to its Predictor closed before the gym saw the Predictor
    fail: the Predictor failed, and is restarted with its Selfplayers."""
    backend = make_backend(tmp_path, {"selfplayprocesses": 1})
    answer_addresses(backend)
    [actor] = fake_ray.alive("SelfplayerActor")
    [predictor] = fake_ray.alive("PredictorActor")
    actor.takes[-1].answer(take_answer(closed=True, predictor_gone=True))
    assert backend.poll() == ""
    assert predictor.killed and actor.killed
    assert (
        "the Predictor on node head00@10.0.0.1 died (selfplayer0 found its connection to it "
        "closed); restarting it and its Selfplayers"
    ) in capsys.readouterr().out
    answer_addresses(backend)
    [second] = fake_ray.alive("SelfplayerActor")
    assert second.args[2] != actor.args[2] and second.args[3] == "socket-head0000"
    [group] = backend.groups.values()
    assert not group.slots[0].budget.times


def test_the_stop_takes_the_last_files_then_kills_everything(fake_ray, tmp_path):
    backend = make_backend(tmp_path, {"selfplayprocesses": 1})
    answer_addresses(backend)
    [actor] = fake_ray.alive("SelfplayerActor")
    actor.takes[-1].answer(take_answer())  # playing: it has a pid
    backend.poll()
    data, samples = encode_sample_file([game(4)])

    def last_files():  # the actor finishes its move and flushes while the gym waits
        time.sleep(0.3)
        actor.takes[-1].answer(take_answer([(0, data, samples, 1)], closed=True))

    threading.Thread(target=last_files).start()
    backend.stop_selfplayers()
    assert ("stop", ()) in actor.calls and actor.killed
    assert len(list((backend.session.samples_dir / "0").glob("*.npz"))) == 1
    backend.stop()
    assert all(a.killed for a in fake_ray.actors) and fake_ray.shut_down
    assert not backend.alive()


def test_a_cluster_address_where_nothing_listens_is_refused_at_once(fake_ray, tmp_path):
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]  # closed when the block ends: nothing listens
    with pytest.raises(ConfigError, match=rf"no Ray cluster answers at 127.0.0.1:{port}"):
        make_backend(tmp_path, address=f"127.0.0.1:{port}")
    assert not hasattr(fake_ray, "init_kwargs")


def test_without_ray_asking_for_it_names_the_extra(monkeypatch, tmp_path, capsys):
    from gamegym.cli.main import main
    from gamegym.runtime.ray.cluster import import_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    with pytest.raises(ConfigError, match=r'pip install -e "\.\[ray\]"'):
        import_ray()
    session = Session(tmp_path / "s")
    session.create(GymConfig(game="games.tictactoe:TicTacToe"))
    before = session.config_path.read_text()
    assert main(["resume", str(session.path), "--ray", "auto"]) == 2
    assert "needs Ray, which is not installed" in capsys.readouterr().err
    assert session.config_path.read_text() == before and not session.lock_path.exists()


def test_config_fields_of_the_ray_backend_are_checked():
    config = GymConfig(game="a:b", selfplay={"backend": "ray", "ray_address": "10.1.2.3:6379"})
    assert config.selfplay.backend == "ray"
    for bad, field in [
        ({"backend": "cluster"}, "selfplay.backend"),
        ({"ray_address": "my-cluster"}, "selfplay.ray_address"),
        ({"ray_selfplayer_cpus": 0}, "selfplay.ray_selfplayer_cpus"),
        ({"ray_object_store_mib": 10}, "selfplay.ray_object_store_mib"),
    ]:
        with pytest.raises(ConfigError, match=field):
            GymConfig(game="a:b", selfplay=bad)


def test_a_selfplayer_actors_files_wait_for_the_gym_and_are_whole(tmp_path):
    from gamegym.runtime.ray.actors import OutboxWriter, Relay
    from gamegym.runtime.selfplay import selfplay_loop

    relay = Relay(max_files=2)

    class Driver:
        searches_done = 0

        def play(self, should_stop):
            for i in range(9):
                self.searches_done += 10
                yield game(3), i // 3  # three games per iteration

    cfg = SimpleNamespace(gamelog_dump_threshold=3)
    player = threading.Thread(
        target=selfplay_loop,
        args=(Driver(), cfg, OutboxWriter(relay, "selfplayer7"), threading.Event(), relay),
    )
    player.start()
    time.sleep(0.3)
    assert player.is_alive()  # two files out, the third waits for the gym
    first = relay.take(1.0)
    player.join(5.0)
    rest = relay.take(1.0)
    files = first["files"] + rest["files"]
    assert [f[0] for f in files] == [0, 1, 2] and rest["closed"] is False
    for _iteration, data, samples, games in files:
        with np.load(io.BytesIO(data)) as arrays:
            assert len(arrays["z"]) == samples == 9 and len(arrays["result"]) == games == 3
    reports = first["reports"] + rest["reports"]
    assert sum(r.figures.get("games", 0) for r in reports) == 9
    assert sum(r.figures.get("samples", 0) for r in reports) == 0  # the gym counts them
    relay.close()
    assert relay.take(5.0)["closed"]


REAPED = """
import multiprocessing, subprocess, sys, time
from gamegym.runtime.ray.cluster import start_reaper
if __name__ == "__main__":
    ctx = multiprocessing.get_context("spawn")
    kept = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    reaped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    start_reaper(ctx, [kept.pid]).stop()          # stopped: it leaves its processes alone
    reaper = start_reaper(ctx, [reaped.pid])
    print(kept.pid, reaped.pid, flush=True)
    time.sleep(120)
"""


@pytest.mark.slow
def test_the_reaper_kills_what_a_killed_gym_started_and_only_that(tmp_path):
    import os
    import signal
    import subprocess

    import psutil

    script = tmp_path / "gym.py"
    script.write_text(REAPED)
    here = os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])
    gym = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": here},
    )
    kept, reaped = (psutil.Process(int(pid)) for pid in gym.stdout.readline().split())
    try:
        gym.send_signal(signal.SIGKILL)
        gym.wait()
        gone, alive = psutil.wait_procs([reaped], timeout=10)
        assert gone, "the reaper did not stop the process of the killed gym"
        assert kept.is_running()
    finally:
        kept.kill()


def test_object_store_figures_are_not_asked_of_a_ray_this_process_has_left(monkeypatch):
    """The gym's last status line comes after Ray's shutdown: asking Ray's runtime context
    then would start a Ray of its own, or wait minutes for the one RAY_ADDRESS names."""
    from gamegym.runtime.ray.cluster import object_store_use

    ray = pytest.importorskip("ray", reason='ray is not installed: pip install -e ".[ray]"')

    def asked():
        pytest.fail("asked the runtime context of a Ray this process is not connected to")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "get_runtime_context", asked)
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:9")  # nothing answers there
    assert object_store_use() is None


def test_a_ray_the_gym_starts_listens_on_loopback_asks_for_tokens_and_has_no_dashboard(
    monkeypatch, capsys
):
    """Ray reads its network switch and its authentication mode from the environment once,
    when it is first imported: import_ray(local=True) sets both before the import (loopback
    whatever the environment said; the token unless the user chose a mode), and the start
    asks for no dashboard.  A Ray imported earlier with the network on is refused, not
    started."""
    import importlib.abc
    import importlib.util
    import os

    from gamegym.runtime.ray import cluster

    fake, seen = FakeRay(), {}

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        """Imports the stand-in as `ray`, noting the environment Ray would read."""

        def find_spec(self, name, path=None, target=None):
            return importlib.util.spec_from_loader(name, self) if name == "ray" else None

        def create_module(self, spec):
            seen.update({k: os.environ.get(k) for k in (cluster.LOOPBACK_VAR, cluster.AUTH_VAR)})
            return fake

        def exec_module(self, module):
            pass

    monkeypatch.setitem(sys.modules, "ray", None)  # (whatever was there comes back after)
    monkeypatch.delitem(sys.modules, "ray")  # not imported yet
    monkeypatch.setattr(sys, "meta_path", [Finder(), *sys.meta_path])
    monkeypatch.setenv(cluster.LOOPBACK_VAR, "1")  # a user's setting, for a cluster
    monkeypatch.setenv(cluster.AUTH_VAR, "")
    monkeypatch.delenv(cluster.AUTH_VAR)  # no mode chosen
    assert cluster.import_ray(local=True) is fake
    assert seen == {cluster.LOOPBACK_VAR: "0", cluster.AUTH_VAR: "token"}

    monkeypatch.setattr(cluster, "start_reaper", lambda ctx, pids: None)  # no process here
    monkeypatch.setitem(  # what Ray read as it was imported: its network switch off
        sys.modules, "ray._private.ray_constants", SimpleNamespace(ENABLE_RAY_CLUSTER=False)
    )
    selfplay = GymConfig(game="games.tictactoe:TicTacToe").selfplay
    connection = cluster.RayConnection(fake, "local")
    connection.open(selfplay, ctx=None)
    assert fake.init_kwargs["address"] == "local"  # a Ray of its own, not RAY_ADDRESS's
    assert fake.init_kwargs["include_dashboard"] is False
    assert connection.started and "started Ray on this machine" in capsys.readouterr().out

    earlier = FakeRay()  # imported by a script before the gym, with the network on
    monkeypatch.setitem(
        sys.modules, "ray._private.ray_constants", SimpleNamespace(ENABLE_RAY_CLUSTER=True)
    )
    with pytest.raises(ConfigError, match="would listen on the network; set RAY_ENABLE_WIN"):
        cluster.RayConnection(earlier, "local").open(selfplay, ctx=None)
    assert not hasattr(earlier, "init_kwargs")
