"""Batch throughput: `baseagent batch` (local processes and Ray) against a shell loop that
calls `baseagent` once per task, on the same scripted tasks.

    python bench/batch_bench.py                     # 200 tasks, 2 workers, 20-task loop
    python bench/batch_bench.py --tasks 40 --loop-tasks 5 --no-ray   # a quick look

Every task is three model calls (write a file, `cat` it, answer; verification off) against
the project's scripted OpenAI-compatible server, run in this process with zero model
latency, so what is measured is the agent's own cost. Each task runs in its own copy of a
small template workspace and has a `check` command, like a benchmark task.

Measured, per mode: wall time and tasks per minute (spawn to exit of the whole command);
CPU of the whole command and everything it started (getrusage of the reaped children: the
driver, its workers, their commands); CPU per task once workers are warm, two ways: the
marginal CPU of the full batch over a 2-task batch of the same mode ((cpu_N - cpu_2) /
(N - 2), so worker start-up and the litellm import cancel out), and the median of the
workers' own `cpu_s` per task from results.jsonl (the worker process, without its
commands). Writes bench/BATCH_RESULTS.md and bench/out/batch.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from baseagent.testing.keyed import KeyedResponder  # noqa: E402
from baseagent.testing.scripted_server import ScriptedServer  # noqa: E402

AGENT = ROOT / "agent.py"
TARGET_SPEEDUP = 5.0
TARGET_CPU_PER_TASK = 0.3


def steps(n: int) -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "write_file",
                         "arguments": {"file_path": f"out_{n}.txt", "content": f"task {n}\n"}}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": f"cat out_{n}.txt"}}]},
        {"content": f"wrote out_{n}.txt"},
    ]


def instruction(n: int) -> str:
    return f"bench task {n}: write out_{n}.txt"


def make_tasks(path: Path, count: int, template: Path) -> None:
    with open(path, "w") as handle:
        for n in range(count):
            handle.write(json.dumps({"id": f"b{n}", "instruction": instruction(n),
                                     "workspace": str(template),
                                     "check": f"grep -qx 'task {n}' out_{n}.txt"}) + "\n")


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BASEAGENT_")}
    env.update(HOME=str(home), OPENAI_API_KEY="sk-bench-dummy",
               LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONPATH=str(ROOT / "src"))
    return env


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """Wall time and CPU (user+sys of everything reaped under it) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return {"wall_s": wall, "cpu_s": cpu, "stdout": proc.stdout}


def run_batch(mode: str, count: int, work: Path, api_base: str, workers: int,
              template: Path) -> dict[str, Any]:
    tasks = work / f"{mode}-{count}.jsonl"
    make_tasks(tasks, count, template)
    out = work / f"out-{mode}-{count}"
    cmd = [sys.executable, str(AGENT), "batch", str(tasks), "--out", str(out),
           "--workers", str(workers), "--backend", mode, "--json", "--no-verify",
           "--model", "openai/bench", "--api-base", api_base]
    measured = timed(cmd, env_for(work / "home"), work)
    summary = json.loads(measured.pop("stdout"))
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    if summary["passed"] != count:
        raise SystemExit(f"{mode}: only {summary['passed']} of {count} tasks passed")
    return {**measured, "tasks": count, "summary": summary,
            "worker_cpu_per_task_median_s": statistics.median(r["cpu_s"] for r in results),
            "worker_cpu_per_task_p95_s": sorted(r["cpu_s"] for r in results)[
                max(0, int(len(results) * 0.95) - 1)],
            "task_time_p50_s": summary["task_time_p50_s"]}


LOOP = r'''
set -e
n=0
while IFS= read -r line; do
  rm -rf "work/$n"; cp -r "$TEMPLATE" "work/$n"
  (cd "work/$n" && "$PYTHON" "$AGENT" --model openai/bench --api-base "$API_BASE" \
      --no-verify --json --instruction "$line" > /dev/null)
  n=$((n+1))
done < instructions.txt
'''


def run_loop(count: int, work: Path, api_base: str, template: Path) -> dict[str, Any]:
    loop_dir = work / "loop"
    (loop_dir / "work").mkdir(parents=True, exist_ok=True)
    (loop_dir / "instructions.txt").write_text("".join(instruction(n) + "\n"
                                                       for n in range(count)))
    env = {**env_for(work / "home"), "TEMPLATE": str(template), "PYTHON": sys.executable,
           "AGENT": str(AGENT), "API_BASE": api_base}
    measured = timed(["bash", "-c", LOOP], env, loop_dir)
    measured.pop("stdout")
    return {**measured, "tasks": count}


def rate(entry: dict[str, Any]) -> float:
    return entry["tasks"] / entry["wall_s"] * 60


