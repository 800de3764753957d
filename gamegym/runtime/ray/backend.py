"""The Ray backend (`selfplay.backend = "ray"`): Selfplayers as Ray actors on a cluster.

The gym stays the head: its Trainer and Evaluator are child processes as always, and it alone
reads and writes the session folder.  On every node of the cluster it starts one Predictor
actor and up to `selfplayprocesses` Selfplayer actors (`gamegym.runtime.ray.actors`), as many as the
node's CPUs hold at `ray_selfplayer_cpus` each after the Predictor's `ray_predictor_cpus` (and
one GPU for the Predictor where the node has one and `predict.use_gpu`).  All of a node's
actors are pinned to it, so a Selfplayer's requests never leave its node.

- Models: each published iteration (its model file and its fast-path file, models/<it>.fast.npz,
  where there is one) is read once and put in the object store once; every node's Predictor
  fetches that one object, so a node on the CPU fast path never imports TensorFlow.
- Games: the gym keeps one `take` call open per Selfplayer; each returns the sample files the
  actor finished since (at most `OUTBOX_FILES`, each one flush of `gamelog_dump_threshold`
  games), which the gym writes into samples/<iteration>/ atomically, as a Selfplayer process
  would.  The object store holds a file only on its way; never the replay buffer.
- Faults: an actor that stops answering for `heartbeat_timeout` (stopped, hung) is named and
  killed (`gamegym.runtime.ray.places`) and counts as dead (one Ray has not placed yet is said
  to wait, not killed).  A dead Selfplayer is restarted on its node (up to
  `MAX_SELFPLAYER_RESTARTS` within `RESTART_WINDOW_S`, then the gym stops with an error), and a
  failed Predictor too (`MAX_PREDICTOR_RESTARTS`): its Selfplayers, not killed, hand over the
  games they finished and start again on the new one (`_predictor_failed`).  A node that leaves
  takes its actors and their games in flight with it; a node that joins gets a Predictor and
  Selfplayers.
- Stop: Selfplayers finish their move and their last files are written, then every actor is
  killed; a Ray the gym started itself is shut down (and killed by a reaper process should the
  gym die), a cluster it joined is left running.

The module is one state machine over nodes and actors, a little over 500 lines: what it keeps
of each node and actor is in `places`, what it measures in `headfigures`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time

from gamegym.data.session import fast_form_digest
from gamegym.registry import BACKENDS
from gamegym.runtime.backends import JOIN_SELFPLAYERS_S, SelfplayBackend, restart_seed
from gamegym.runtime.messages import Reload, Report
from gamegym.runtime.process import log_path
from gamegym.runtime.ray.cluster import RayConnection, import_ray
from gamegym.runtime.ray.headfigures import HeadFigures
from gamegym.runtime.ray.places import (
    ActorLogs,
    NodeGroup,
    Slot,
    first_line,
    hung,
    last_line,
    pinned,
    waits_for_placement,
)
from gamegym.runtime.selfplay import SampleWriter

__all__ = ["RayBackend"]

log = logging.getLogger("gamegym.runtime.ray.backend")

TAKE_WAIT_S = 2.0  # a Selfplayer's take returns at least this often (with its reports)
RECONCILE_S = 3.0  # how often nodes are listed and dead actors restarted
PREDICTOR_POLL_S = 2.0  # how often the Predictors' reports are taken


@BACKENDS.register
class RayBackend(SelfplayBackend):
    """Selfplayers and one Predictor per node as Ray actors (see the module docstring)."""

    name = "ray"
    local_folder = False  # actors on other nodes: the head writes every sample file

    @classmethod
    def check_available(cls, config) -> None:
        import_ray(local=config.selfplay.ray_address == "local")  # else an error naming the extra

    @classmethod
    def describe(cls, config) -> dict:
        return {"name": cls.name, "address": config.selfplay.ray_address}

    def __init__(self, host):
        super().__init__(host)
        self.address = self.config.selfplay.ray_address
        self.ray = import_ray(local=self.address == "local")
        self.connection = RayConnection(self.ray, self.address)
        self.authkey = os.urandom(32)  # only this run's actors may talk to its Predictors
        self._control_in, self._control_out = host.ctx.Pipe(duplex=False)
        self.groups: dict[str, NodeGroup] = {}
        self.model_ref = None
        self.iteration = -1
        self._next_index = 0
        self._last_reconcile = 0.0
        self._logs = ActorLogs(self.session.logs_dir)
        self.head = HeadFigures()
        self.stopping = False
        self.clock = time.monotonic  # of the heartbeats (a test's own clock)

    # ----- start ----------------------------------------------------------------------------
    def start(self) -> None:
        self.connection.open(self.config.selfplay, self.host.ctx)
        self._broadcast(max(0, self.session.current_iteration()))
        self._reconcile()

    def model_channel(self):
        return self._control_out

    def _broadcast(self, iteration: int) -> None:
        """One object put per iteration; each node's Predictor fetches it once."""
        from gamegym.runtime.ray.actors import ModelFiles

        started = time.perf_counter()
        files = ModelFiles(*self._model_files(iteration))
        self.model_ref = self.ray.put(files)  # the previous one is freed once its users let go
        self.iteration = iteration
        for group in self.groups.values():
            if group.predictor is not None:
                group.predictor.publish.remote(iteration, self.model_ref)
        self.head.broadcasts += 1
        self.head.broadcast_s += time.perf_counter() - started
        log.info(
            "broadcast model iteration %d (%d KiB, %s)",
            iteration,
            len(files.model) // 1024,
            f"fast form {len(files.fast) // 1024} KiB" if files.fast else "no fast form",
        )

    def _model_files(self, iteration: int) -> tuple[bytes, bytes | None]:
        """The bytes of a model file and of its fast-path file (None when there is none, or
        it was not made from that model file: a node then converts the model itself)."""
        path = self.session.model_path(iteration)
        data = path.read_bytes()
        try:
            fast = self.session.fast_model_path(iteration).read_bytes()
        except FileNotFoundError:
            return data, None
        return data, fast if fast_form_digest(fast) == hashlib.sha256(data).hexdigest() else None

    # ----- nodes ----------------------------------------------------------------------------
    def _reconcile(self) -> str:
        """Drop the groups of nodes gone; start a group on every node that has none; restart
        dead actors on their (live) node, and kill a Selfplayer that outlived its Predictor
        by JOIN_SELFPLAYERS_S.  Returns a failure when one died too often."""
        self._last_reconcile = time.monotonic()
        now = self.clock()
        nodes = {n["NodeID"]: n for n in self.ray.nodes() if n.get("Alive")}
        for node, group in list(self.groups.items()):
            if node not in nodes:
                self._lose_node(group)
        for node, info in nodes.items():
            if node not in self.groups:
                self._add_node(node, info)
        for group in self.groups.values():
            if group.predictor is None and group.selfplayers:
                failure = self._restart(
                    group,
                    f"the Predictor on node {group.label}",
                    f"predictor-{group.label}",
                    "restarting it and its Selfplayers",
                )
                if failure:
                    return failure
                self._start_predictor(group)
            for slot in group.slots:
                if slot.ending_too_long(now, JOIN_SELFPLAYERS_S):  # its games still out: lost
                    why = f"it outlived its Predictor by {JOIN_SELFPLAYERS_S:g} s"
                    log.warning("%s on node %s: %s; killing it", slot.name, group.label, why)
                    self._actor_died(group, slot, why)
                if slot.actor is None and not slot.closed and group.address is not None:
                    if slot.orphaned is None:  # it died on its own: its budget pays
                        failure = self._restart(
                            slot, f"{slot.name} on node {group.label}", slot.name, "restarting it"
                        )
                        if failure:
                            return failure
                    self._start_selfplayer(group, slot)
        return ""

    def _restart(self, thing: NodeGroup | Slot, what: str, log_name: str, action: str) -> str:
        """Count a restart of a slot or a node's Predictor; past the limit, the failure."""
        where = f"see {log_path(self.session.logs_dir, log_name)}"
        how = f"died ({thing.died})" if thing.died else "died"
        return thing.budget.tally(self.clock(), thing, what, how, where, action)

    def _add_node(self, node: str, info: dict) -> None:
        cfg = self.config.selfplay
        resources = info.get("Resources", {})
        cpus, gpus = resources.get("CPU", 0.0), resources.get("GPU", 0.0)
        fits = int((cpus - cfg.ray_predictor_cpus) // cfg.ray_selfplayer_cpus + 1e-9)
        count = max(0, min(cfg.selfplayprocesses, fits))
        label = f"{node[:6]}@{info.get('NodeManagerAddress', '?')}"
        group = NodeGroup(node, label, count, gpus if self.config.predict.use_gpu else 0.0)
        self.groups[node] = group
        if not count:
            log.warning(
                "node %s has %.1f CPUs: no room for a Predictor (%.2f) and a Selfplayer "
                "(%.2f); nothing runs there",
                label,
                cpus,
                cfg.ray_predictor_cpus,
                cfg.ray_selfplayer_cpus,
            )
            return
        for _ in range(count):
            name = f"selfplayer{self._next_index}"
            group.slots.append(
                Slot(name, self._next_index, SampleWriter(self.session.samples_dir, name))
            )
            self._next_index += 1
        log.info(
            "node %s (%.1f CPUs, %.0f GPUs): a Predictor and %d Selfplayers",
            label,
            cpus,
            gpus,
            count,
        )
        self._start_predictor(group)

    def _start_predictor(self, group: NodeGroup) -> None:
        from gamegym.runtime.ray.actors import PredictorActor

        actor = self.ray.remote(PredictorActor).options(
            **pinned(
                group,
                num_cpus=self.config.selfplay.ray_predictor_cpus,
                num_gpus=1 if group.gpus >= 1 else 0,
            )
        )
        group.predictor = actor.remote(f"predictor-{group.label}", self.config, self.authkey)
        group.address, group.poll_ref = None, None
        group.address_ref = group.predictor.address.remote()
        group.liveness.restart(self.clock())
        group.predictor.publish.remote(self.iteration, self.model_ref)

    def _start_selfplayer(self, group: NodeGroup, slot: Slot) -> None:
        from gamegym.runtime.ray.actors import SelfplayerActor

        actor = self.ray.remote(SelfplayerActor).options(
            **pinned(group, num_cpus=self.config.selfplay.ray_selfplayer_cpus)
        )
        if slot.orphaned is not None:  # its Predictor's fault: a new seed, on no budget
            slot.orphaned = None
            slot.restarts += 1
        seed = restart_seed(self.config.seed, self.host.run_number, slot.index, slot.restarts)
        slot.actor = actor.remote(slot.name, self.config, seed, group.address, self.authkey)
        slot.take = slot.actor.take.remote(TAKE_WAIT_S)
        slot.pid = None
        slot.liveness.restart(self.clock())

    def _lose_node(self, group: NodeGroup) -> None:
        count = len(group.slots)
        log.warning("node %s is gone; %d Selfplayers lost", group.label, count)
        if count:
            print(
                f"[gamegym] node {group.label} left the cluster: its {count} Selfplayers and "
                "their games in flight are lost",
                flush=True,
            )
        self._kill_group(group)
        del self.groups[group.node_id]

    def _kill_group(self, group: NodeGroup) -> None:
        for slot in group.slots:
            self._kill(slot.actor)
            slot.actor = slot.take = None
        self._kill(group.predictor)
        group.forget_predictor()

    def _kill(self, actor) -> None:
        if actor is not None:
            try:
                self.ray.kill(actor, no_restart=True)
            except Exception as error:  # already gone
                log.debug("kill: %s", error)

    # ----- watch ----------------------------------------------------------------------------
    def poll(self) -> str:
        while self._control_in.poll():
            message = self._control_in.recv()
            if isinstance(message, Reload) and message.iteration != self.iteration:
                self._broadcast(message.iteration)
        self._collect(timeout=0.0)
        self._poll_predictors()
        self._check_liveness()
        if time.monotonic() - self._last_reconcile >= RECONCILE_S and not self.stopping:
            return self._reconcile()
        return ""

    def _collect(self, timeout: float) -> None:
        """Write the sample files of every take that answered and open the next one."""
        open_takes = {
            s.take: (g, s) for g in self.groups.values() for s in g.slots if s.take is not None
        }
        if not open_takes:
            return
        ready, _ = self.ray.wait(list(open_takes), num_returns=len(open_takes), timeout=timeout)
        for ref in ready:
            group, slot = open_takes[ref]
            slot.take = None
            try:
                result = self.ray.get(ref)
            except self.ray.exceptions.RayError as error:
                self._actor_died(group, slot, error)
                continue
            self._take_result(group, slot, result)

    def _take_result(self, group: NodeGroup, slot: Slot, result: dict) -> None:
        self.head.takes += 1
        slot.liveness.answered()
        slot.pid = result["pid"]
        self._watch(group, slot.name, slot.pid)
        self._logs.write(slot.name, result["logs"])
        for iteration, data, samples, games in result["files"]:
            started = time.perf_counter()
            slot.writer.publish(iteration, data, samples, games)
            self.head.write_s += time.perf_counter() - started
            self.head.files += 1
            self.host.gym.monitor.add(Report(slot.name, slot.pid, {"samples": samples}))
        now = time.monotonic()
        for report in result["reports"]:
            self.host.gym.monitor.add(report)
            self.head.searched(group.label, now, report.figures.get("searches", 0))
        if result.get("predictor_gone") and slot.orphaned is None and not self.stopping:
            # it found its Predictor gone before the gym did: the Predictor failed
            self._predictor_failed(group, f"{slot.name} found its connection to it closed")
        if result["error"]:
            self._actor_died(group, slot, last_line(result["error"]))
        elif result["closed"] and slot.orphaned is not None:
            self._actor_died(group, slot, "its Predictor is gone")
        elif result["closed"] and not self.stopping:
            self._actor_died(group, slot, "its self-play ended unasked")
        elif result["closed"]:
            slot.closed = True
            self._kill(slot.actor)
            slot.actor = None
        else:
            slot.take = slot.actor.take.remote(TAKE_WAIT_S)
            slot.liveness.ask(self.clock())

    def _actor_died(self, group: NodeGroup, slot: Slot, error) -> None:
        """The next reconcile (now) restarts it, or finds its node gone."""
        self._kill(slot.actor)
        slot.actor = slot.take = None
        slot.died = first_line(error)
        if self.stopping:
            slot.closed = True
        self._last_reconcile = 0.0

    def _poll_predictors(self) -> None:
        """The Predictors' addresses once they are up (then their Selfplayers start: those
        still ending after a failed Predictor once they have ended), and their reports every
        PREDICTOR_POLL_S; a failed Predictor is killed and restarted (`_predictor_failed`)."""
        now = time.monotonic()
        for group in list(self.groups.values()):
            if (
                group.predictor is not None
                and group.address_ref is not None
                and self.ray.wait([group.address_ref], timeout=0)[0]
            ):
                answer, error = self._get(group.address_ref)
                group.address_ref = None
                if error:
                    self._predictor_failed(group, error)
                    continue
                group.address = answer
                group.liveness.answered()
                for slot in group.slots:
                    if slot.actor is None and not slot.closed and not self.stopping:
                        self._start_selfplayer(group, slot)
            if group.predictor is None:
                continue
            if group.poll_ref is None and now - group.last_poll >= PREDICTOR_POLL_S:
                group.poll_ref, group.last_poll = group.predictor.take.remote(), now
                group.liveness.ask(self.clock())
            if group.poll_ref is not None and self.ray.wait([group.poll_ref], timeout=0)[0]:
                answer, error = self._get(group.poll_ref)
                group.poll_ref = None
                if answer:
                    group.liveness.answered()
                    group.pid = answer["pid"]
                    group.tensorflow = bool(answer.get("tensorflow"))
                    self._watch(group, "predictor", group.pid)
                    self._logs.write(f"predictor-{group.label}", answer["logs"])
                    for report in answer["reports"]:
                        self.host.gym.monitor.add(report)
                    error = last_line(answer["error"])  # a traceback's: the exception
                if error:
                    self._predictor_failed(group, error)

    def _check_liveness(self) -> None:
        """Kill the actors that stopped answering (see gamegym.runtime.ray.places), naming
        them; each then counts as dead (a Predictor's Selfplayers end with it and start again
        on the new one), and the reconcile that follows restarts it or stops the gym with the
        reason.  A Selfplayer left to end when its Predictor failed may wait on that Predictor
        until Ray says it died: the hand-over's grace (JOIN_SELFPLAYERS_S) bounds it instead."""
        deadline = self.config.heartbeat_timeout
        if not deadline or self.stopping:
            return
        now = self.clock()
        for group in self.groups.values():
            what = f"the Predictor on node {group.label}"
            silent = group.liveness.hung(now, deadline) if group.predictor is not None else 0.0
            if silent and not waits_for_placement(group.predictor, group.liveness, what, now):
                self._predictor_failed(group, hung(what, silent))
                continue
            for slot in group.slots:
                if slot.orphaned is not None:  # ending: its grace bounds it (ending_too_long)
                    continue
                what = f"{slot.name} on node {group.label}"
                silent = slot.liveness.hung(now, deadline) if slot.actor is not None else 0.0
                if silent and not waits_for_placement(slot.actor, slot.liveness, what, now):
                    self._actor_died(group, slot, hung(what, silent))

    def _get(self, ref) -> tuple:
        """(answer, "") or (None, why the actor could not answer)."""
        try:
            return self.ray.get(ref), ""
        except self.ray.exceptions.RayError as error:
            return None, first_line(error)

    def _predictor_failed(self, group: NodeGroup, error: str) -> None:
        """Kill the node's Predictor; the next reconcile (now) starts it again, or finds the
        node gone.  Its Selfplayers, left to find their connection to it closed, hand over the
        games they finished and end (killed if they have not within JOIN_SELFPLAYERS_S), then
        start again on the new Predictor with seeds of their own, on no budget (the fault was
        not theirs), as a Predictor process's do (`gamegym.runtime.backends`)."""
        self._kill(group.predictor)
        group.orphan(error, self.clock())
        self._last_reconcile = 0.0

    def _watch(self, group: NodeGroup, name: str, pid: int) -> None:
        """CPU and memory of the actors on this machine go into the status line."""
        monitor = self.host.gym.monitor
        if group.node_id == self.connection.local_node and name not in monitor.processes:
            monitor.watch(name, pid)

    # ----- status ---------------------------------------------------------------------------
    def status(self) -> dict:
        now = time.monotonic()
        labels = [g.label for g in self.groups.values()]
        rates = self.head.rates(labels, now, self.host.gym.monitor.started)
        slots = [s for g in self.groups.values() for s in g.slots]
        return {
            "name": self.name,
            "address": self.address,
            "started_ray": self.connection.started,
            "nodes": sum(1 for g in self.groups.values() if g.predictor is not None),
            "selfplayers": len(slots),
            "selfplayers_alive": sum(1 for s in slots if s.actor is not None and s.pid),
            "predictors_with_tensorflow": sum(
                1 for g in self.groups.values() if g.predictor is not None and g.tensorflow
            ),
            "searches_per_s_by_node": rates,
            **self.head.figures(now),
        }

    def pids(self) -> dict[str, int]:
        """Actors' process ids on this machine, and the Ray processes the gym started."""
        pids = {
            s.name: s.pid
            for g in self.groups.values()
            for s in g.slots
            if s.pid and g.node_id == self.connection.local_node
        }
        local = self.groups.get(self.connection.local_node)  # groups are keyed by node
        if local is not None and local.pid:
            pids["predictor"] = local.pid
        actors = set(pids.values())  # Ray's own processes (an idle worker may be an actor now)
        pids.update(
            {f"ray-daemon{pid}": pid for pid in self.connection.ray_pids() if pid not in actors}
        )
        return pids

    # ----- stop -----------------------------------------------------------------------------
    def stop_selfplayers(self) -> None:
        """Selfplayers finish their move; their last files are written; then they are killed."""
        self.stopping = True
        slots = [s for g in self.groups.values() for s in g.slots if s.actor is not None]
        for slot in slots:
            if slot.pid is None:  # not playing yet: nothing to flush
                self._kill(slot.actor)
                slot.actor = slot.take = None
            else:
                slot.actor.stop.remote()
        started = time.monotonic()
        try:
            while any(s.actor is not None for s in slots):
                limit = 1.0 if self.host.gym.force else JOIN_SELFPLAYERS_S
                if time.monotonic() - started >= limit:
                    log.warning("Selfplayers did not stop in time; killing them")
                    break
                self._collect(timeout=0.2)
        except OSError as error:  # e.g. the disk is full: the games still out are lost
            log.error("could not write the Selfplayers' last games: %s", error)
        finally:
            for group in self.groups.values():
                for slot in group.slots:
                    self._kill(slot.actor)
                    slot.actor = slot.take = None

    def stop(self) -> None:
        self.stopping = True
        stops = {g.label: g.predictor.stop.remote() for g in self.groups.values() if g.predictor}
        if stops:  # (a Ray call without a connection would start a Ray of its own)
            ready, _ = self.ray.wait(list(stops.values()), num_returns=len(stops), timeout=5.0)
            for label, ref in stops.items():
                if ref in ready:
                    self._logs.write(f"predictor-{label}", self._get(ref)[0] or [])
        for group in self.groups.values():
            self._kill_group(group)
        self.model_ref = None
        self._logs.close()
        self.connection.close()

    def alive(self) -> bool:
        return any(
            g.predictor is not None or any(s.actor is not None for s in g.slots)
            for g in self.groups.values()
        )
