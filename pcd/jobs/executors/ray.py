"""Ray executor: the supervisor dispatches each run as a Ray task (``PCD_BACKEND=ray`` or
``python -m pcd worker --backend ray``).

- **Slots follow the cluster.** Every ``plan_slots`` call (the supervisor makes one every couple of
  seconds) reads the alive nodes (``ray.nodes()``). A node that joins is first *probed* (a tiny
  task pinned to it: the ``pcd`` version it imports, the runner module); then it gets one slot per
  GPU, or ``CPU // cpus_per_run`` slots on a CPU-only node. A node that leaves loses its slots. A
  node whose probe fails (different ``pcd`` version, runner not importable) gets no slots and the
  reason is logged and written to ``cluster.json``. Each task is pinned to its slot's node
  (``NodeAffinitySchedulingStrategy(soft=False)``) with ``num_gpus=1`` or ``num_cpus=cpus_per_run``.
- **A lost node or worker is not the run's fault.** ``NodeDiedError`` (or a worker crash on a node
  that turns out to be dead, an object/owner lost, ...) -> ``Outcome("lost")``: the supervisor
  puts the run back in the queue -- it resumes from its checkpoint in the shared data folder on any
  node -- counted against ``max_attempts``, with the message "infrastructure lost: ...". An
  exception raised by the runner is "the run crashed" and fails the run as on the local backend.
  The lost node gets no new work until Ray confirms its death (or for a minute).
- **Progress cannot take a run down.** Progress goes through one small named actor with
  ``max_restarts=-1``, placed (softly) on the supervisor's own node, so it restarts on a live node
  if its node is lost; the supervisor recreates it if it is gone for good. A task never fails
  because of the channel: a push that fails is dropped, and the per-epoch rows -- which the runner
  also writes to ``metrics.jsonl`` -- are reconciled into SQLite by the supervisor. Cancel flags are
  re-sent every tick, so a restarted channel learns them again.
- **The code is shipped** with the job's ``runtime_env`` (``ray.init``; Ray uploads local code only
  there, so this needs the supervisor to start Ray's driver itself): ``pcd`` itself through ``py_modules``
  when the supervisor runs it from a source checkout (an installed ``pcd`` is not shipped: every
  node must then have the same version, which the probe checks); a custom ``--runner``'s top-level
  package or module unless it is installed; extra paths in ``$PCD_RAY_PY_MODULES``.
- **Where a run ran**: node id, host name, IP, GPU ids and pid are recorded on the run
  (``placement``), and the task writes the run's ``worker.log`` in its run folder, as the local
  backend does.

Files: the task writes ``runs/<id>/`` under the data folder path *on the node that runs it*;
give the nodes a shared folder at the same path (NFS) so runs resume on any node and the page
offers the exported models. See the README's Ray section for the setup of N machines.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pcd import _files
from pcd.jobs.child import describe_error, is_cancel, resolve_runner
from pcd.jobs.executors.base import Job, Outcome, Slot, log_tail
from pcd.jobs.store import RunStore

NAMESPACE = "pcd-studio"
SUSPECT_S = 60.0          # a node that just lost a run gets no new work for this long (or until Ray says it is dead)
CRASH_CONFIRM_S = 5.0     # a worker crash on a node that still looks alive: wait this long for its death
PUSH_TIMEOUT_S = 5.0      # an epoch row waits this long for the channel, then it is left to the reconcile
_REMOTES: dict[str, Any] = {}
# these mean that the machine / raylet / worker under a run went away, not that the run failed
_LOST = ("NodeDiedError", "LocalRayletDiedError", "ObjectLostError", "OwnerDiedError", "ObjectFetchTimedOutError",
         "ReferenceCountingAssertionError", "ObjectReconstructionFailedError", "RaySystemError", "ActorDiedError",
         "ActorUnavailableError", "WorkerCrashedError")


def available() -> bool:
    try:
        import ray  # noqa: F401
        return True
    except ImportError:
        return False


def pcd_version() -> str:
    import pcd
    return str(pcd.__version__)


def check_pcd_version(expected: str | None, found: str, host: str) -> str | None:
    """None when the versions match (or ``expected`` is None: pcd is shipped with the job, so the
    node runs the supervisor's own files), else the one-line reason the node cannot serve runs."""
    if expected is None or found == expected:
        return None
    return (f"node {host} runs pcd {found} but the supervisor runs pcd {expected}: install the same version "
            f"on every node (pip install 'pcd-studio=={expected}')")


def _installed(path: str) -> bool:
    """True for code every node has from its own install: site-/dist-packages or the standard library."""
    import sysconfig

    p = Path(path).resolve()
    if "site-packages" in p.parts or "dist-packages" in p.parts:
        return True
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    return p == stdlib or stdlib in p.parents


def runtime_env_for(runner: str) -> tuple[dict, list[str]]:
    """The Ray ``runtime_env`` that ships the code a task needs, and the shipped paths.

    ``pcd`` goes with it when it is not installed (a source checkout); the runner's top-level
    package (or single module) when it is neither ``pcd`` nor installed; plus ``$PCD_RAY_PY_MODULES``
    (paths separated by ``os.pathsep``)."""
    import pcd

    ship: list[str] = []
    pcd_dir = str(Path(pcd.__file__).resolve().parent)
    if not _installed(pcd_dir):
        ship.append(pcd_dir)
    top = runner.split(":")[0].split(".")[0]
    if top != "pcd":
        spec = importlib.util.find_spec(top)
        if spec is None:
            raise ValueError(f"runner package {top!r} cannot be found on this machine")
        if spec.submodule_search_locations:
            path = str(Path(list(spec.submodule_search_locations)[0]).resolve())
        elif spec.origin and spec.origin.endswith(".py"):
            path = str(Path(spec.origin).resolve())
        else:  # pragma: no cover - a built-in or extension module: it must be installed on the nodes
            path = ""
        if path and not _installed(path) and path not in ship:
            ship.append(path)
    for extra in filter(None, os.environ.get("PCD_RAY_PY_MODULES", "").split(os.pathsep)):
        p = Path(extra).expanduser().resolve()
        if not p.exists():
            raise ValueError(f"PCD_RAY_PY_MODULES: {str(p)!r} does not exist")
        if str(p) not in ship:
            ship.append(str(p))
    env: dict = {}
    if ship:
        env["py_modules"] = ship
        env["excludes"] = ["__pycache__/", "*.pyc", ".git/", "test-artifacts/", "*.pt", "*.sqlite3*"]
    return env, ship


def _remotes() -> dict[str, Any]:
    """The actor class, the probe and the task, defined once ``ray`` is imported (an optional extra)."""
    if _REMOTES:
        return _REMOTES
    import ray

    class ProgressChannel:
        """Progress events from the tasks to the supervisor, and cancel flags the other way."""

        def __init__(self) -> None:
            self.events: list = []
            self.cancel: set = set()

        def push(self, run_id: int, token: str, payload: dict) -> None:
            self.events.append((run_id, token, payload))

        def drain(self) -> list:
            ev, self.events = self.events, []
            return ev

        def set_cancel(self, run_ids: list) -> None:
            self.cancel = set(run_ids)

        def should_stop(self, run_id: int) -> bool:
            return run_id in self.cancel

        def where(self) -> dict:
            import os as _os

            import ray as _ray
            return {"node": str(_ray.get_runtime_context().get_node_id()), "pid": _os.getpid()}

    def probe(expected: str | None, runner: str) -> dict:
        """Runs on a new node: which pcd it imports, whether the runner imports, where it is."""
        import os as _os
        import socket as _socket

        import ray as _ray
        host = _socket.gethostname()
        info: dict[str, Any] = {"host": host, "pid": _os.getpid(), "node": _ray.get_runtime_context().get_node_id(),
                                "error": None}
        try:
            from pcd.jobs.executors.ray import check_pcd_version, pcd_version
        except ImportError as exc:
            info["error"] = f"node {host} cannot import pcd ({exc}): pip install 'pcd-studio=={expected or '<version>'}' there"
            return info
        found = pcd_version()
        info["pcd"] = found
        info["error"] = check_pcd_version(expected, found, host)
        if info["error"] is None:
            from pcd.jobs.child import resolve_runner as _resolve
            try:
                _resolve(runner)
            except ValueError as exc:
                info["error"] = f"node {info['host']}: {exc}"
        return info

    def execute(runner: str, config: dict, out_dir: str, run_id: int, token: str, attempt: int, expected: str | None,
                channel_name: str, channel: Any) -> dict:
        import sys
        import traceback

        import ray as _ray

        os.makedirs(out_dir, exist_ok=True)
        ctx = _ray.get_runtime_context()
        where = {"backend": "ray", "node": ctx.get_node_id(), "host": socket.gethostname(),
                 "ip": _ray.util.get_node_ip_address(), "gpu": [str(g) for g in _ray.get_gpu_ids()] or None,
                 "pid": os.getpid()}
        log_path = os.path.join(out_dir, "worker.log")
        sys.stdout.flush()
        sys.stderr.flush()
        saved = (os.dup(1), os.dup(2))
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        state = {"channel": channel, "looked_up": 0.0, "dropped": 0, "last_check": 0.0, "stop": False}

        def _channel() -> Any:
            return state["channel"]

        def _relookup() -> None:  # the supervisor may have recreated the channel
            now = time.monotonic()
            if now - state["looked_up"] >= 5.0:
                state["looked_up"] = now
                try:
                    state["channel"] = _ray.get_actor(channel_name, namespace=NAMESPACE)
                except Exception:
                    pass

        def push(payload: dict, wait: bool) -> bool:
            try:
                ref = _channel().push.remote(run_id, token, payload)
                if wait:
                    _ray.get(ref, timeout=PUSH_TIMEOUT_S)
                return True
            except Exception as exc:
                state["dropped"] += 1
                print(f"[pcd] progress not delivered ({describe_error(exc)}); the epoch rows are in "
                      f"metrics.jsonl and are reconciled", flush=True)
                _relookup()
                return False

        def on_progress(payload: dict) -> None:
            push(payload, wait=payload.get("metrics") is not None)

        def should_stop() -> bool:
            now = time.monotonic()
            if not state["stop"] and now - state["last_check"] >= 0.5:
                state["last_check"] = now
                try:
                    state["stop"] = bool(_ray.get(_channel().should_stop.remote(run_id), timeout=2.0))
                except Exception:
                    _relookup()
            return bool(state["stop"])

        try:
            print(f"--- attempt {attempt} on Ray node {where['node'][:12]} (host {where['host']}, ip {where['ip']}, "
                  f"gpu {','.join(where['gpu'] or []) or 'none'}, pid {where['pid']}) at {time.ctime()}", flush=True)
            found = pcd_version()
            bad = check_pcd_version(expected, found, where["host"])
            if bad:
                raise RuntimeError(bad)
            push({"_where": where}, wait=True)
            fn = resolve_runner(runner)
            try:
                result = fn(dict(config), out_dir=out_dir, on_progress=on_progress, should_stop=should_stop)
            except BaseException as exc:
                if not is_cancel(exc):
                    traceback.print_exc()
                raise
            if not isinstance(result, dict):
                raise TypeError(f"runner returned {type(result).__name__}, expected a result dict")
            if state["dropped"]:
                print(f"[pcd] {state['dropped']} progress message(s) were not delivered", flush=True)
            return result
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])

    _REMOTES["channel"] = ray.remote(num_cpus=0)(ProgressChannel)
    _REMOTES["probe"] = ray.remote(num_cpus=0, max_retries=0)(probe)
    _REMOTES["task"] = ray.remote(max_retries=0)(execute)
    return _REMOTES


