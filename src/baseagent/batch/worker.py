"""What a batch worker does with one task, whatever runs the worker (a local process or a
Ray actor): copy the workspace, run `setup`, run the agent, run `check`, export the
trajectories, and hand back one result.

One TaskRunner lives for the whole life of a worker and runs its tasks one after another,
so litellm is imported once per worker, not once per task. Each task gets its own library
Agent (built with `Agent.from_settings` from the batch's resolved Settings, with the task's
workspace and model), its own event file and session record under `DIR/tasks/<key>/`, and
a fresh copy of its workspace under `DIR/work/<key>/`.

The runner never raises for a task: whatever goes wrong becomes the task's result, so a bad
task never takes its worker (and the tasks queued behind it) down.
"""
from __future__ import annotations

import os
import shutil
import socket
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Mapping

from baseagent.batch.layout import Layout
from baseagent.batch.results import is_timeout
from baseagent.batch.tasks import Task
from baseagent.batch.workspace import fresh_workspace, run_command
from baseagent.config.settings import Settings

EVENTS_FILE = "events.jsonl"


class TaskRunner:
    """Runs tasks for one worker. `settings` are the batch's resolved Settings (as plain
    data, so they cross process and machine boundaries); `env` is the environment the batch
    was started in (commands get it minus secrets, secrets are redacted from every record)."""

    def __init__(self, settings: Mapping[str, Any], env: Mapping[str, str], out_dir: str,
                 own_process: bool = False) -> None:
        """`own_process`: this process runs nothing but this runner's tasks and is a child
        subreaper (the local backend's workers), so after each task every descendant it
        still has is the task's and is ended before the next task starts."""
        self.settings = Settings.model_validate(dict(settings))
        self.own_process = own_process
        self.env = dict(env)
        self.layout = Layout(Path(out_dir))
        self._lock = threading.Lock()
        self._agent: Any = None
        self._current: str | None = None  # the run_token of the task being run
        self._cancels: dict[str, str] = {}  # run_token -> reason
        self._tool_names: list[str] | None = None
        # Which worker ran a task (host:pid): many tasks share one, by design.
        self.worker_name = f"{socket.gethostname()}:{os.getpid()}"
        from baseagent.output.redact import Redactor

        self._redactor = Redactor.from_environment(self.env, self.settings.env_strip,
                                                   [self.settings.api_key])

    def warm(self) -> str | None:
        """Import litellm now (seconds), so the first task's clock does not pay for it,
        unless the batch's model calls take the direct path (which never imports it), and
        check the batch's model and API key once. Returns what is wrong (the driver stops
        the batch with it) or None."""
        from baseagent.compose.checks import check_model
        from baseagent.compose.model import model_route
        from baseagent.errors import ConfigError

        route = model_route(self.settings, self.env)
        if route is None:
            from baseagent.llm.client import load_litellm

            load_litellm()
        try:
            check_model(self.settings, route)
        except ConfigError as exc:
            return str(exc)
        return None

    # -- cancellation (from another thread or a signal handler) -------------------------------

    def cancel(self, reason: str, token: str | None = None) -> None:
        """Stop a task: the agent's turn ends interrupted, a running setup or check command is
        killed. `token` (the task's run_token) names the attempt meant: a cancel that
        arrives before that attempt starts still applies to it, and one that arrives after
        it ended never touches the next task. None: whatever runs now."""
        with self._lock:
            if token is None:
                token = self._current
            if token is None:
                return
            self._cancels[token] = reason
            agent = self._agent if token == self._current else None
        if agent is not None:
            agent.cancel(reason, next_run=True)  # this task's run, running or about to

    def kill_processes(self) -> None:
        """Last resort before the worker exits: end what the running task's commands left."""
        agent = self._agent
        if agent is not None:
            agent.kill_processes(grace=0)
        if self.own_process:
            from baseagent.tools.procs import end_descendants

            end_descendants(wait=0.5)

    def _cancelled(self) -> bool:
        return self._cancel_reason is not None

    @property
    def _cancel_reason(self) -> str | None:
        current = self._current
        return None if current is None else self._cancels.get(current)

    # -- one task ------------------------------------------------------------------------------

    def run(self, task_data: Mapping[str, Any]) -> dict[str, Any]:
        """Run one task (Task.to_dict() data); returns {"result": its results.jsonl line}.
        A cancel that arrives after the task's outcome is known does not change it."""
        task = Task.from_dict(dict(task_data))
        with self._lock:
            self._current = run_token(task_data)
        started = time.monotonic()
        cpu_started = time.process_time()
        result: dict[str, Any] = {
            "id": task.id, "status": "error", "agent_status": None, "final_message": None,
            "thread_id": None, "usage": None, "cost_usd": None, "duration_s": None,
            "check": None, "error": None, "workspace": None, "task_dir": None,
            "metadata": task.metadata, "worker": self.worker_name,
        }
        try:
            self._run(task, result)
        except Exception as exc:  # noqa: BLE001 - any failure is this task's result
            result["status"] = "error"
            result["error"] = f"{type(exc).__name__}: {exc}"
            result["traceback"] = traceback.format_exc(limit=8)
        finally:
            with self._lock:
                agent, self._agent = self._agent, None
                self._cancels.pop(self._current or "", None)
                self._current = None
            if agent is not None:
                # The task is over (its check has run): nothing it started may run on into
                # the next task of this worker, background servers included.
                agent.kill_processes()
            if self.own_process:
                from baseagent.tools.procs import end_descendants

                left = end_descendants(grace=0.5)
                if left:  # pragma: no cover - a process in uninterruptible sleep
                    result["leftover_processes"] = left
        result["duration_s"] = round(time.monotonic() - started, 3)
        result["cpu_s"] = round(time.process_time() - cpu_started, 4)
        # Check output and error texts can quote a secret (a command that prints a file).
        return {"result": self._redactor.data(result)}

    def _run(self, task: Task, result: dict[str, Any]) -> None:
        """Fill in `result` as the task goes; trajectories are written beside its record."""
        from baseagent.agent import Agent
        from baseagent.output.jsonl import JsonlSink

        workspace = self.layout.workspace(task.key)
        task_dir = self.layout.task_dir(task.key)
        if task_dir.exists():
            shutil.rmtree(task_dir)  # an earlier attempt's records
        task_dir.mkdir(parents=True)
        fresh_workspace(workspace, task.workspace)
        result["workspace"] = str(workspace)
        result["template"] = str(task.workspace) if task.workspace else None
        result["task_dir"] = str(task_dir)
        command_env = self._command_env()

        if task.setup:
            setup = run_command(task.setup, workspace, command_env, self._cancelled)
            if setup.exit_code != 0:
                if setup.exit_code is None:
                    result["status"] = "interrupted"
                    result["error"] = f"interrupted during setup ({self._cancel_reason})"
                else:
                    result["error"] = f"setup failed with exit code {setup.exit_code}: " \
                                      f"{_last_line(setup.output)}"
                result["setup"] = {"exit_code": setup.exit_code, "output": setup.output}
                return

        # No checkpoints: the workspace is a throwaway copy nobody undoes (docs/CHECKPOINTS.md).
        update: dict[str, Any] = {"cwd": workspace, "session_dir": task_dir,
                                  "record_session": True, "checkpoints": False}
        if task.model:
            update["model"] = task.model
        if task.attempts is not None:
            update["attempts"] = task.attempts
        settings = self.settings.model_copy(update=update)
        with open(task_dir / EVENTS_FILE, "wb") as events:
            agent = Agent.from_settings(settings, env=self.env, sinks=[JsonlSink(events)])
            with self._lock:
                self._agent = agent
                reason = self._cancel_reason
            if reason is not None:  # cancelled while the workspace was being made
                agent.cancel(reason, next_run=True)
            try:
                run = agent.run(task.instruction)
            finally:
                agent.close()
        result.update(agent_status=run.status, final_message=run.final_message,
                      thread_id=run.thread_id, error=run.error,
                      usage={"input_tokens": run.usage.input_tokens,
                             "cached_input_tokens": run.usage.cached_input_tokens,
                             "output_tokens": run.usage.output_tokens},
                      cost_usd=run.usage.cost_usd)
        # The record is in the task's directory, or in the shared SQLite store ([storage]).
        record = task_dir / f"{run.thread_id}.jsonl"
        result["session"] = str(record) if settings.storage.kind == "jsonl" \
            else f"{settings.storage.path}#{run.thread_id}"
        ended_by = self._cancel_reason  # the cancel that ended the run (None: none did)
        if run.status == "interrupted":
            result["status"] = "interrupted"
            if not (task.check and is_timeout(ended_by)):
                return
            # A task timeout: the check still runs, on the workspace as the turn left it (the
            # whole-file probe's best attempt put back): what a person would find there. A
            # stop that comes meanwhile still ends it.
            result["timed_out"] = True

        if task.check:
            def cancelled() -> bool:
                reason = self._cancel_reason
                return reason is not None and reason != ended_by

            check = run_command(task.check, workspace, command_env,
                                cancelled if result.get("timed_out") else self._cancelled)
            if check.exit_code is None:
                result["status"] = "interrupted"
                result["error"] = f"interrupted during check ({self._cancel_reason})"
                return
            result["check"] = {"exit_code": check.exit_code, "passed": check.exit_code == 0,
                               "output": check.output}
            passed = check.exit_code == 0
            if not passed:  # why it did not pass (docs/BATCH.md), the run's own error kept
                result["error"] = f"check failed with exit code {check.exit_code}: " \
                                  f"{_last_line(check.output)}" + \
                                  (f" (agent: {run.error})" if run.error else "")
            elif result.get("timed_out"):
                result["error"] = f"{ended_by}; the check passed on the workspace as the " \
                                  f"turn left it"
        else:
            passed = run.status == "completed"
            if not passed and not result["error"]:
                result["error"] = f"the agent's run ended {run.status}"
        result["status"] = "passed" if passed else "failed"
        try:
            self._trajectories(self._log(settings, run.thread_id), task_dir, task, run.status)
        except Exception as exc:  # noqa: BLE001 - the run stands; its export is reported
            result["export_error"] = f"{type(exc).__name__}: {exc}"

    @staticmethod
    def _log(settings: Any, thread_id: str) -> Any:
        """The thread's log for its trajectories, from the store it was recorded in."""
        from baseagent.export.log import log_of
        from baseagent.storage import location_of, open_storage

        storage = open_storage(settings)
        try:
            return log_of(storage.load_records(thread_id), location_of(storage, thread_id))
        finally:
            storage.close()

    def _trajectories(self, record: Any, task_dir: Path, task: Task,
                      agent_status: str) -> dict[str, Any]:
        from baseagent.export.trajectories import write_trajectories

        if self._tool_names is None:
            from baseagent.tools.registry import ToolRegistry

            self._tool_names = [spec["function"]["name"] for spec in ToolRegistry().specs()]
        return write_trajectories(record, task_dir, task=task.to_dict(),
                                  agent_status=agent_status, tool_names=self._tool_names)

    def _command_env(self) -> dict[str, str]:
        from baseagent.credentials import child_env

        return child_env(self.env, self.settings.env_strip)


def run_token(task_data: Mapping[str, Any]) -> str:
    """One attempt of one task (the driver numbers attempts)."""
    return f"{task_data['id']}#{task_data.get('attempt', 1)}"


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"
