"""bench/repos.py, the real-repository tasks: a task's workspace is the verified sdist with the
bug applied, its issue names no file, `validate` tells a check that proves the task from one
that does not, and the agent row runs end to end against the scripted server writing the fix.

The package is iso8601 (a 6 KB sdist, 47 tests in seconds, no dependencies), fetched once by
`python bench/repos.py fetch --only iso8601-negative-offset` (.ci/run) into the git-ignored
bench/.cache/repos/, its suite's pins (pytest, hypothesis, pytz) into bench/.cache/repos-venv."""
from __future__ import annotations

import dataclasses
import re
import shutil
import sys
from pathlib import Path

import pytest

from helpers import REPO, require

sys.path.insert(0, str(REPO / "bench"))
import repos  # noqa: E402

TASK_ID = "iso8601-negative-offset"
FIX = ("python -c \"import pathlib; p = pathlib.Path('iso8601/iso8601.py'); "
       "t = p.read_text(); p.write_text(t.replace('hours = -hours\\n', "
       "'hours = -hours\\n        minutes = -minutes\\n', 1))\"")


@pytest.fixture
def task() -> repos.RepoTask:
    [found] = repos.load_tasks(only=[TASK_ID])
    require(repos.present(found) and repos.venv_ready([found]),
            f"the {TASK_ID} sdist or its test venv is missing: "
            f"python bench/repos.py fetch --only {TASK_ID}")
    return found


def test_every_task_is_pinned_and_its_issue_names_no_file():
    tasks = repos.load_tasks()
    assert len(tasks) >= 12 and len({t.package for t in tasks}) == len(tasks)
    for t in tasks:
        assert re.fullmatch(r"[0-9a-f]{64}", t.sha256) and t.sdist.endswith(".tar.gz"), t.id
        assert t.license and t.tests and t.command, t.id
        bug = t.bug
        assert t.buggy_files(), t.id
        issue = t.issue
        for path in t.buggy_files():
            assert path not in issue and Path(path).name not in issue, (t.id, path)
        for test in t.tests:
            assert test not in issue, (t.id, test)
        # neither the changed lines nor the function they sit in
        changed = [line[1:].strip() for line in bug.splitlines()
                   if line[:1] in "+-" and not line.startswith(("+++", "---"))]
        for line in changed:
            assert not line or line not in issue, (t.id, line)


def test_the_workspace_is_the_verified_sdist_with_the_bug_applied(task, tmp_path):
    ws = repos.make_workspace(task, tmp_path / "ws")
    source = repos.pristine(task)
    assert (source / ".verified").read_text().strip() == task.sha256
    assert repos._sha256(repos.CACHE / "sdists" / task.sdist) == task.sha256
    buggy = (ws / "iso8601" / "iso8601.py").read_text()
    released = (source / "iso8601" / "iso8601.py").read_text()
    assert "minutes = -minutes" in released and "minutes = -minutes" not in buggy
    assert (ws / ".git").is_dir() and repos.changed_files(ws) == []  # committed as it is
    assert not (ws / ".verified").exists()
    assert "iso8601.py" not in repos.task_instruction(task)


def test_a_sdist_that_does_not_match_its_pin_is_refused(task, tmp_path):
    cache = tmp_path / "cache"
    (cache / "sdists").mkdir(parents=True)
    shutil.copyfile(repos.CACHE / "sdists" / task.sdist, cache / "sdists" / task.sdist)
    wrong = dataclasses.replace(task, sha256="0" * 64)
    with pytest.raises(repos.FetchError, match="SHA-256"):
        repos.fetch([wrong], cache)
    assert not (cache / "sdists" / task.sdist).exists() and not repos.present(wrong, cache)


def test_validate_passes_on_the_release_and_fails_with_the_bug(task, tmp_path):
    result = repos.validate(task, tmp_path)
    assert result.pristine_passes and result.bug_fails and result.ok, result
    assert result.pristine_tests == "47 passed" and "failed" in result.bug_tests


def test_the_check_puts_the_pristine_tests_back(task, tmp_path):
    ws = repos.make_workspace(task, tmp_path / "ws", bug=False)
    tests = ws / "iso8601" / "test_iso8601.py"
    tests.write_text("def test_broken():\n    assert False\n")
    passed, output = repos.run_check(task, ws)
    assert passed, output[-500:]
    assert "def test_broken" not in tests.read_text()


def test_a_validation_that_proves_nothing_is_reported(task, tmp_path):
    # a "bug" the suite cannot see: a comment added on top of the module
    released = (repos.pristine(task) / "iso8601" / "iso8601.py").read_text().splitlines(True)
    harmless = tmp_path / "harmless"
    harmless.mkdir()
    (harmless / "bug.patch").write_text(
        "--- a/iso8601/iso8601.py\n+++ b/iso8601/iso8601.py\n@@ -1,1 +1,2 @@\n"
        f"+# a harmless comment\n {released[0]}")
    (harmless / "issue.md").write_text("nothing\n")
    result = repos.validate(dataclasses.replace(task, root=harmless), tmp_path / "v")
    assert result.pristine_passes and not result.bug_fails and not result.ok