class RayExecutor:
    """Executor used by :class:`pcd.jobs.supervisor.Supervisor` when ``backend="ray"``."""

    name = "ray"
    runs_heartbeat = False  # a Ray task has no connection to the store: the supervisor heartbeats for it

    @classmethod
    def check_runner(cls, runner: str) -> None:
        """Resolve the runner here: the supervisor ships it to the cluster (a ``ValueError`` at once
        when it does not import)."""
        resolve_runner(runner)

    def __init__(self, store: RunStore, runner: str, address: str | None = None, *,
                 cpus_per_run: float | None = None, channel_node: str | None = None,
                 log: Callable[[str], None] | None = None, heartbeat_s: float | None = None) -> None:
        if cpus_per_run is None:
            env_cpr = os.environ.get("PCD_RAY_CPUS_PER_RUN")
            try:
                cpus_per_run = float(env_cpr) if env_cpr else 1.0
            except ValueError:
                raise ValueError(f"PCD_RAY_CPUS_PER_RUN must be a number > 0, got {env_cpr!r}") from None
        try:
            import ray
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        except ImportError:
            raise ValueError("backend 'ray' needs Ray: pip install 'pcd-studio[ray]' (or 'ray[default]')") from None
        if isinstance(cpus_per_run, bool) or not isinstance(cpus_per_run, (int, float)) or not 0 < cpus_per_run <= 1024:
            raise ValueError(f"cpus_per_run must be a number in (0, 1024], got {cpus_per_run!r}")
        self.ray, self._affinity = ray, NodeAffinitySchedulingStrategy
        self.store, self.runner, self.cpus_per_run = store, runner, float(cpus_per_run)
        self._log = log or (lambda msg: None)
        runtime_env, shipped = runtime_env_for(runner)
        # an installed pcd must be the same version on every node; a shipped one is our own files
        self.expected: str | None = None if any(Path(p).name == "pcd" and Path(p).is_dir() for p in shipped) \
            else pcd_version()
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:  # Ray uploads local code only at the job level (ray.init), not per task
            ray.init(address=address or os.environ.get("PCD_RAY_ADDRESS") or os.environ.get("RAY_ADDRESS"),
                     namespace=NAMESPACE, include_dashboard=False, log_to_driver=False,
                     runtime_env=runtime_env or None)
            self.shipped = shipped
        else:
            self.shipped = []
            if shipped:
                self._log("Ray was initialised by the caller: the code is not shipped (give ray.init "
                          f"runtime_env={{'py_modules': {shipped}}} to ship it)")
        self.remotes = _remotes()
        self.home_node = ray.get_runtime_context().get_node_id()
        # where the progress channel lives: the supervisor's node, or $PCD_RAY_CHANNEL_NODE (a node id)
        self.channel_node = channel_node or os.environ.get("PCD_RAY_CHANNEL_NODE") or self.home_node
        digest = hashlib.sha1(str(store.data_dir.resolve()).encode()).hexdigest()[:12]
        self.channel_name = f"pcd-progress-{digest}"
        self.channel = self._new_channel()
        self.nodes: dict[str, dict] = {}       # node id -> {host, ip, gpus, cpus, state, reason, ...}
        self._probes: dict[str, Any] = {}      # node id -> probe ref
        self._suspect: dict[str, float] = {}   # node id -> monotonic time until which it gets no work
        self._crashed: dict[int, tuple[float, str]] = {}  # run id -> (deadline, message) awaiting a node verdict
        self._cancel: set[int] = set()
        self.channel_failures = 0

    # ---- the progress channel ------------------------------------------------------------------

    def _new_channel(self) -> Any:
        return self.remotes["channel"].options(
            name=self.channel_name, namespace=NAMESPACE, max_restarts=-1, max_task_retries=0,
            scheduling_strategy=self._affinity(self.channel_node, soft=True)).remote()

    def _channel_call(self, method: str, *args: Any, timeout: float = 5.0) -> Any:
        ray = self.ray
        try:
            return ray.get(getattr(self.channel, method).remote(*args), timeout=timeout)
        except ray.exceptions.ActorDiedError as exc:  # gone for good: make a new one (tasks look it up by name)
            self.channel_failures += 1
            self._log(f"progress channel lost ({describe_error(exc)}); recreating it")
            try:
                self.channel = self._new_channel()
            except Exception as exc2:
                self._log(f"could not recreate the progress channel yet: {describe_error(exc2)}")
            return None
        except Exception:
            self.channel_failures += 1
            return None

    # ---- slots that follow the cluster -----------------------------------------------------------

    def _alive_nodes(self) -> dict[str, dict]:
        out = {}
        for n in self.ray.nodes():
            if not n.get("Alive"):
                continue
            res = n.get("Resources") or {}
            out[n["NodeID"]] = {"host": n.get("NodeManagerHostname") or n.get("NodeManagerAddress") or "?",
                                "ip": n.get("NodeManagerAddress"), "gpus": int(res.get("GPU", 0)),
                                "cpus": float(res.get("CPU", 0))}
        return out

    def plan_slots(self, slots: int | None) -> list[Slot]:
        """The slots of the cluster as it is now (see the module docstring); ``slots`` caps the total."""
        if slots is not None and (isinstance(slots, bool) or not isinstance(slots, int) or not 1 <= slots <= 1024):
            raise ValueError(f"slots must be an integer in [1, 1024], got {slots!r}")
        ray = self.ray
        alive = self._alive_nodes()
        now = time.monotonic()
        for nid in list(self.nodes):
            if nid not in alive:
                info = self.nodes.pop(nid)
                self._probes.pop(nid, None)
                self._suspect.pop(nid, None)
                self._log(f"node {info['host']} ({nid[:8]}) left the cluster")
        for nid, info in alive.items():
            if nid not in self.nodes:
                self.nodes[nid] = dict(info, state="probing", reason=None, node=nid)
                self._probes[nid] = self.remotes["probe"].options(
                    scheduling_strategy=self._affinity(nid, soft=False)).remote(self.expected, self.runner)
                self._log(f"node {info['host']} ({nid[:8]}) joined: {info['gpus']} GPU, {info['cpus']:g} CPU; probing")
        for nid, ref in list(self._probes.items()):
            ready, _ = ray.wait([ref], timeout=0)
            if not ready:
                continue
            del self._probes[nid]
            node = self.nodes[nid]
            try:
                res = ray.get(ref)
                err = res.get("error")
            except Exception as exc:
                err = f"node {node['host']}: the probe failed ({describe_error(exc)})"
            node["state"], node["reason"] = ("ignored", err) if err else ("ready", None)
            self._log(f"node {node['host']} ({nid[:8]}) " + (f"ignored: {err}" if err else "ready"))
        for nid in [n for n, t in self._suspect.items() if t <= now]:
            del self._suspect[nid]
        out: list[Slot] = []
        for nid, node in self.nodes.items():
            if node["state"] != "ready" or nid in self._suspect:
                continue
            tag = f"{node['host']}:{nid[:8]}"
            if node["gpus"]:
                out += [Slot(f"ray:gpu{i}@{tag}", {}, None, nid, node["host"]) for i in range(node["gpus"])]
            else:
                out += [Slot(f"ray:cpu{i}@{tag}", {}, None, nid, node["host"])
                        for i in range(int(node["cpus"] // self.cpus_per_run + 1e-9))]
        return out[:slots] if slots else out

    def describe(self) -> dict:
        """The cluster as the supervisor sees it (written to ``cluster.json`` for the page and the CLI)."""
        nodes = []
        for nid, n in self.nodes.items():
            state = "suspect" if nid in self._suspect and n["state"] == "ready" else n["state"]
            nodes.append({"node": nid, "host": n["host"], "ip": n["ip"], "gpus": n["gpus"], "cpus": n["cpus"],
                          "state": state, "reason": n["reason"], "home": nid == self.home_node})
        ch = self._channel_call("where", timeout=2.0) or {}
        return {"backend": "ray", "nodes": nodes, "channel_node": ch.get("node"), "channel_pid": ch.get("pid"), "cpus_per_run": self.cpus_per_run, "shipped": self.shipped,
                "pcd": pcd_version(), "pcd_shipped": self.expected is None}

    # ---- runs ------------------------------------------------------------------------------------

    def start(self, run: dict, slot: Slot) -> Any:
        node = self.nodes.get(slot.node or "", {})
        if node.get("gpus"):
            opts: dict = {"num_gpus": 1, "num_cpus": min(self.cpus_per_run, node["cpus"] / node["gpus"])}
        else:
            opts = {"num_cpus": self.cpus_per_run}
        opts["scheduling_strategy"] = self._affinity(str(slot.node), soft=False)
        run_dir = _files.run_folder(self.store.data_dir, run["id"])  # a linked run folder is refused
        return self.remotes["task"].options(**opts).remote(
            self.runner, run["config"], str(run_dir), int(run["id"]), run["token"],
            int(run["attempts"]), self.expected, self.channel_name, self.channel)

    def _node_dead(self, nid: str | None) -> bool:
        if not nid:
            return False
        try:
            return nid not in self._alive_nodes()
        except Exception:
            return True

    def _lost(self, job: Job, what: str) -> Outcome:
        if job.slot.node:
            self._suspect[job.slot.node] = time.monotonic() + SUSPECT_S
        host = job.slot.host or "?"
        return Outcome("lost", f"infrastructure lost: {what} on node {host} ({(job.slot.node or '?')[:8]})")

    def poll(self, job: Job) -> Outcome | None:
        ray = self.ray
        pending = self._crashed.get(job.run_id)
        if pending is not None:  # a worker crash: the node's death may still be on its way
            deadline, msg = pending
            if self._node_dead(job.slot.node):
                del self._crashed[job.run_id]
                return self._lost(job, "the node died")
            if time.monotonic() < deadline:
                return None
            del self._crashed[job.run_id]
            return Outcome("error", msg)
        ready, _ = ray.wait([job.handle], timeout=0)
        if not ready:
            return None
        try:
            return Outcome("result", ray.get(job.handle))
        except ray.exceptions.TaskCancelledError:
            return Outcome("cancelled")
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None) or exc
            if is_cancel(cause):
                return Outcome("cancelled")
            return Outcome("error", describe_error(cause))
        except ray.exceptions.TaskUnschedulableError as exc:  # never started (its node went away first)
            if job.slot.node:
                self._suspect[job.slot.node] = time.monotonic() + SUSPECT_S
            return Outcome("released", f"not started: {describe_error(exc)}")
        except ray.exceptions.OutOfMemoryError as exc:  # Ray's memory monitor killed it: the run's own doing
            return Outcome("error", f"out of memory (Ray's memory monitor killed the worker): {describe_error(exc)}")
        except ray.exceptions.RuntimeEnvSetupError as exc:
            return Outcome("error", f"Ray could not set up the run's environment: {describe_error(exc)}")
        except ray.exceptions.RayError as exc:
            name = type(exc).__name__
            if name == "WorkerCrashedError" and not self._node_dead(job.slot.node):
                tail = log_tail(self.store.data_dir, job.run_id)
                msg = "the run crashed: its Ray worker process died (WorkerCrashedError)" + (f": {tail}" if tail else "")
                self._crashed[job.run_id] = (time.monotonic() + CRASH_CONFIRM_S, msg)
                return None
            if name in _LOST or isinstance(exc, ray.exceptions.NodeDiedError):
                return self._lost(job, f"{name}")
            return self._lost(job, describe_error(exc))

    def request_cancel(self, job: Job) -> None:
        self._cancel.add(job.run_id)

    def kill(self, job: Job) -> None:
        self._crashed.pop(job.run_id, None)
        try:
            self.ray.cancel(job.handle, force=True)
        except Exception:
            pass

    def pump(self, jobs: dict[int, Job]) -> None:
        self._cancel &= set(jobs)
        self._channel_call("set_cancel", sorted(self._cancel))
        events = self._channel_call("drain") or []
        for run_id, token, payload in events:
            job = jobs.get(run_id)
            if job is None or job.token != token:
                continue  # a late event of an earlier attempt
            try:
                if "_where" in payload:
                    where = payload["_where"]
                    self.store.set_pid(run_id, token, int(where.get("pid") or 0), placement=where)
                else:
                    self.store.report_progress(run_id, token, payload)
            except Exception as exc:
                self._log(f"run {run_id}: progress event not stored ({describe_error(exc)})")

    def close(self) -> None:
        try:
            self.ray.kill(self.channel)
        except Exception:
            pass
        if self._owns_ray:
            try:
                self.ray.shutdown()
            except Exception:
                pass