def report(data: dict[str, Any]) -> str:
    loop = data["loop"]
    rows = []
    for mode in ("local", "ray"):
        if mode not in data:
            continue
        full, small = data[mode]["full"], data[mode]["small"]
        speedup = rate(full) / rate(loop)
        if mode == "local":
            marginal = (full["cpu_s"] - small["cpu_s"]) / (full["tasks"] - small["tasks"])
            cpu, per_task = f"{full['cpu_s']:.1f} s", f"{marginal:.3f} s"
        else:
            # Ray's workers are children of its raylet, not of the command: getrusage does
            # not see them, so the warm figure is the workers' own cpu_s.
            marginal = full["worker_cpu_per_task_median_s"]
            cpu, per_task = f"{full['cpu_s']:.1f} s (driver only)", "n/a (see below)"
        data[mode]["cpu_per_warm_task_s"] = marginal
        rows.append(
            f"| `batch --backend {mode} --workers {data['workers']}` | {full['tasks']} | "
            f"{full['wall_s']:.1f} s | {rate(full):.1f} | {speedup:.1f}x | "
            f"{cpu} | {per_task} | "
            f"{full['worker_cpu_per_task_median_s']:.3f} s "
            f"(p95 {full['worker_cpu_per_task_p95_s']:.3f} s) | {full['task_time_p50_s']:.2f} s |")
    rows.append(f"| shell loop, one `baseagent` per task | {loop['tasks']} | "
                f"{loop['wall_s']:.1f} s | {rate(loop):.1f} | 1.0x | {loop['cpu_s']:.1f} s | "
                f"{loop['cpu_s'] / loop['tasks']:.3f} s (all of it) | — | "
                f"{loop['wall_s'] / loop['tasks']:.2f} s |")
    verdicts = []
    for mode in ("local", "ray"):
        if mode in data:
            full = data[mode]["full"]
            speedup = rate(full) / rate(loop)
            marginal = data[mode]["cpu_per_warm_task_s"]
            verdicts.append(
                f"- {mode}: {speedup:.1f}x the loop's tasks per minute (target ≥ "
                f"{TARGET_SPEEDUP:g}x: {'pass' if speedup >= TARGET_SPEEDUP else 'miss'}); "
                f"{marginal:.3f} s CPU per warm task (target < {TARGET_CPU_PER_TASK:g} s: "
                f"{'pass' if marginal < TARGET_CPU_PER_TASK else 'miss'})")
    return "\n".join([
        "# Batch throughput",
        "",
        f"`python bench/batch_bench.py --tasks {data['tasks']} --loop-tasks {loop['tasks']}` "
        f"on {data['machine']} ({data['date']}; load average at start {data['load']}). "
        "Three model calls per task (write_file, shell `cat`, answer; `--no-verify`), each "
        "task in its own copy of a template workspace with a `check` command, against the "
        "scripted server with zero model latency (so this is the agent's own cost).",
        "",
        "| run | tasks | wall | tasks/min | vs loop | CPU, whole command | CPU per warm task "
        "(marginal) | worker CPU per task (median) | task time p50 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        *verdicts,
        "",
        "CPU, whole command: user+sys of the command and everything it started (getrusage "
        "of reaped children). CPU per warm task: (CPU of the full batch - CPU of a 2-task "
        "batch of the same mode) / (tasks - 2), so worker start-up (imports, "
        "Ray's own processes) cancels out. Worker CPU per task: the worker process's own "
        "`cpu_s` from results.jsonl (without the task's commands). The loop's per-task "
        "figures include a process start-up every time (the interpreter and the agent's "
        "imports), which is what batching saves. "
        "Ray's workers are children of Ray's raylet, not of the command, so getrusage sees "
        "only the driver there; its verdict uses the workers' median `cpu_s`.",
        "",
        "## Reading these numbers",
        "",
        f"- A task costs the loop {loop['cpu_s'] / loop['tasks']:.2f} s of CPU, all of it a "
        "fresh process. Until 2026-11-23 that was 7.6 s, mostly litellm's import; since "
        "the direct path (issue 26) an OpenAI-compatible run never imports litellm, so the "
        "loop got ~20x cheaper and the ratio \"vs loop\" fell although the batch itself "
        "got faster (2026-11-23: 137 tasks/min local, 117 Ray, on a loaded machine).",
        "- Ray's wall time includes starting a local Ray instance (~7 s here) and its "
        "actors' imports: a fixed cost that dominates a run this short. Its warm workers "
        "cost about what local ones do per task (the CPU columns).",
        "- Reproduce: `python bench/batch_bench.py` (~1 minute on 2 cores; `--no-ray` skips "
        "Ray). Raw data: `bench/out/batch.json`.",
        "",
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--loop-tasks", type=int, default=20,
                        help="tasks for the shell loop (its rate does not depend on N)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "BATCH_RESULTS.md")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "out" / "batch.json")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="batch-bench-"))
    template = work / "template"
    (template / "src").mkdir(parents=True)
    (template / "README.md").write_text("a small project\n")
    (template / "src" / "main.py").write_text("print('hello')\n")
    (work / "home").mkdir()
    count = max(args.tasks, args.loop_tasks)
    server = ScriptedServer(KeyedResponder(
        {instruction(n): steps(n) for n in range(count)}.get)).start()
    data: dict[str, Any] = {
        "tasks": args.tasks, "workers": args.workers,
        "machine": f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}",
        "date": time.strftime("%Y-%m-%d"), "load": " ".join(f"{x:.1f}" for x in os.getloadavg())}
    try:
        for mode in ("local",) + (() if args.no_ray else ("ray",)):
            print(f"{mode}: 2 tasks (start-up cost)...", file=sys.stderr, flush=True)
            small = run_batch(mode, 2, work, server.api_base, args.workers, template)
            print(f"{mode}: {args.tasks} tasks...", file=sys.stderr, flush=True)
            full = run_batch(mode, args.tasks, work, server.api_base, args.workers, template)
            data[mode] = {"small": small, "full": full}
            print(f"{mode}: {rate(full):.1f} tasks/min", file=sys.stderr, flush=True)
        print(f"loop: {args.loop_tasks} tasks...", file=sys.stderr, flush=True)
        data["loop"] = run_loop(args.loop_tasks, work, server.api_base, template)
        print(f"loop: {rate(data['loop']):.1f} tasks/min", file=sys.stderr, flush=True)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    text = report(data)
    args.out.write_text(text)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(data, indent=2, default=str))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
