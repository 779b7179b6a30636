"""Batch pieces that need no worker: the task file, the results checkpoint, the summary, and
the driver's scheduling (timeouts, retries, stop) against an in-memory backend."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from baseagent.batch.backend import BatchError, Outcome
from baseagent.batch.driver import BatchOptions, StopFlag, run_batch
from baseagent.batch.results import ResultsWriter, finished_ids, read_results
from baseagent.batch.summary import percentile, summarize
from baseagent.batch.tasks import TaskFileError, load_tasks, task_key
from baseagent.config.settings import Settings


def write_lines(path: Path, *lines: Any) -> Path:
    path.write_text("".join((l if isinstance(l, str) else json.dumps(l)) + "\n" for l in lines))
    return path


# -- task file -----------------------------------------------------------------------------------

def test_task_lines_ids_hermes_prompts_and_workspaces(tmp_path: Path) -> None:
    (tmp_path / "tmpl").mkdir()
    tasks = load_tasks(write_lines(
        tmp_path / "t.jsonl",
        {"id": "a", "instruction": "do a", "workspace": "tmpl", "setup": "true",
         "check": "test -e x", "model": "openai/m", "metadata": {"k": 1}},
        "",
        {"prompt": "hermes style"},
        {"id": 7, "instruction": "numeric id"}))
    assert [t.id for t in tasks] == ["a", "3", "7"]  # a missing id is the line number
    assert tasks[0].workspace == (tmp_path / "tmpl").resolve()
    assert tasks[0].metadata == {"k": 1} and tasks[0].model == "openai/m"
    assert tasks[1].instruction == "hermes style" and tasks[1].workspace is None
    assert [t.index for t in tasks] == [0, 2, 3]


@pytest.mark.parametrize("line, message", [
    ("{not json", "line 1: invalid JSON"),
    ('["a"]', "line 1: a task must be a JSON object"),
    ('{"id": "x"}', "line 1: instruction (or hermes' prompt) must be a non-empty string"),
    ('{"instruction": "  "}', "must be a non-empty string"),
    ('{"instruction": "a", "chek": "true"}', "line 1: unknown key(s) chek"),
    ('{"instruction": "a", "prompt": "b"}', "either instruction or prompt"),
    ('{"instruction": "a", "workspace": "nowhere"}', "workspace is not a directory"),
    ('{"instruction": "a", "metadata": [1]}', "metadata must be an object"),
    ('{"instruction": "a", "id": true}', "id must be"),
])
def test_bad_task_lines_name_the_line(tmp_path: Path, line: str, message: str) -> None:
    with pytest.raises(TaskFileError, match=None) as info:
        load_tasks(write_lines(tmp_path / "t.jsonl", line))
    assert message in str(info.value)


def test_duplicate_ids_and_empty_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="line 2: duplicate id 'a' \\(first on line 1\\)"):
        load_tasks(write_lines(tmp_path / "t.jsonl", {"id": "a", "instruction": "x"},
                               {"id": "a", "instruction": "y"}))
    with pytest.raises(TaskFileError, match="holds no task"):
        load_tasks(write_lines(tmp_path / "e.jsonl", ""))
    with pytest.raises(TaskFileError, match="not found"):
        load_tasks(tmp_path / "missing.jsonl")


def test_task_keys_are_safe_directory_names() -> None:
    assert task_key("task-1.b") == "task-1.b"
    for awkward in ("a/b", "../up", ".", "..", "with space", "é"):
        key = task_key(awkward)
        assert "/" not in key and key not in (".", "..") and " " not in key
    assert task_key("a/b") != task_key("a_b")


# -- results checkpoint ---------------------------------------------------------------------------

def test_results_writer_cuts_a_torn_line_and_interrupted_is_not_finished(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"id":"a","status":"passed"}\n{"id":"b","status":"interrupted"}\n'
                     b'{"id":"c","status":"pas')  # killed mid-write
    assert [r["id"] for r in read_results(path)] == ["a", "b"]
    assert finished_ids(read_results(path)) == {"a"}
    writer = ResultsWriter(path)
    writer.append({"id": "c", "status": "failed"})
    writer.close()
    assert path.read_bytes().endswith(b'"interrupted"}\n{"id":"c","status":"failed"}\n')
    assert finished_ids(read_results(path)) == {"a", "c"}


def test_summary_counts_the_last_result_of_each_task_and_percentiles() -> None:
    assert percentile([], 0.5) is None
    assert percentile([1, 2, 3, 4], 0.5) == 2.5
    assert percentile([float(i) for i in range(1, 101)], 0.95) == pytest.approx(95.05)
    records = [
        {"id": "a", "status": "interrupted", "duration_s": 9},
        {"id": "a", "status": "passed", "duration_s": 1.0, "cost_usd": 0.5,
         "usage": {"input_tokens": 10, "cached_input_tokens": 4, "output_tokens": 2}},
        {"id": "b", "status": "failed", "duration_s": 3.0, "cost_usd": 0.25,
         "usage": {"input_tokens": 5, "cached_input_tokens": 0, "output_tokens": 1}},
        {"id": "c", "status": "error", "duration_s": 2.0, "usage": None},
        {"id": "gone", "status": "passed", "duration_s": 100},  # no longer in the task file
    ]
    summary = summarize(["a", "b", "c", "d"], records, wall_time_s=60, ran=3, interrupted=False)
    assert (summary["tasks"], summary["passed"], summary["failed"], summary["errored"],
            summary["not_run"]) == (4, 1, 1, 1, 1)
    assert summary["tokens"] == {"input_tokens": 15, "cached_input_tokens": 4, "output_tokens": 3}
    assert summary["cost_usd"] == 0.75
    assert summary["task_time_p50_s"] == 2.0 and summary["tasks_per_minute"] == 3.0


# -- the driver against an in-memory backend ------------------------------------------------------

class FakeBackend:
    """Workers that answer from `behaviour[task_id]`: a list of per-attempt actions,
    "pass" | "fail" | "crash" | "hang" (never answers; answers `interrupted` when cancelled
    unless it is "stuck")."""

    def __init__(self, behaviour: dict[str, list[str]], workers: int = 2) -> None:
        self.behaviour = {k: list(v) for k, v in behaviour.items()}
        self.slots: dict[int, str | None] = {n: None for n in range(workers)}
        self.queue: list[Outcome] = []
        self.hanging: dict[int, tuple[str, str]] = {}
        self.cancels: list[tuple[int, str]] = []
        self.replaced: list[int] = []
        self.submitted: list[str] = []

    def start(self) -> None: ...

    def idle_slots(self) -> list[int]:
        return [n for n, t in self.slots.items() if t is None]

    def busy(self) -> bool:
        return any(self.slots.values())

    def submit(self, slot: int, task: dict[str, Any]) -> None:
        self.slots[slot] = task["id"]
        self.submitted.append(task["id"])
        action = self.behaviour[task["id"]].pop(0)
        if action in ("hang", "stuck"):
            self.hanging[slot] = (task["id"], action)
        elif action == "crash":
            self.slots[slot] = None
            self.queue.append(Outcome(slot, "crashed", reason="the worker process died"))
        else:
            self._done(slot, task["id"], "passed" if action == "pass" else "failed")

    def _done(self, slot: int, task_id: str, status: str) -> None:
        self.slots[slot] = None
        self.queue.append(Outcome(slot, "done", payload={"result": {
            "id": task_id, "status": status, "duration_s": 0.01}}))

    def poll(self, timeout: float) -> list[Outcome]:
        out, self.queue = self.queue, []
        if not out:
            time.sleep(min(timeout, 0.02))
        return out

    def cancel(self, slot: int, reason: str) -> None:
        self.cancels.append((slot, reason))
        task = self.hanging.get(slot)
        if task is not None and task[1] == "hang":
            del self.hanging[slot]
            self._done(slot, task[0], "interrupted")

    def replace(self, slot: int) -> None:
        self.replaced.append(slot)
        self.hanging.pop(slot, None)
        self.slots[slot] = None

    def close(self) -> None: ...


def fake_batch(tmp_path: Path, behaviour: dict[str, list[str]], stop: StopFlag | None = None,
               **options: Any) -> tuple[dict[str, Any], FakeBackend, list[dict[str, Any]]]:
    tasks = write_lines(tmp_path / "tasks.jsonl",
                        *({"id": i, "instruction": f"do {i}"} for i in behaviour))
    backend = FakeBackend(behaviour)
    summary = run_batch(Settings(), BatchOptions(tasks, tmp_path / "out", **options), env={},
                        stop=stop, backend_factory=lambda *_: backend)
    return summary, backend, read_results(tmp_path / "out" / "results.jsonl")


def test_infrastructure_failures_are_retried_model_failures_are_not(tmp_path: Path) -> None:
    summary, backend, results = fake_batch(
        tmp_path, {"ok": ["pass"], "bad": ["fail", "pass"], "flaky": ["crash", "pass"],
                   "dead": ["crash", "crash"]}, retries=1)
    by_id = {r["id"]: r for r in results}
    assert by_id["bad"]["status"] == "failed" and by_id["bad"]["attempts"] == 1
    assert by_id["flaky"]["status"] == "passed" and by_id["flaky"]["attempts"] == 2
    assert by_id["dead"] == {**by_id["dead"], "status": "error", "attempts": 2,
                             "error": "the worker process died"}
    assert sorted(backend.submitted) == ["bad", "dead", "dead", "flaky", "flaky", "ok"]
    assert (summary["passed"], summary["failed"], summary["errored"]) == (2, 1, 1)


def test_a_task_past_its_timeout_is_cancelled_then_its_worker_replaced(tmp_path: Path) -> None:
    summary, backend, results = fake_batch(
        tmp_path, {"hang": ["hang"], "stuck": ["stuck"], "ok": ["pass"]},
        task_timeout=0.2, cancel_grace=0.3)
    by_id = {r["id"]: r for r in results}
    assert by_id["hang"]["status"] == "error"
    assert by_id["hang"]["error"] == "task timed out after 0.2 s"
    assert by_id["stuck"]["status"] == "error"
    assert "did not stop its task when cancelled" in by_id["stuck"]["error"]
    assert by_id["ok"]["status"] == "passed"
    assert len(backend.replaced) == 1 and len(backend.cancels) == 2


def test_a_stop_cancels_running_tasks_records_them_interrupted_and_starts_nothing(
        tmp_path: Path) -> None:
    stop = StopFlag()

    class Stopping(FakeBackend):
        def poll(self, timeout: float) -> list[Outcome]:
            if len(self.hanging) == 2:
                stop.set("received SIGINT")
            return super().poll(timeout)

    tasks = write_lines(tmp_path / "tasks.jsonl",
                        *({"id": i, "instruction": i} for i in ("a", "b", "c")))
    backend = Stopping({"a": ["hang"], "b": ["hang"], "c": ["pass"]})
    summary = run_batch(Settings(), BatchOptions(tasks, tmp_path / "out"), env={}, stop=stop,
                        backend_factory=lambda *_: backend)
    results = read_results(tmp_path / "out" / "results.jsonl")
    assert {r["id"]: r["status"] for r in results} == {"a": "interrupted", "b": "interrupted"}
    assert backend.submitted == ["a", "b"]
    assert summary["batch_interrupted"] and summary["not_run"] == 1
    assert summary["interrupted"] == 2


def test_a_rerun_runs_only_unfinished_tasks_and_one_batch_per_directory(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").write_text(
        '{"id":"a","status":"passed"}\n{"id":"b","status":"interrupted"}\n')
    _summary, backend, _results = fake_batch(tmp_path, {"a": ["pass"], "b": ["pass"],
                                                        "c": ["pass"]})
    assert sorted(backend.submitted) == ["b", "c"]

    import fcntl
    import os

    fd = os.open(out / ".lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with pytest.raises(BatchError, match="another batch is running"):
            fake_batch(tmp_path, {"a": ["pass"]})
    finally:
        os.close(fd)


def test_batch_options_are_checked() -> None:
    for bad, message in (({"workers": 0}, "--workers"), ({"retries": -1}, "--retries"),
                         ({"task_timeout": 0}, "--task-timeout"),
                         ({"backend": "slurm"}, "unknown backend"),
                         ({"ray_address": "x:1"}, "--ray-address needs --backend ray")):
        with pytest.raises(BatchError, match=message):
            BatchOptions(Path("t"), Path("o"), **bad)


def test_progress_on_a_terminal_and_off_one() -> None:
    import io

    from rich.console import Console

    from baseagent.batch.progress import PlainProgress, RichProgress

    screen = io.StringIO()
    bar = RichProgress(Console(file=screen, force_terminal=True, width=160, color_system=None))
    bar.start(total=3, done=1, todo=2, workers=2)
    bar._bar.refresh()
    assert "starting workers" in screen.getvalue()  # from the first second
    bar.task_started("a", 1)
    bar.task_started("b", 1)
    bar._bar.refresh()
    assert "2 running" in screen.getvalue()
    bar.finished({"id": "a", "status": "passed", "duration_s": 1.0})
    bar.finished({"id": "b", "status": "error", "duration_s": 2.0, "error": "boom"})
    bar.note("task c: retrying")
    bar.close()
    text = screen.getvalue()
    assert "3/3" in text and "1 passed" in text and "1 errors" in text and "/min" in text
    assert "b: error: boom" in text and "resuming: 1 of 3" in text

    lines = io.StringIO()
    plain = PlainProgress(lines)
    plain.start(total=3, done=1, todo=2, workers=2)
    plain.task_started("a", 1)
    plain.finished({"id": "a", "status": "failed", "duration_s": 1.25, "error": "limit"})
    plain.task_started("b", 2)
    assert lines.getvalue().splitlines() == [
        "baseagent batch: resuming: 1 of 3 tasks already finished, 2 to run",
        "baseagent batch: 2 tasks to run; starting 2 workers (each loads the model client "
        "first)",
        "baseagent batch: [1/3] a started",
        "baseagent batch: [2/3] a failed 1.2s: limit",
        "baseagent batch: [2/3] b started (attempt 2)"]


def test_a_cancel_names_its_attempt_early_ones_apply_late_ones_never_leak(
        tmp_path: Path) -> None:
    from baseagent.batch.worker import TaskRunner

    settings = Settings(session_dir=tmp_path / "s").model_dump(mode="json")
    runner = TaskRunner(settings, {"PATH": os.environ["PATH"]}, str(tmp_path / "out"))
    runner.cancel("early", "a#1")  # reaches the worker before the task starts
    first = runner.run({"id": "a", "instruction": "x", "index": 0, "attempt": 1,
                        "setup": "sleep 30"})["result"]
    assert first["status"] == "interrupted"
    assert first["error"] == "interrupted during setup (early)"
    assert first["duration_s"] < 10
    runner.cancel("late", "a#1")  # the driver's cancel crossed the result on the way
    second = runner.run({"id": "a", "instruction": "x", "index": 0, "attempt": 2,
                         "setup": "echo broken; exit 3"})["result"]
    assert second["status"] == "error"
    assert second["error"] == "setup failed with exit code 3: broken"
    assert second["setup"] == {"exit_code": 3, "output": "broken\n"}
