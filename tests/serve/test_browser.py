"""The page in a real headless Chromium (Debian's chromium and chromium-driver, driven by
selenium): a person's path through it, against a live server and the scripted model.
Screenshots go to docs/img/ (docs/SERVE.md shows them) when BASEAGENT_SCREENSHOTS is set
(`BASEAGENT_SCREENSHOTS=1 python -m pytest -n 0 tests/serve/test_browser.py`)."""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from conftest import TOKEN, Api, TurnScripts, require_serve, start_server
from helpers import require

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "img"
# What a command line and a file name may hold: shown as text, never run as HTML or obeyed
# by a terminal.
HOSTILE = '<img src=x onerror="window.pwned=1"><b>bold</b>\x1b[31mred'


def _selenium() -> Any:
    try:
        import selenium
        return bool(selenium.__version__)
    except ImportError:
        return False


@pytest.fixture
def browser() -> Iterator[Any]:
    require_serve()
    require(_selenium(), "selenium is not installed (pip install -e '.[serve-test]')")
    require(os.path.exists(CHROMIUM) and os.path.exists(DRIVER),
            "Chromium is not installed (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,860", "--disable-extensions", "--no-first-run"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def wait(driver: Any, check: Callable[[], Any], what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - the page is still changing
            last = exc
        time.sleep(0.05)
    shot(driver, "failure")
    problem = driver.execute_script("return document.getElementById('problem').textContent")
    raise AssertionError(f"timed out waiting for {what} ({last}; the page says {problem!r})")


def shot(driver: Any, name: str) -> None:
    if os.environ.get("BASEAGENT_SCREENSHOTS") or name == "failure":
        target = SHOTS if name != "failure" else Path(os.environ.get("TMPDIR", "/tmp"))
        target.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(target / f"serve-{name}.png"))


def by_css(driver: Any, css: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, css)


def text_of(driver: Any, css: str) -> str:
    return " ".join(e.text for e in by_css(driver, css))


PATCH = """*** Begin Patch
*** Add File: greet.py
+def greet(name):
+    return f"hello, {name}"
*** Add File: notes <img src=x onerror="window.pwned=3">.txt
+odd name
*** End Patch"""


def test_a_person_drives_a_thread_through_the_page(browser: Any, scripts: TurnScripts,
                                                   workspace: Path, tmp_path: Path) -> None:
    server = start_server(scripts, workspace, tmp_path / "home")
    api = Api(server)
    (workspace / "notes.txt").write_text("keep me\n")
    (workspace / "app.py").write_text("def main():\n    return 1\n")
    scripts.scripts["tidy up the project"] = [
        {"content": "First I'll look at the files, then change them.",
         "tool_calls": [{"name": "update_plan", "arguments": {"plan": [
             {"step": "Print a greeting slowly", "status": "in_progress"},
             {"step": "Add greet.py", "status": "pending"}]}}]},
        {"tool_calls": [{"name": "shell", "arguments": {
            "command": f"echo '{HOSTILE}'; echo first line; sleep 3; echo second line"}}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "rm notes.txt"}}]},
        {"tool_calls": [{"name": "apply_patch", "arguments": {"input": PATCH}}]},
        {"tool_calls": [{"name": "update_plan", "arguments": {"plan": [
            {"step": "Print a greeting slowly", "status": "completed"},
            {"step": "Add greet.py", "status": "completed"}]}}]},
        {"content": "## Done\n\nI added `greet.py` and kept **notes.txt** as you asked.\n\n"
                    "- greeting printed\n- <script>window.pwned=2</script> stays text",
         "chunk_size": 6, "chunk_delay": 0.02},
    ]
    scripts.scripts["wait for something slow"] = [{"content": "too late", "delay": 60}]
    scripts.scripts["what did you change?"] = [{"content": "I added *greet.py*."}]
    try:
        browser.get(f"{server.url}/?token={TOKEN}")
        wait(browser, lambda: by_css(browser, "#new-input"), "the page")
        assert "token" not in browser.current_url  # the login leaves no token in the address
        # Start a task (the settings: approvals for everything but the known-safe commands).
        by_css(browser, "#new-input")[0].send_keys("tidy up the project")
        by_css(browser, "details summary")[0].click()
        from selenium.webdriver.support.ui import Select

        Select(by_css(browser, "#new-policy")[0]).select_by_visible_text("untrusted")
        by_css(browser, "#new-start")[0].click()
        wait(browser, lambda: "tidy up the project" in text_of(browser, ".message.user"),
             "the instruction in the conversation")
        # The plan, and the first question: approve it.
        wait(browser, lambda: "Add greet.py" in text_of(browser, "#plan"), "the plan")
        wait(browser, lambda: by_css(browser, ".approval button.approve"), "a question")
        question = text_of(browser, ".approval")
        assert HOSTILE.replace("\x1b", "\u241b") in question  # inert: shown, escape visible
        shot(browser, "approval")
        by_css(browser, ".approval button.approve")[0].click()
        # The command's output arrives while it runs.
        wait(browser, lambda: "first line" in text_of(browser, ".command .output"),
             "live output")
        assert "second line" not in text_of(browser, ".command .output")
        assert "in_progress" in text_of(browser, ".command .status")
        wait(browser, lambda: "second line" in text_of(browser, ".command .output"),
             "the rest of the output")
        # The second question: decline it with a note.
        wait(browser, lambda: len(by_css(browser, ".approval button.decline")) == 1
             and "rm notes.txt" in text_of(browser, ".approval"), "the second question")
        by_css(browser, ".approval input.note")[0].send_keys("keep the notes")
        by_css(browser, ".approval button.decline")[0].click()
        # The diff and the answer, rendered as Markdown.
        wait(browser, lambda: "hello, {name}" in text_of(browser, ".files pre.diff"),
             "the diff")
        wait(browser, lambda: by_css(browser, ".message.assistant h4"), "the answer")
        wait(browser, lambda: "tokens:" in text_of(browser, ".turn-end"), "the turn's usage")
        answer = text_of(browser, ".message.assistant")
        assert "<script>window.pwned=2</script> stays text" in answer
        assert by_css(browser, ".message.assistant code")[-1].text == "greet.py"
        assert "denied: keep the notes" in text_of(browser, ".decision")
        assert (workspace / "notes.txt").exists() and (workspace / "greet.py").exists()
        paths = [e.text for e in by_css(browser, ".files .path")]
        assert paths == ["greet.py", 'notes <img src=x onerror="window.pwned=3">.txt']
        # Nothing the model or a command wrote became markup or ran.
        assert browser.execute_script("return window.pwned") is None
        assert not by_css(browser, "#transcript img") and not by_css(browser, "#transcript script")
        assert "cost unknown" in text_of(browser, "#usage")
        shot(browser, "conversation")
        # Cancel a turn.
        by_css(browser, "#input")[0].send_keys("wait for something slow")
        by_css(browser, "#send")[0].click()
        wait(browser, lambda: by_css(browser, "#cancel")[0].is_displayed(), "the cancel button")
        by_css(browser, "#cancel")[0].click()
        wait(browser, lambda: "interrupted" in text_of(browser, ".turn-end.failed"),
             "the cancelled turn")
        # Resume the thread after it was closed (a restart leaves only the record).
        thread_id = browser.execute_script(
            "return document.querySelector('#threads li.open').dataset.thread")
        assert api.delete(f"/api/threads/{thread_id}").status_code == 204
        browser.refresh()
        wait(browser, lambda: by_css(browser, f"#threads li[data-thread='{thread_id}']"),
             "the thread in the list")
        by_css(browser, f"#threads li[data-thread='{thread_id}']")[0].click()
        wait(browser, lambda: by_css(browser, "#resume")[0].is_displayed(), "resume")
        assert not by_css(browser, "#input")[0].is_displayed()  # read-only until resumed
        wait(browser, lambda: "I added" in text_of(browser, ".message.assistant"),
             "the recorded conversation")
        assert "hello, {name}" not in text_of(browser, "#transcript")  # no diffs in a record
        shot(browser, "recorded")
        by_css(browser, "#resume")[0].click()
        wait(browser, lambda: by_css(browser, "#input")[0].is_displayed(), "the composer")
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.keys import Keys

        box = by_css(browser, "#input")[0]
        box.click()
        box.send_keys("what did you change?")
        ActionChains(browser).key_down(Keys.CONTROL).send_keys(Keys.ENTER) \
            .key_up(Keys.CONTROL).perform()  # Ctrl+Enter sends
        wait(browser, lambda: "I added greet.py." in text_of(browser, ".message.assistant"),
             "the resumed thread's answer")
        assert by_css(browser, ".message.assistant em")[-1].text == "greet.py"
        shot(browser, "resumed")
    finally:
        api.http.close()
        server.stop()


