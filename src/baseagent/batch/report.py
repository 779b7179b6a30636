"""`baseagent batch report DIR`: one self-contained HTML file of a batch's results.

Everything the page needs is in the file: its CSS, its script, the serve page's render.js
and markdown.js (so a task's transcript is drawn exactly as `baseagent serve` draws a
thread), and the per-task data as one JSON document in a `<script type="application/json">`
block. No network, no CDN. Every string from a task (a model's answer, a command line, a
check's output, a file's diff) is data: the JSON is escaped so that it can never close its
script block, and the page sets it as text, never as HTML.

Per task: status, why it did not pass (the error, the check's output), tokens, cost, wall
time, model calls, the workspace diff against the template (bounded) and the transcript
(the session record's events, serve/transcript.py). A summary: pass rate, counts, totals,
and an inline SVG of each task's duration and tokens. Filters by status.
"""
from __future__ import annotations

import difflib
import html
import json
import os
import re
from pathlib import Path
from typing import Any

from baseagent.batch.layout import Layout
from baseagent.batch.results import latest, read_results

STATIC = Path(__file__).resolve().parent.parent / "serve" / "static"
# Bounds: a report stays a file a browser opens at once, whatever the tasks did.
MAX_TEXT = 20_000          # one check output / error / answer (the end is kept)
MAX_DIFF = 60_000          # one task's workspace diff
MAX_DIFF_FILES = 200       # files compared per task
MAX_FILE_BYTES = 256_000   # a larger file is reported as changed, not diffed
MAX_EVENTS = 2_000         # transcript events per task
SKIP_DIRS = frozenset({".git", "__pycache__", ".venv", "node_modules"})


def _inside(value: Any, root: Path) -> Path | None:
    """A path results.jsonl names, if it lies under the batch's directory (a workspace, a
    task's records): a line naming another place is not read."""
    if not isinstance(value, str) or not value:
        return None
    try:
        path = Path(value).resolve()
        path.relative_to(root.resolve())
    except (OSError, ValueError):
        return None
    return path


def _tail(text: Any, limit: int = MAX_TEXT) -> Any:
    if not isinstance(text, str) or len(text) <= limit:
        return text
    return f"[{len(text) - limit} characters cut]\n" + text[-limit:]


