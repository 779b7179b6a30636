"""A finished task's trajectories: ATIF and ShareGPT files beside its session record, and
the hermes-agent batch line that goes into the run's `trajectories.jsonl`.

Built from the session record by the exporters in baseagent.export, so a batch trajectory
is byte-for-byte what `baseagent export` gives for the same thread.
"""
from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

from baseagent.export.log import SessionLog, linear_messages, read_log
from baseagent.fsutil import atomic_write

ATIF_FILE = "atif.json"
SHAREGPT_FILE = "sharegpt.json"
HERMES_FILE = "trajectory.json"
# Our tool results that failed start with this (tools/registry.py), as hermes' own
# heuristic for plain-text results expects.
ERROR_PREFIX = "error:"


def tool_stats(log: SessionLog, tool_names: list[str]) -> dict[str, dict[str, int]]:
    """hermes' `{tool: {count, success, failure}}`, with every known tool present (so every
    line has the same schema, which dataset loaders require)."""
    stats = {name: {"count": 0, "success": 0, "failure": 0} for name in tool_names}
    names: dict[str, str] = {}
    for message in linear_messages(log):
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or []:
                name = str((call.get("function") or {}).get("name", ""))
                names[str(call.get("id"))] = name
                stats.setdefault(name, {"count": 0, "success": 0, "failure": 0})["count"] += 1
        elif message.get("role") == "tool":
            name = names.get(str(message.get("tool_call_id")))
            if name is None:
                continue
            content = message.get("content")
            text = content if isinstance(content, str) else json.dumps(content)
            failed = not text or text.strip().lower().startswith(ERROR_PREFIX)
            stats[name]["failure" if failed else "success"] += 1
    return stats


def api_calls(log: SessionLog) -> int:
    return sum(int((entry.usage or {}).get("calls") or 0) for entry in log.entries
               if entry.kind == "message")


def write_trajectories(record: Path | SessionLog, task_dir: Path, *, task: dict[str, Any],
                       agent_status: str, tool_names: list[str]) -> dict[str, Any]:
    """Write atif.json, sharegpt.json and trajectory.json (the hermes line) into `task_dir`
    from the thread's JSONL record or its log (read from another store); returns the hermes
    line. Raises SessionLoadError or ValueError when the record cannot be exported (the
    caller reports it on the task's result)."""
    from baseagent.export.atif import to_atif
    from baseagent.export.sharegpt import to_sharegpt

    log = record if isinstance(record, SessionLog) else read_log(record)
    atif = to_atif(log)
    sharegpt = to_sharegpt(log)
    stats = tool_stats(log, tool_names)
    hermes = {
        "prompt_index": task["index"],
        "id": task["id"],
        "conversations": sharegpt["conversations"],
        "metadata": {"batch_num": 0, "timestamp": _dt.datetime.now().isoformat(),
                     "model": log.model, "thread_id": log.thread_id,
                     **(task.get("metadata") or {})},
        "completed": agent_status == "completed",
        "partial": False,
        "api_calls": api_calls(log),
        "toolsets_used": [],
        "tool_stats": stats,
        "tool_error_counts": {name: s["failure"] for name, s in stats.items()},
    }
    for name, data in ((ATIF_FILE, atif), (SHAREGPT_FILE, sharegpt), (HERMES_FILE, hermes)):
        atomic_write(task_dir / name,
                     json.dumps(data, ensure_ascii=False).encode("utf-8", "replace"))
    return hermes