def test_the_js_client_keeps_messages_and_status_from_agentb_events(
        browser: Any, scripts: TurnScripts, workspace: Path, tmp_path: Path) -> None:
    """client.js as someone building their own UI uses it: BaseagentChat over the AgentB
    stream, then a reconnect that sends Last-Event-ID and repeats nothing."""
    server = start_server(scripts, workspace, tmp_path / "home")
    scripts.scripts["hi there"] = [
        {"content": "Let me check.", "tool_calls": [{"name": "shell", "arguments": {
            "command": "echo checked"}}]},
        {"content": "All **good**.", "chunk_size": 4, "chunk_delay": 0.01}]
    scripts.scripts["and again"] = [{"content": "Second."}]
    try:
        browser.get(f"{server.url}/?token={TOKEN}")
        wait(browser, lambda: by_css(browser, "#new-input"), "the page")
        browser.set_script_timeout(60)
        state = browser.execute_async_script("""
            var done = arguments[arguments.length - 1];
            var client = new BaseagentClient({token: arguments[0]});
            client.createThread({input: "hi there"}).then(function (thread) {
              var chat = new BaseagentChat(client, thread.id, {onEvent: function (e) {
                var s = chat.state;
                if (e.type === "thread.run.completed") {
                  chat.stop();
                  done({messages: s.messages, status: s.status, usage: s.usage,
                        results: s.toolResults, id: thread.id,
                        last: chat.subscription.lastEventId});
                }
              }}).start();
            }).catch(function (e) { done({error: String(e)}); });
        """, TOKEN)
        assert "error" not in state, state
        roles = [m["role"] for m in state["messages"]]
        assert roles[0] == "user" and state["messages"][0]["content"] == "hi there"
        answers = [m["content"] for m in state["messages"] if m["role"] == "assistant"]
        assert answers[-1] == "All **good**." and "Let me check." in answers
        calls = [c for m in state["messages"] for c in m["toolCalls"]]
        assert calls[0]["function"]["name"] == "shell"
        assert list(state["results"].values())[0]["success"] is True
        assert state["usage"]["output_tokens"] > 0
        # Subscribing again after the last id seen: only the next turn's events arrive.
        later = browser.execute_async_script("""
            var done = arguments[arguments.length - 1];
            var client = new BaseagentClient({token: arguments[0]});
            var seen = [];
            var sub = client.subscribe(arguments[1], {format: "agentb", lastEventId: arguments[2],
              onEvent: function (e) {
                seen.push(e.type);
                if (e.type === "thread.run.completed") { sub.close(); done(seen); }
              }});
            client.startTurn(arguments[1], "and again");
        """, TOKEN, state["id"], state["last"])
        assert later[0] == "agent.run.created" and later.count("thread.run.completed") == 1
        # Without a token (and without the page's cookie) the client hears one clear error.
        browser.delete_all_cookies()
        refused = browser.execute_async_script("""
            var done = arguments[arguments.length - 1];
            new BaseagentClient({}).listThreads().then(function () { done("no error"); },
              function (e) { done(e.status + " " + e.message); });
        """)
        assert refused.startswith("401 missing or wrong token")
    finally:
        server.stop()
