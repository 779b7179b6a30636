"""The batch report end to end: a real `baseagent batch` (one task passes, one fails its
check) against the scripted model, `baseagent batch report DIR`, and the file opened in a
real headless Chromium: the failed task's reason and transcript two clicks away, and HTML
in a command, an answer or a check's output shown as text."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from batch_helpers import responder, run_batch, write_task, write_tasks
from helpers import AGENT, agent_env
from conftest import TOKEN, require_serve
from test_browser import SHOTS, browser, by_css  # noqa: F401 - the fixture

PAYLOAD = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'


def _wait(check: Callable[[], Any], what: str, timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception:  # noqa: BLE001 - the page is still changing
            pass
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_failed_tasks_reason_and_transcript_are_two_clicks_away_and_inert(
        browser: Any, tmp_path: Path, scripted_server, home: Path) -> None:
    template = tmp_path / "template"
    template.mkdir()
    (template / "README").write_text("the template\n")
    tasks = [
        {"id": "good", "instruction": "task 0: write out_0.txt", "workspace": str(template),
         "check": 'grep -qx "hello 0" out_0.txt'},
        {"id": "bad", "instruction": "task 1: write out_1.txt", "workspace": str(template),
         "check": f"echo '{PAYLOAD}'; grep -qx 'hello 1' out_1.txt"},
    ]
    bad_script = [
        {"tool_calls": [{"name": "write_file", "arguments": {
            "file_path": "out_1.txt", "content": "wrong\n"}}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": f"echo '{PAYLOAD}'"}}]},
        {"content": f"done {PAYLOAD}"},
    ]
    server = scripted_server(responder({tasks[0]["instruction"]: write_task(0),
                                        tasks[1]["instruction"]: bad_script}))
    out = tmp_path / "out"
    proc = run_batch(write_tasks(tmp_path / "tasks.jsonl", tasks), out, server.api_base,
                     "--workers", "2", home=home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert lines["good"]["status"] == "passed" and lines["good"]["error"] is None
    assert lines["bad"]["status"] == "failed"
    assert lines["bad"]["error"].startswith("check failed with exit code 1")

    made = subprocess.run([sys.executable, str(AGENT), "batch", "report", str(out)],
                          env=agent_env(home), capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    assert made.stdout == ""  # stdout carries JSONL only; the path is said on stderr
    page = out / "report.html"
    assert str(page) in made.stderr

    browser.get(page.as_uri())
    _wait(lambda: by_css(browser, "#filters button"), "the filters")
    assert "50% passed" in by_css(browser, "#rate")[0].text
    assert by_css(browser, "svg.plot rect")
    if os.environ.get("BASEAGENT_SCREENSHOTS"):
        browser.save_screenshot(str(SHOTS / "batch-report-summary.png"))
    # click 1: only the failed tasks; click 2: the failed task
    by_css(browser, '#filters button[data-filter="failed"]')[0].click()
    _wait(lambda: [li.get_attribute("data-task") for li in by_css(browser, "#tasks li")]
          == ["bad"], "the failed tasks only")
    by_css(browser, '#tasks li[data-task="bad"]')[0].click()
    why = _wait(lambda: by_css(browser, "#detail .why")[0].text, "the reason")
    assert why.startswith("check failed with exit code 1")
    assert "model calls 3" in by_css(browser, "#detail .metrics")[0].text
    check = by_css(browser, "#detail .check-output")[0]
    assert check.is_displayed() and PAYLOAD in check.text
    transcript = _wait(lambda: by_css(browser, "#detail #transcript")[0].text, "the transcript")
    assert "task 1: write out_1.txt" in transcript
    assert f"echo '{PAYLOAD}'" in transcript  # the command, as text
    assert PAYLOAD in transcript  # the answer's markup, as text
    diff = browser.execute_script(
        "return document.querySelector('#detail .diff').textContent")
    assert "+++ b/out_1.txt" in diff and "+wrong" in diff
    # nothing of the payload ran or became an element
    assert browser.execute_script("return window.pwned") is None
    assert not by_css(browser, "#detail img") and not by_css(browser, "#detail script")
    if os.environ.get("BASEAGENT_SCREENSHOTS"):
        browser.save_screenshot(str(SHOTS / "batch-report-task.png"))

    # `serve --batch DIR`: the same report, built on each load, behind the server's login.
    require_serve()
    from baseagent.serve.command import Background, ServeOptions

    server = Background(ServeOptions(port=0, batch_dir=out, defaults={"cwd": str(tmp_path)}),
                        {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                        TOKEN)
    try:
        import httpx

        assert httpx.get(server.url + "/batch").status_code == 401
        served = httpx.get(server.url + "/batch", headers={"Authorization": f"Bearer {TOKEN}"})
        assert served.status_code == 200 and "report-data" in served.text
        assert "script-src 'unsafe-inline'" in served.headers["content-security-policy"]
        browser.get(f"{server.url}/?token={TOKEN}&view=batch")
        _wait(lambda: browser.current_url.endswith("/batch"), "the report's address")
        _wait(lambda: by_css(browser, '#tasks li[data-task="bad"]'), "the served report")
        by_css(browser, '#tasks li[data-task="bad"]')[0].click()
        why = _wait(lambda: by_css(browser, "#detail .why")[0].text, "the served reason")
        assert why.startswith("check failed with exit code 1")
        assert browser.execute_script("return window.pwned") is None
    finally:
        server.stop()
