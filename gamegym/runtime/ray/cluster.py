"""Starting or joining Ray for a gym, and leaving it as it was.

- `import_ray`: Ray, or a clear error naming the `[ray]` extra.
- `RayConnection.open(config, ctx)`: with `selfplay.ray_address` "local", start a new Ray on
  this machine even when another runs there or `RAY_ADDRESS` names one (all its CPUs,
  `ray_object_store_mib` of object store, listening on 127.0.0.1 only, asking for Ray's token
  unless `RAY_AUTH_MODE` says otherwise, no dashboard, the workers importing what this process
  imports) and a reaper that kills what it started
  should the gym die; with "auto" or HOST:PORT, join that cluster.  `close()` shuts a Ray the
  gym started down and leaves a joined one running.
- `object_store_use()`: what the cluster's object stores hold.

Ray stops its head processes when the process that started them dies, but some of its agents
linger for a minute or more; the gym promises that nothing it started outlives it by seconds.
The reaper is a small child process that waits for the gym's death and then terminates exactly
the processes it was given (checked by pid and start time, so a reused pid is left alone).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
from multiprocessing.connection import wait

import psutil

from gamegym.config import ConfigError

__all__ = [
    "import_ray",
    "check_loopback_only",
    "RayConnection",
    "object_store_use",
    "actor_state",
    "RAY_MISSING",
    "PLACING",
]

log = logging.getLogger("gamegym.runtime.ray.cluster")

RAY_MISSING = (
    "selfplay.backend 'ray' needs Ray, which is not installed; install the extra: "
    'pip install -e ".[ray]" (in a checkout) or pip install "gamegym[ray]"'
)


# what a Ray the gym starts on this machine reads from the environment when it is imported:
# listen on 127.0.0.1 only (Ray's switch for a multi-machine cluster off, whatever it said), and
# ask every client for its token unless the user chose otherwise (RAY_AUTH_MODE; Ray >= 2.52)
LOOPBACK_VAR, AUTH_VAR = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_AUTH_MODE"


def import_ray(local: bool = False):
    """The ray module, or a ConfigError naming the extra that installs it.  `local`: the gym
    will start Ray on this machine, which then listens on 127.0.0.1 only (not on the network)
    and asks for Ray's token unless `RAY_AUTH_MODE` names a mode (Ray reads the network
    setting when it is first imported; a Ray imported before with the network on is refused by
    `RayConnection.open`)."""
    if local and "ray" not in sys.modules:
        os.environ[LOOPBACK_VAR] = "0"  # loopback only
        os.environ.setdefault(AUTH_VAR, "token")
    try:
        import ray
    except ImportError:
        raise ConfigError(RAY_MISSING) from None
    return ray


def check_loopback_only() -> None:
    """Refuse to start a Ray on this machine that would listen on the network: Ray reads
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER once, when it is imported, and a Ray imported before
    `import_ray(local=True)` (by the script that runs the gym) may have read it on."""
    constants = sys.modules.get("ray._private.ray_constants")
    if getattr(constants, "ENABLE_RAY_CLUSTER", False):
        raise ConfigError(
            "Ray was imported before gamegym could keep the Ray it starts on 127.0.0.1 only, "
            f"and would listen on the network; set {LOOPBACK_VAR}=0 in the environment before "
            "Ray is imported, or give the address of a cluster to join"
        )


class RayConnection:
    """The gym's connection to Ray (see the module docstring)."""

    def __init__(self, ray, address: str):
        self.ray = ray
        self.address = address
        self.started = False  # this gym started the Ray it uses
        self.reaper: Reaper | None = None
        self.local_node = None  # the node id of this machine

    def open(self, selfplay_config, ctx) -> None:
        options = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
        with _gym_signals():  # Ray's own SIGTERM handling would end the gym without a stop
            if self.address == "local":
                check_loopback_only()
                before = set(_descendants())
                with _python_path():  # workers import the game and gamegym as this process
                    self.ray.init(
                        address="local",  # not a cluster RAY_ADDRESS or an earlier Ray names
                        num_cpus=os.cpu_count(),
                        object_store_memory=selfplay_config.ray_object_store_mib * 2**20,
                        **options,
                    )
                self.started = True
                self.reaper = start_reaper(ctx, [p for p in _descendants() if p not in before])
                print(
                    f"[gamegym] started Ray on this machine ({os.cpu_count()} CPUs, object "
                    f"store {selfplay_config.ray_object_store_mib} MiB)",
                    flush=True,
                )
            else:
                check_reachable(self.address)
                self.ray.init(address=self.address, **options)
                print(f"[gamegym] joined the Ray cluster at {self.address}", flush=True)
        self.local_node = self.ray.get_runtime_context().get_node_id()
        log.info("ray %s: %s", self.ray.__version__, self.ray.cluster_resources())

    def ray_pids(self) -> list[int]:
        """The processes of a Ray this gym started (for CPU figures)."""
        return self.reaper.watched if self.reaper is not None else []

    def close(self) -> None:
        if self.ray.is_initialized():
            self.ray.shutdown()  # a Ray this gym started stops with it; a joined one runs on
            log.info("ray %s", "shut down" if self.started else f"left running at {self.address}")
        if self.reaper is not None:
            self.reaper.stop()


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """A clear error at once when nothing listens at a cluster's HOST:PORT (Ray itself retries
    for minutes); "auto" is Ray's to resolve."""
    if address == "auto":
        return
    host, _, port = address.split("://")[-1].rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return
    except (OSError, ValueError) as error:
        raise ConfigError(
            f"config field 'selfplay.ray_address': no Ray cluster answers at "
            f"{address} ({error}); start one there with 'ray start --head', or "
            "give --ray alone to start Ray on this machine"
        ) from None


