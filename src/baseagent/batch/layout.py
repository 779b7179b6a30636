"""Where everything of a batch lives under its output directory (`--out DIR`).

    DIR/results.jsonl        one line per finished task (the driver alone appends to it)
    DIR/summary.json         totals of the tasks in the task file, rewritten at the end
    DIR/trajectories.jsonl   hermes-agent batch lines (ShareGPT), rebuilt at the end
    DIR/tasks/<key>/         events.jsonl, the session record <thread_id>.jsonl,
                             atif.json, sharegpt.json, trajectory.json
    DIR/work/<key>/          the task's own copy of its workspace
    DIR/.lock                held while a batch runs on DIR
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    root: Path

    @property
    def results(self) -> Path:
        return self.root / "results.jsonl"

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"

    @property
    def trajectories(self) -> Path:
        return self.root / "trajectories.jsonl"

    @property
    def lock(self) -> Path:
        return self.root / ".lock"

    def task_dir(self, key: str) -> Path:
        return self.root / "tasks" / key

    def workspace(self, key: str) -> Path:
        return self.root / "work" / key
