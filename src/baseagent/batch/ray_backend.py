"""The Ray backend: the same workers as Ray actors, on a local Ray instance or a cluster.

Ray (an optional extra: `pip install 'baseagent[ray]'`) schedules the actors, ships this
package to them (`runtime_env.py_modules`, so every node runs the driver's code) and
streams results back; the driver still owns the schedule and alone writes results.jsonl.
Each actor is one Ray worker process holding one TaskRunner: it imports litellm once in
its constructor and runs tasks one after another. Actors are threaded (two method calls at
a time) so `cancel()` reaches an actor while its `run()` is busy.

Workspaces and records are written by the actors straight under the output directory, so on
a cluster of several machines that directory must be on a filesystem every node mounts at
the same path (docs/BATCH.md).
"""
from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from baseagent.batch.backend import BatchError, Outcome
from baseagent.batch.worker import run_token

INSTALL_HINT = "--backend ray needs Ray: pip install 'baseagent[ray]'"
# Ray's own switch for its token authentication (an environment variable only: Ray refuses
# it in _system_config); Ray asks whoever starts a local instance to choose.
AUTH_MODE_VARIABLE = "RAY_AUTH_MODE"
MAX_START_FAILURES = 3


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise BatchError(INSTALL_HINT) from None
    return ray


class RayWorker:
    """The actor's class (made remote at run time, so importing this module needs no Ray)."""

    def __init__(self, settings: dict[str, Any], env: dict[str, str], out_dir: str) -> None:
        from baseagent.batch.worker import TaskRunner

        # On another machine the provider's key variables are not set: take the driver's,
        # without overriding anything the node sets itself (PATH, HOME...).
        for name, value in env.items():
            os.environ.setdefault(name, value)
        self._runner = TaskRunner(settings, env, out_dir)
        self._error = self._runner.warm()

    def ready(self) -> tuple[int, str, str | None]:
        return os.getpid(), socket.gethostname(), self._error

    def run(self, task: dict[str, Any]) -> dict[str, Any]:
        return self._runner.run(task)

    def cancel(self, reason: str, token: str | None = None) -> None:
        self._runner.cancel(reason, token)

    def kill_processes(self) -> None:
        self._runner.kill_processes()


class RayBackend:
    def __init__(self, workers: int, runner_args: tuple[Any, ...],
                 address: str | None = None) -> None:
        self._ray = import_ray()
        self._workers = workers
        self._runner_args = runner_args
        self._address = address
        self._started_ray = False
        self._actor_class: Any = None
        self._actors: dict[int, Any] = {}
        self._ready: dict[int, bool] = {}
        self._failures: dict[int, int] = {}
        self._task_of: dict[int, str] = {}
        self._refs: dict[Any, tuple[int, str, Any]] = {}  # ref -> (slot, kind, actor)

    def start(self) -> None:
        ray = self._ray
        if not ray.is_initialized():
            self._init()
        self._actor_class = ray.remote(num_cpus=0, max_concurrency=2, max_restarts=0)(RayWorker)
        for slot in range(self._workers):
            self._spawn(slot)

    def _init(self) -> None:
        """Join the cluster at `address`, or start a local instance (which reads its
        authentication mode from RAY_AUTH_MODE only: the command line sets it, see
        batch/command.py; a library caller sets it as it likes)."""
        import baseagent

        try:
            self._ray.init(address=self._address, include_dashboard=False,
                           logging_level="ERROR",
                           runtime_env={"py_modules": [str(Path(baseagent.__file__).parent)]})
        except Exception as exc:  # noqa: BLE001 - ConnectionError, RuntimeError, ...
            where = self._address or "a local instance"
            raise BatchError(f"cannot start Ray ({where}): {exc}") from None
        self._started_ray = True

    def _spawn(self, slot: int) -> None:
        actor = self._actor_class.options(scheduling_strategy="SPREAD").remote(
            *self._runner_args)
        self._actors[slot] = actor
        self._ready[slot] = False
        self._refs[actor.ready.remote()] = (slot, "ready", actor)

    # -- state ---------------------------------------------------------------------------------

    def idle_slots(self) -> list[int]:
        return [s for s in sorted(self._actors) if self._ready[s] and s not in self._task_of]

    def busy(self) -> bool:
        return bool(self._task_of)

    # -- commands ------------------------------------------------------------------------------

    def submit(self, slot: int, task: dict[str, Any]) -> None:
        actor = self._actors[slot]
        self._task_of[slot] = run_token(task)
        self._refs[actor.run.remote(task)] = (slot, "run", actor)

    def cancel(self, slot: int, reason: str) -> None:
        self._actors[slot].cancel.remote(reason, self._task_of.get(slot))

    def replace(self, slot: int) -> None:
        actor = self._actors.pop(slot)
        self._drop_refs(actor)
        self._task_of.pop(slot, None)
        try:
            actor.kill_processes.remote()
        except Exception:  # noqa: BLE001 - the actor may be gone already
            pass
        self._ray.kill(actor, no_restart=True)
        self._spawn(slot)

    def _drop_refs(self, actor: Any) -> None:
        for ref, (_, _, owner) in list(self._refs.items()):
            if owner is actor:
                del self._refs[ref]

    def poll(self, timeout: float) -> list[Outcome]:
        ray = self._ray
        if not self._refs:
            return []
        refs = list(self._refs)
        ready, _ = ray.wait(refs, num_returns=1, timeout=timeout)
        if ready:
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        outcomes = []
        for ref in ready:
            slot, kind, actor = self._refs.pop(ref)
            if self._actors.get(slot) is not actor:
                continue  # a replaced actor's late answer
            try:
                value = ray.get(ref)
            except ray.exceptions.RuntimeEnvSetupError as exc:
                raise BatchError(f"Ray cannot set up the workers' environment: {exc}") from None
            except ray.exceptions.RayError as exc:
                outcomes.extend(self._died(slot, kind, actor, exc))
                continue
            if kind == "ready":
                error = value[2]
                if error:
                    raise BatchError(error)
                self._ready[slot] = True
                self._failures[slot] = 0
            else:
                self._task_of.pop(slot, None)
                outcomes.append(Outcome(slot, "done", payload=value))
        return outcomes

    def _died(self, slot: int, kind: str, actor: Any, exc: Exception) -> list[Outcome]:
        self._drop_refs(actor)
        self._actors.pop(slot, None)
        outcomes = []
        if self._task_of.pop(slot, None) is not None:
            outcomes.append(Outcome(slot, "crashed",
                                    reason=f"the Ray worker died ({type(exc).__name__})"))
        failures = self._failures.get(slot, 0) + (1 if kind == "ready" else 0)
        self._failures[slot] = failures
        if failures >= MAX_START_FAILURES:
            raise BatchError(f"Ray workers cannot start: {_first_line(exc)}")
        self._spawn(slot)
        return outcomes

    def close(self) -> None:
        ray = self._ray
        for actor in self._actors.values():
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - shutting down anyway
                pass
        self._actors.clear()
        self._refs.clear()
        if self._started_ray:
            ray.shutdown()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