def object_store_use() -> dict | None:
    """Object store use across the cluster this process is connected to: {"used_mib",
    "objects"}, None when unknown. Asked at the connected cluster's GCS address: without one
    Ray asks where `RAY_ADDRESS` points, which may be another cluster or nothing (15 s lost
    on every status line). None at once when this process is connected to no Ray (before
    the start, after the shutdown): asking the runtime context would start a Ray of its own,
    or wait minutes for the one `RAY_ADDRESS` names."""
    try:
        import ray

        if not ray.is_initialized():
            return None
        from ray._private.internal_api import get_memory_info_reply, get_state_from_address

        address = ray.get_runtime_context().gcs_address
        reply = get_memory_info_reply(get_state_from_address(address), timeout_seconds=5)
        stats = reply.store_stats
        return {
            "used_mib": round(stats.object_store_bytes_used / 2**20, 2),
            "objects": int(stats.num_local_objects),
        }
    except Exception as error:  # a private API: its absence costs the figure only
        log.debug("object store figures: %s", error)
        return None


# the states of an actor Ray has not started yet: no node has had room for it so far
PLACING = frozenset({"DEPENDENCIES_UNREADY", "PENDING_CREATION"})


def actor_state(actor) -> str | None:
    """Ray's state of an actor ("PENDING_CREATION", "ALIVE", "DEAD", ...), asked of the GCS's
    actor table (no dashboard needed); None when unknown."""
    try:
        from ray._private.state import actors

        state = actors(actor_id=actor._actor_id.hex()).get("State")
        return str(state) if state else None
    except Exception as error:  # a private API: its absence costs the distinction only
        log.debug("actor state: %s", error)
        return None


class _gym_signals:
    """The signal handlers of SIGINT and SIGTERM as they were before the block (the gym's
    clean stop), whatever the block installed."""

    def __enter__(self):
        self.main = threading.current_thread() is threading.main_thread()
        self.saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def __exit__(self, *exc):
        if self.main:
            for sig, handler in self.saved.items():
                if handler is not None:
                    signal.signal(sig, handler)
        return False


class _python_path:
    """PYTHONPATH set to this process's sys.path while a local Ray starts, so its workers find
    gamegym and the game where this process does (as spawned processes do)."""

    def __enter__(self):
        self.saved = os.environ.get("PYTHONPATH")
        paths = [p or os.getcwd() for p in sys.path] + (self.saved or "").split(os.pathsep)
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in dict.fromkeys(paths) if p)

    def __exit__(self, *exc):
        if self.saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = self.saved
        return False


def _descendants() -> list[int]:
    import psutil

    try:
        return [p.pid for p in psutil.Process().children(recursive=True)]
    except psutil.Error:
        return []


class Reaper:
    """The running reaper: `watched` pids; `stop()` when the gym stopped Ray itself."""

    def __init__(self, process, stop_conn, watched: list[int]):
        self.process = process
        self._stop = stop_conn
        self.watched = watched

    def stop(self) -> None:
        try:
            self._stop.send(None)
        except OSError:
            pass
        self.process.join(timeout=5.0)
        if self.process.is_alive():
            self.process.kill()


def start_reaper(ctx, pids: list[int]) -> Reaper:
    """Watch the gym for the Ray processes `pids` (started by it)."""
    processes = []
    for pid in pids:
        try:
            processes.append((pid, psutil.Process(pid).create_time()))
        except psutil.Error:
            continue
    stop_in, stop_out = ctx.Pipe(duplex=False)
    process = ctx.Process(
        target=reap_when_orphaned, args=(processes, stop_in), name="ray-reaper", daemon=True
    )
    process.start()
    return Reaper(process, stop_out, [pid for pid, _ in processes])


def reap_when_orphaned(processes: list[tuple[int, float]], stop_conn) -> None:
    """The reaper's entry point: wait for the gym's death or a stop; on death, terminate."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the gym's to handle
    parent = multiprocessing.parent_process()
    if parent is None:
        return
    ready = wait([parent.sentinel, stop_conn])
    if stop_conn in ready:
        try:
            stop_conn.recv()
            return  # the gym stopped Ray itself
        except (EOFError, OSError):
            pass  # the gym died: its end of the pipe closed with it
    alive = []
    for pid, started in processes:
        try:
            process = psutil.Process(pid)
            if abs(process.create_time() - started) < 1e-3:
                process.terminate()
                alive.append(process)
        except psutil.Error:
            continue
    _, left = psutil.wait_procs(alive, timeout=3.0)
    for process in left:
        try:
            process.kill()
        except psutil.Error:
            pass
