"""The batch's totals: what summary.json holds, what `--json` prints, what a person reads.

Computed from results.jsonl (the last line of each task in the task file), so a resumed
batch's summary covers the whole batch, not only the tasks of the last run; the wall time
and the rate are the last run's.
"""
from __future__ import annotations

import json
import math
from typing import Any, Iterable, Sequence

from baseagent.batch.results import latest
from baseagent.cost_text import cost_text


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default); None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    value = ordered[low] + (ordered[high] - ordered[low]) * (position - low)
    return round(value, 3)


def summarize(task_ids: Sequence[str], records: Iterable[dict[str, Any]], *,
              wall_time_s: float, ran: int, interrupted: bool,
              extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """`task_ids`: every task of the task file; `ran`: results written by this run."""
    last = latest(records)
    mine = [last[i] for i in task_ids if i in last]
    counts = {status: sum(1 for r in mine if r.get("status") == status)
              for status in ("passed", "failed", "error", "interrupted")}
    tokens = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0}
    cost = 0.0
    cost_known = True
    for record in mine:
        for key in tokens:
            tokens[key] += int((record.get("usage") or {}).get(key) or 0)
        if record.get("usage") is not None:
            if record.get("cost_usd") is None:
                cost_known = False
            else:
                cost += float(record["cost_usd"])
    durations = [float(r["duration_s"]) for r in mine
                 if r.get("status") in ("passed", "failed", "error")
                 and isinstance(r.get("duration_s"), (int, float))]
    summary = {
        "tasks": len(task_ids),
        "passed": counts["passed"],
        "failed": counts["failed"],
        "errored": counts["error"],
        "interrupted": counts["interrupted"],
        "not_run": len(task_ids) - len(mine),
        "tokens": tokens,
        "cost_usd": round(cost, 6) if cost_known else None,
        "wall_time_s": round(wall_time_s, 3),
        "task_time_p50_s": percentile(durations, 0.5),
        "task_time_p95_s": percentile(durations, 0.95),
        "ran_this_run": ran,
        "tasks_per_minute": round(ran / wall_time_s * 60, 2) if wall_time_s > 0 and ran else 0.0,
        "batch_interrupted": interrupted,
    }
    summary.update(extra or {})
    return summary


def summary_line(summary: dict[str, Any]) -> str:
    return json.dumps(summary, ensure_ascii=False, separators=(",", ":"))


def render(summary: dict[str, Any]) -> str:
    """A few lines for a person."""
    tokens = summary["tokens"]
    p50, p95 = summary["task_time_p50_s"], summary["task_time_p95_s"]
    times = "n/a" if p50 is None else f"p50 {p50:.2f} s, p95 {p95:.2f} s"
    head = "batch interrupted" if summary["batch_interrupted"] else "batch finished"
    return (
        f"{head}: {summary['tasks']} tasks: {summary['passed']} passed, "
        f"{summary['failed']} failed, {summary['errored']} errored, "
        f"{summary['interrupted']} interrupted, {summary['not_run']} not run\n"
        f"tokens: {tokens['input_tokens']:,} in ({tokens['cached_input_tokens']:,} cached), "
        f"{tokens['output_tokens']:,} out; {cost_text(summary['cost_usd'])}\n"
        f"wall time {summary['wall_time_s']:.1f} s for {summary['ran_this_run']} tasks "
        f"({summary['tasks_per_minute']:.1f}/min); task time {times}\n"
    )
