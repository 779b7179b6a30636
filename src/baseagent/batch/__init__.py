"""Batch runs: a task file run in isolated workspace copies by a pool of workers, with a
results.jsonl checkpoint, trajectories and a summary (docs/BATCH.md).

    from baseagent.batch import BatchOptions, run_batch
    summary = run_batch(settings, BatchOptions(Path("tasks.jsonl"), Path("out"), workers=4),
                        env=os.environ)

Modules: tasks (the task file), workspace (copies, setup/check commands), worker (one
task on one worker), local / ray_backend (where workers run), driver (schedule, timeouts,
retries, results), results (the checkpoint), summary, trajectories, progress, command (the
CLI's process layer).
"""
from __future__ import annotations

from baseagent.batch.backend import BatchError
from baseagent.batch.driver import BatchOptions, StopFlag, run_batch
from baseagent.batch.tasks import Task, TaskFileError, load_tasks

__all__ = ["BatchError", "BatchOptions", "StopFlag", "Task", "TaskFileError", "load_tasks",
           "run_batch"]