def test_the_agent_row_runs_end_to_end_with_the_scripted_fix(task, scripted_server,
                                                            tmp_path, monkeypatch):
    monkeypatch.setattr(repos, "AGENT_BATCH", tmp_path / "fixed" / "batch")
    run_tests = repos.task_instruction(task).rstrip().splitlines()[-1]
    server = scripted_server(
        [{"tool_calls": [{"name": "shell", "arguments": {"command": FIX}}]},
         {"tool_calls": [{"name": "shell", "arguments": {"command": run_tests}}]}]
        + [{"content": "Fixed: negative offsets now negate their minutes too; the suite "
                       "passes."}] * 4)
    [result] = repos.run_agent([task], "openai/scripted", server.api_base, tmp_path / "work",
                               ["--prompt-profile", "full"], lambda _message: None)
    assert result.solved and result.status == "passed", result
    assert result.tests == "47 passed" and result.model_calls >= 3
    prompt = str(next(r for r in server.requests if r.get("tools"))["messages"])
    assert "-03:30" in prompt and "iso8601.py" not in prompt


def test_a_lost_task_says_why(task, scripted_server, tmp_path, monkeypatch):
    monkeypatch.setattr(repos, "AGENT_BATCH", tmp_path / "fixed" / "batch")
    server = scripted_server([{"content": "The offset should negate the minutes as well."}] * 6)
    [result] = repos.run_agent([task], "openai/scripted", server.api_base, tmp_path / "work",
                               ["--prompt-profile", "full"], lambda _message: None)
    assert not result.solved
    assert result.why.startswith("no file edited; suite fails (3 failed, 44 passed)"), result


def test_the_report_shows_both_profiles_beside_the_peers_with_each_lost_reason():
    def result(name: str, solved: bool, why: str = "") -> dict:
        return {"name": name, "solved": solved, "status": "passed" if solved else "failed",
                "model_calls": 3, "input_tokens": 10, "output_tokens": 2, "wall_s": 1.0,
                "why": why, "tests": "", "cached_tokens": None}

    def run(extra: list[str], rows: dict) -> repos.Run:
        return repos.Run(started="2026-11-28 09:00", commit="abc", model="openai/local",
                         server="http://s", load="1", note="", extra=extra, rows=rows,
                         exercises="repos")

    compact = run([], {"agent": [result("a", True), result("b", False, "no file edited")],
                       "aider": [result("a", False, "edited x.py, not the buggy file"),
                                 result("b", False, "timed out")]})
    full = run(["--prompt-profile", "full"], {"agent": [result("a", True), result("b", True)]})
    text = repos.render([compact, full])
    assert "| agent | 1/2 |" in text and "| agent --prompt-profile full | 2/2 |" in text
    assert "| aider | 0/2 |" in text
    assert "| b | ✗ no file edited | solved | ✗ timed out |" in text
    assert text.count("| 2026-11-28 09:00 | abc |") == 2  # every run listed


def test_where_localisation_puts_the_bug_is_measured_without_a_model(task, tmp_path):
    # iso8601's bug removes a line: the definition holding the place where it was counts
    assert repos.bug_lines(task) == {"iso8601/iso8601.py": {97}}
    found = repos.localised(task, tmp_path)
    assert found.symbol == "parse_timezone" and found.rank is not None and found.shown
    # with an interpreter the example runs as the probe runs it: a timedelta made by the
    # standard library, no function of the package made part of the wrong result
    ran = repos.localised(task, tmp_path / "ran", python=Path(sys.executable))
    assert ran.shown and ran.origins == ()
    # traced, the line before the one the bug removed is the 5th of the line search's sweep
    assert ran.swept == 5
    # watched, what that line saw: in the example's set-up, the hours it negated, and beside
    # them the minutes it left alone
    assert ran.saw.startswith("When the issue's example ran this line (in `d = iso8601."
                              "parse_date(\"2013-10-15T15:00-03:30\")`), it had hours = 3 (and ")
    assert ", minutes = 30, " in ran.saw and ran.saw.endswith("; after it, hours = -3.")
    two_files = dataclasses.replace(task, root=tmp_path / "two")
    (tmp_path / "two").mkdir()
    (tmp_path / "two" / "bug.patch").write_text(
        "--- a/x.py\n+++ b/x.py\n@@ -10,3 +10,3 @@\n a\n-b\n+c\n d\n"
        "--- a/y.py\n+++ b/y.py\n@@ -5,2 +5,3 @@\n e\n+f\n+g\n")
    assert repos.bug_lines(two_files) == {"x.py": {10, 11}, "y.py": {6, 7}}


def test_a_peer_harness_changes_with_the_peer_code_only():
    source = (REPO / "bench" / "repos.py").read_text()
    same = repos.peer_harness(source)
    assert repos.peer_harness(source.replace("def render(", "def render_again(")) == same
    assert repos.peer_harness(source.replace('"--no-auto-commits",', "")) != same


