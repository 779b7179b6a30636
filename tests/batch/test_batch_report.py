"""The batch report builder (batch/report.py): what each task's entry holds, the workspace
diff and its bounds, and the page's safety: a task's text is data, never markup."""
from __future__ import annotations

import json
import re
from pathlib import Path

from baseagent.batch import report
from baseagent.batch.report import build_report, report_data, render_report, workspace_diff

PAYLOAD = '</script><script>window.pwned=1</script><img src=x onerror="window.pwned=2">'


def _batch_dir(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    template = tmp_path / "template"
    template.mkdir()
    (template / "a.txt").write_text("one\ntwo\n")
    (template / "gone.txt").write_text("bye\n")
    work = out / "work" / "t1"
    work.mkdir(parents=True)
    (work / "a.txt").write_text("one\nTWO\n")
    (work / "new.txt").write_text("new\n")
    task_dir = out / "tasks" / "t1"
    task_dir.mkdir(parents=True)
    session = task_dir / "thread-1.jsonl"
    records = [
        {"kind": "event", "event": {"type": "thread.started", "thread_id": "thread-1"}},
        {"kind": "event", "event": {"type": "turn.started"}},
        {"kind": "message", "message": {"role": "user", "content": "do " + PAYLOAD}},
        {"kind": "event", "event": {"type": "item.completed", "item": {
            "id": "item_0", "type": "agent_message", "text": "answer " + PAYLOAD}}},
        {"kind": "message", "message": {"role": "assistant", "content": "x"},
         "usage": {"calls": 2}},
        {"kind": "event", "event": {"type": "turn.completed", "usage": {}}},
    ]
    session.write_text("".join(json.dumps(r) + "\n" for r in records))
    results = [
        {"id": "t0", "status": "passed", "usage": {"input_tokens": 10, "output_tokens": 5},
         "cost_usd": 0.01, "duration_s": 1.5, "check": {"exit_code": 0, "passed": True,
                                                        "output": ""}},
        {"id": "t1", "status": "failed", "agent_status": "completed",
         "error": "check failed with exit code 1: " + PAYLOAD,
         "check": {"exit_code": 1, "passed": False, "output": "x" * 50_000 + PAYLOAD},
         "usage": {"input_tokens": 100, "output_tokens": 20}, "cost_usd": None,
         "duration_s": 3.0, "workspace": str(work), "template": str(template),
         "task_dir": str(task_dir), "session": str(session)},
    ]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    return out


def test_each_task_has_its_status_reason_figures_diff_and_transcript(tmp_path: Path) -> None:
    data = report_data(_batch_dir(tmp_path))
    t0, t1 = data["tasks"]
    assert (t0["id"], t0["status"], t0["why"]) == ("t0", "passed", None)
    assert t1["why"].startswith("check failed with exit code 1")
    assert t1["model_calls"] == 2 and t1["duration_s"] == 3.0
    # the check's output is bounded, its end (where the failure is) kept
    assert len(t1["check"]["output"]) < 21_000 and t1["check"]["output"].endswith(PAYLOAD)
    assert "-two\n+TWO\n" in t1["diff"]
    assert "+++ b/new.txt" in t1["diff"] and "--- a/gone.txt" in t1["diff"]
    assert [e["type"] for e in t1["events"]] == [
        "thread.started", "turn.started", "turn.input", "item.completed", "turn.completed"]


def test_a_failed_check_without_error_text_still_says_why() -> None:
    assert report.why({"status": "failed", "check": {"exit_code": 3, "passed": False}}) == \
        "check failed with exit code 3"
    assert report.why({"status": "error", "error": "task timed out"}) == "task timed out"
    assert report.why({"status": "passed"}) is None


def test_the_page_is_self_contained_and_task_text_never_becomes_markup(tmp_path: Path) -> None:
    out = _batch_dir(tmp_path)
    page = build_report(out).read_text()
    assert page == (out / "report.html").read_text()
    # no network: no external script, stylesheet or image, and a CSP that allows none
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "default-src 'none'" in page
    # the data block holds the payload only escaped: it cannot close its script element
    block = page.split('<script type="application/json" id="report-data">', 1)[1]
    block = block.split("</script>", 1)[0]
    assert "<" not in block and ">" not in block
    assert json.loads(block)["tasks"][1]["error"].endswith(PAYLOAD)
    # the payload's markup appears nowhere as markup
    assert "<img src=x" not in page and "<script>window.pwned" not in page
    assert "<svg" in page and "50% passed (1 of 2 finished" in page


def test_placeholders_in_task_text_are_not_expanded(tmp_path: Path) -> None:
    out = _batch_dir(tmp_path)
    line = {"id": "{{SCRIPTS}}", "status": "error", "error": "{{DATA}} {{APP_CSS}}"}
    with open(out / "results.jsonl", "a") as handle:
        handle.write(json.dumps(line) + "\n")
    page = render_report(report_data(out))
    assert page.count("BaseagentRender = {") == 1
    assert "{{DATA}} {{APP_CSS}}" in page


def test_the_diff_is_bounded_and_binary_files_are_named(tmp_path: Path, monkeypatch) -> None:
    template, work = tmp_path / "t", tmp_path / "w"
    template.mkdir()
    work.mkdir()
    (work / "bin").write_bytes(b"\0\1\2")
    for n in range(30):
        (work / f"f{n:02}.txt").write_text("line\n" * 200)
    monkeypatch.setattr(report, "MAX_DIFF", 5_000)
    diff = workspace_diff(template, work)
    assert "Binary or large file bin differs" in diff
    assert "[diff cut" in diff and len(diff) <= 5_200
    assert workspace_diff(template, tmp_path / "missing") is None
    (work / ".git").mkdir()
    (work / ".git" / "HEAD").write_text("ref\n")
    assert ".git/HEAD" not in (workspace_diff(None, work) or "")


def test_a_line_naming_files_outside_the_batch_directory_is_not_read(tmp_path: Path) -> None:
    out = _batch_dir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "secret").mkdir(parents=True)
    (elsewhere / "secret" / "key.txt").write_text("SECRET\n")
    (elsewhere / "events.jsonl").write_text(json.dumps({"type": "error", "message": "SECRET"}))
    line = {"id": "t2", "status": "failed", "workspace": str(elsewhere / "secret"),
            "task_dir": str(elsewhere), "session": str(elsewhere / "events.jsonl")}
    with open(out / "results.jsonl", "a") as handle:
        handle.write(json.dumps(line) + "\n")
    t2 = report_data(out)["tasks"][2]
    assert (t2["diff"], t2["events"]) == (None, [])
    assert "SECRET" not in render_report(report_data(out))