def _files(root: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    if not root.is_dir():
        return out
    for base, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(names):
            path = Path(base) / name
            if path.is_symlink() or not path.is_file():
                continue
            out[str(path.relative_to(root))] = path
    return out


def _read(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return b"\0large"
        return path.read_bytes()
    except OSError:
        return None


def workspace_diff(template: Path | None, workspace: Path) -> str | None:
    """A unified diff from the template to the task's workspace copy, bounded (None when
    the copy is gone). A task without a template diffs against an empty directory."""
    if not workspace.is_dir():
        return None
    before = _files(template) if template is not None else {}
    after = _files(workspace)
    parts: list[str] = []
    size = 0
    names = sorted(set(before) | set(after))
    for count, name in enumerate(names):
        old, new = _read(before.get(name)), _read(after.get(name))
        if old == new:
            continue
        if count >= MAX_DIFF_FILES or size > MAX_DIFF:
            parts.append(f"[diff cut: more than {MAX_DIFF_FILES} files or {MAX_DIFF} characters]\n")
            break
        if (old or b"").startswith(b"\0large") or (new or b"").startswith(b"\0large") \
                or b"\0" in (old or b"") or b"\0" in (new or b""):
            text = f"Binary or large file {name} differs\n"
        else:
            a = (old or b"").decode("utf-8", "replace").splitlines(keepends=True)
            b = (new or b"").decode("utf-8", "replace").splitlines(keepends=True)
            text = "".join(line if line.endswith("\n") else line + "\n" for line in
                           difflib.unified_diff(a, b, "a/" + name if old is not None else "/dev/null",
                                                "b/" + name if new is not None else "/dev/null"))
        parts.append(text)
        size += len(text)
    diff = "".join(parts)
    return diff[:MAX_DIFF + 200]


def _session_records(result: dict[str, Any], root: Path) -> list[dict[str, Any]]:
    session = result.get("session")
    if not isinstance(session, str) or "#" in session:
        return []  # in the SQLite store: the events file stands in
    path = _inside(session, root)
    if path is None or not path.is_file():
        return []
    from baseagent.records.recorder import read_records

    try:
        return list(read_records(path))
    except OSError:
        return []


def _events(result: dict[str, Any], records: list[dict[str, Any]],
            root: Path) -> list[dict[str, Any]]:
    from baseagent.serve.transcript import recorded_events

    events = recorded_events(records) if records else []
    task_dir = _inside(result.get("task_dir"), root)
    if not events and task_dir is not None:
        path = task_dir / "events.jsonl"
        if path.is_file():
            for line in path.read_text("utf-8", "replace").splitlines():
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if isinstance(event, dict):
                    events.append(event)
    if len(events) > MAX_EVENTS:
        events = events[:MAX_EVENTS] + [{"type": "error",
                                         "message": f"[{len(events) - MAX_EVENTS} events cut]"}]
    return events


def _model_calls(records: list[dict[str, Any]]) -> int | None:
    if not records:
        return None
    return sum(int((r.get("usage") or {}).get("calls") or 0) for r in records
               if r.get("kind") == "message" and isinstance(r.get("usage"), dict))


def why(result: dict[str, Any]) -> str | None:
    """Why a task did not pass, in one line (None when it passed)."""
    if result.get("status") == "passed":
        return None
    if result.get("error"):
        return str(result["error"])
    check = result.get("check") or {}
    if check and not check.get("passed"):
        return f"check failed with exit code {check.get('exit_code')}"
    return f"agent status {result.get('agent_status')}"


def task_entry(result: dict[str, Any], root: Path) -> dict[str, Any]:
    """One task's data for the page, from its results.jsonl line and its files under
    `root` (the batch's directory)."""
    records = _session_records(result, root)
    workspace = result.get("workspace")
    template = result.get("template")
    copy = _inside(workspace, root)
    diff = workspace_diff(Path(template) if isinstance(template, str) and template else None,
                          copy) if copy is not None else None
    check = result.get("check") or None
    if check:
        check = {**check, "output": _tail(check.get("output"))}
    setup = result.get("setup") or None
    if setup:
        setup = {**setup, "output": _tail(setup.get("output"))}
    return {
        "id": result.get("id"), "status": result.get("status"),
        "agent_status": result.get("agent_status"), "why": why(result),
        "error": _tail(result.get("error")), "traceback": _tail(result.get("traceback")),
        "check": check, "setup": setup, "final_message": _tail(result.get("final_message")),
        "usage": result.get("usage"), "cost_usd": result.get("cost_usd"),
        "duration_s": result.get("duration_s"), "model_calls": _model_calls(records),
        "workspace": workspace, "diff": diff, "metadata": result.get("metadata"),
        "events": _events(result, records, root),
    }


def report_data(out_dir: Path) -> dict[str, Any]:
    layout = Layout(Path(out_dir))
    results = list(latest(read_results(layout.results)).values())
    tasks = [task_entry(r, layout.root) for r in results]
    summary = None
    if layout.summary.is_file():
        try:
            summary = json.loads(layout.summary.read_text("utf-8"))
        except ValueError:
            summary = None
    return {"dir": str(out_dir), "tasks": tasks, "summary": summary}


def _script_json(data: Any) -> str:
    """JSON that can sit inside a <script> block: no `<`, `>` or `&` survives as such."""
    text = json.dumps(data, ensure_ascii=False)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _inline_script(source: str) -> str:
    return source.replace("</", "<\\/")


def _svg(tasks: list[dict[str, Any]]) -> str:
    """Two bar rows per task: wall time and tokens, each scaled to its maximum."""
    if not tasks:
        return ""
    width, row = 480, 16
    durations = [float(t.get("duration_s") or 0) for t in tasks]
    tokens = [sum(int((t.get("usage") or {}).get(k) or 0) for k in ("input_tokens", "output_tokens"))
              for t in tasks]
    top_d, top_t = max(durations) or 1.0, max(tokens) or 1
    half = (width - 120) // 2
    rows = []
    for i, (task, d, n) in enumerate(zip(tasks, durations, tokens)):
        y = i * row + 20
        label = html.escape(str(task.get("id"))[:18])
        cls = html.escape(str(task.get("status")))
        rows.append(
            f'<text x="0" y="{y + 11}" class="label">{label}</text>'
            f'<rect x="120" y="{y}" width="{max(1, int(half * d / top_d))}" height="12" '
            f'class="bar-time {cls}"><title>{label}: {d:.1f} s</title></rect>'
            f'<rect x="{120 + half + 10}" y="{y}" width="{max(1, int((half - 10) * n / top_t))}" '
            f'height="12" class="bar-tokens"><title>{label}: {n} tokens</title></rect>')
    height = len(tasks) * row + 24
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{width}" '
            f'height="{height}" role="img" aria-label="durations and tokens per task">'
            f'<text x="120" y="12" class="head">wall time (max {top_d:.1f} s)</text>'
            f'<text x="{120 + half + 10}" y="12" class="head">tokens (max {top_t})</text>'
            + "".join(rows) + "</svg>")


def render_report(data: dict[str, Any]) -> str:
    tasks = data["tasks"]
    finished = [t for t in tasks if t.get("status") in ("passed", "failed", "error")]
    passed = sum(1 for t in tasks if t.get("status") == "passed")
    rate = f"{100 * passed / len(finished):.0f}%" if finished else "n/a"
    page = (STATIC / "report.html").read_text("utf-8")
    sources = [(STATIC / "markdown.js"), (STATIC / "render.js"), STATIC / "report.js"]
    scripts = "".join(f"<script>{_inline_script(path.read_text('utf-8'))}</script>\n"
                      for path in sources)
    values = {
        "APP_CSS": (STATIC / "app.css").read_text("utf-8").replace("</", "<\\/"),
        "TITLE": html.escape(f"batch report: {data['dir']}"),
        "RATE": html.escape(f"{rate} passed ({passed} of {len(finished)} finished, "
                            f"{len(tasks)} with a result)"),
        "PLOT": _svg(tasks),
        "DATA": _script_json(data),
        "SCRIPTS": scripts,
    }
    # One pass: a value (a task's text) is never searched for placeholders itself.
    return re.sub(r"\{\{([A-Z_]+)\}\}", lambda m: values[m.group(1)], page)


def build_report(out_dir: Path, target: Path | None = None) -> Path:
    """Write DIR/report.html (or `target`) and return its path."""
    target = target or Path(out_dir) / "report.html"
    text = render_report(report_data(Path(out_dir)))
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text, "utf-8")
    os.replace(tmp, target)
    return target