def test_a_conftest_the_release_has_not_cannot_decide_the_check(task, tmp_path):
    ws = repos.make_workspace(task, tmp_path / "ws")
    (ws / "conftest.py").write_text(
        "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n    outcome = yield\n"
        "    outcome.get_result().outcome = 'passed'\n")
    (ws / "sitecustomize.py").write_text("raise SystemExit(0)\n")
    passed, output = repos.run_check(task, ws)
    assert not passed and "3 failed" in output
    assert not (ws / "conftest.py").exists() and not (ws / "sitecustomize.py").exists()


def test_a_peer_row_runs_end_to_end_with_the_scripted_fix(task, scripted_server, tmp_path):
    from agents import peer_versions

    require(peer_versions() is not None,
            "mini-swe-agent is not in bench/.peer-venv: python bench/exercises.py peer")
    done = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    server = scripted_server([
        {"tool_calls": [{"name": "bash", "arguments": {"command": FIX}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": done}}]}])
    result = repos.run_mini("mini-tool", task, "openai/scripted", server.api_base, tmp_path,
                            lambda _message: None)
    assert result.solved and result.tests == "47 passed" and result.model_calls == 2, result
    assert "iso8601.py" not in str(server.requests[0]["messages"])


def test_the_fixed_batch_is_the_sets_own_cleared_before_and_moved_after(tmp_path, monkeypatch):
    """A repository run's batch directory is cleared when it starts and moved into its
    --work when it ends: a batch left there (its results) is never resumed by the next run
    as if it were new (the bug: the exercises' path was cleared, the repositories' kept)."""
    batch = tmp_path / "fixed" / "batch"
    monkeypatch.setattr(repos, "AGENT_BATCH", batch)
    batch.mkdir(parents=True)
    (batch / "results.jsonl").write_text('{"id": "old", "status": "failed"}\n')
    out = tmp_path / "work" / "agent"
    out.mkdir(parents=True)
    with repos.ex.fixed_batch(out, "repos", repos.AGENT_BATCH) as held:
        assert held == batch and not batch.exists()  # nothing of an earlier run
        batch.mkdir()
        (batch / "results.jsonl").write_text('{"id": "new", "status": "passed"}\n')
    assert not batch.exists()
    assert "new" in (out / "batch" / "results.jsonl").read_text()


def test_with_resume_the_fixed_batch_is_the_one_the_stopped_invocation_left(tmp_path,
                                                                            monkeypatch):
    """The agent row goes on with --resume: the batch the stopped invocation moved into its
    --work comes back to the fixed path (baseagent batch then runs only what it had not
    finished), and a stale batch at the fixed path is still never taken."""
    batch = tmp_path / "fixed" / "batch"
    monkeypatch.setattr(repos, "AGENT_BATCH", batch)
    batch.mkdir(parents=True)
    (batch / "results.jsonl").write_text('{"id": "stale", "status": "failed"}\n')
    out = tmp_path / "work" / "agent"
    (out / "batch").mkdir(parents=True)
    (out / "batch" / "results.jsonl").write_text('{"id": "earlier", "status": "passed"}\n')
    with repos.ex.fixed_batch(out, "repos", repos.AGENT_BATCH, resume=True) as held:
        assert (held / "results.jsonl").read_text() == '{"id": "earlier", "status": "passed"}\n'
    assert "earlier" in (out / "batch" / "results.jsonl").read_text() and not batch.exists()



def test_with_resume_the_batch_of_a_killed_invocation_is_taken_from_the_fixed_path(
        tmp_path, monkeypatch):
    """An invocation killed part way (the session's end) never moved its batch into its
    --work: --resume into that --work takes it from the fixed path; a run into another
    --work, or without --resume, clears it."""
    batch = tmp_path / "fixed" / "batch"
    monkeypatch.setattr(repos, "AGENT_BATCH", batch)
    out = tmp_path / "work" / "agent"
    out.mkdir(parents=True)

    killed = []  # held, so that no finalizer ends them: a killed run runs no finally

    def killed_run() -> None:
        held = repos.ex.fixed_batch(out, "repos", repos.AGENT_BATCH)
        killed.append(held)
        assert held.__enter__() == batch  # and never __exit__
        batch.mkdir()
        (batch / "results.jsonl").write_text('{"id": "done", "status": "passed"}\n')
        (batch.parent / "lock").unlink()  # the kill released its lock

    killed_run()
    other = tmp_path / "other" / "agent"
    other.mkdir(parents=True)
    with repos.ex.fixed_batch(other, "repos", repos.AGENT_BATCH, resume=True) as held:
        assert not held.exists()  # another run's batch is never taken
    killed_run()
    with repos.ex.fixed_batch(out, "repos", repos.AGENT_BATCH, resume=True) as held:
        assert "done" in (held / "results.jsonl").read_text()
    assert "done" in (out / "batch" / "results.jsonl").read_text() and not batch.exists()
