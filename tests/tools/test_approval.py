"""Approvals (tools/approval.py): which commands wait for a person, what each answer does,
and the shell tool under each policy with the real kernel sandbox (in-process; the CLI and
the terminal are in tests/cli/test_approvals.py)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from baseagent.sandbox import landlock
from baseagent.tools import shell
from baseagent.tools.approval import (ApprovalAnswer, ApprovalRequest, Approvals,
                                      is_known_safe, looks_denied, session_prefix)
from baseagent.tools.context import ToolContext
from baseagent.interactive.approver import TerminalApprover, parse_answer

needs_landlock = pytest.mark.skipif(landlock.abi() < 1 and not os.environ.get("CI"),
                                    reason="no Landlock on this kernel")


class Person:
    """Answers in turn with `answers`, and keeps the questions."""

    def __init__(self, *answers: ApprovalAnswer) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.asked.append(request)
        return self.answers.pop(0)


@pytest.fixture
def outside():
    path = Path(tempfile.mkdtemp(prefix="baseagent-outside-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def context(tmp_path: Path, sandbox: str, approvals: Approvals | None) -> ToolContext:
    return ToolContext(cwd=tmp_path, env={"PATH": os.environ["PATH"]}, sandbox=sandbox,
                       approvals=approvals)


def run(ctx: ToolContext, command: str, **extra):
    args = shell.EscalatableArgs(command=command, **extra)
    return shell.run(args, ctx)


# -- the rules -----------------------------------------------------------------------------

@pytest.mark.parametrize("command", [
    "ls -la", "cat a.py | grep def", "git status && git diff", "sed -n 1,20p a.py",
    "find . -name '*.py'", "rg -n foo src", "pwd; echo hi", "wc -l a.py b.py"])
def test_known_safe_commands(command):
    assert is_known_safe(command)


@pytest.mark.parametrize("command", [
    "rm -rf x", "echo hi > a.py", "cat a.py | tee b.py", "find . -delete",
    "find . -exec rm {} +", "git push", "git -c core.pager=evil log", "sed -i s/a/b/ f",
    "rg --pre ./x foo", "ls $(rm x)", "ls `rm x`", "sleep 1 & rm x", "python3 x.py",
    "env rm x", "sort -o out in", "ls\nrm x", "bash -c ls", "echo 'unclosed"])
def test_commands_that_are_not(command):
    assert not is_known_safe(command)


def test_the_session_prefix_is_the_program_and_its_subcommand():
    assert session_prefix("git push origin main") == "git push"
    assert session_prefix("npm install left-pad") == "npm install"
    assert session_prefix("pytest -q tests") == "pytest"
    assert session_prefix("rmdir build") == "rmdir"  # not a subcommand: a file name
    assert session_prefix("python3 -m pytest -q") == "python3 -m pytest"
    assert session_prefix("curl https://x | sh") == ""  # compound: nothing to allow
    assert looks_denied("touch: cannot touch '/x': Permission denied")
    assert not looks_denied("AssertionError: 1 != 2")


def test_answers_the_terminal_reads():
    assert parse_answer("y", True).decision == "approved"
    assert parse_answer(" P ", True).decision == "approved_for_session"
    assert parse_answer("p", False) is None  # no prefix offered: not a choice
    denied = parse_answer("n: use the mirror instead", True)
    assert denied.decision == "denied" and denied.note == "use the mirror instead"
    assert parse_answer("no", True) == ApprovalAnswer("denied", "")
    assert parse_answer("maybe", True) is None
    lines = iter(["what?", "", "n not now"])
    prompts, said = [], []
    answer = TerminalApprover(lambda prompt: prompts.append(prompt) or next(lines),
                              said.append)(ApprovalRequest("rm x", "/w", "unsafe", prefix="rm"))
    assert answer == ApprovalAnswer("denied", "not now")
    assert prompts == ["  answer [y/p/n]: "] * 3
    assert said == ["  'what?' is not an answer: type y (run it once), p (this command's "
                    "prefix, for the session), n (decline) or n NOTE (decline, telling the "
                    "model why)",
                    "  no answer given: type y (run it once), p (this command's prefix, for "
                    "the session), n (decline) or n NOTE (decline, telling the model why)"]
    # no prefix offered: [y/n], and `p` is explained rather than taken for `y`
    lines = iter(["p", "p", "p"])
    prompts, said = [], []
    answer = TerminalApprover(lambda prompt: prompts.append(prompt) or next(lines),
                              said.append)(ApprovalRequest("rm x", "/w", "unsafe"))
    assert answer.decision == "denied" and prompts == ["  answer [y/n]: "] * 3
    assert said[0] == "  'p' is not an answer: type y (run it once), n (decline) or n NOTE " \
                      "(decline, telling the model why)"
    assert said[-1] == "  no clear answer: declined"

    def closed(_prompt: str) -> str:
        raise EOFError
    assert TerminalApprover(closed)(ApprovalRequest("rm x", "/w", "unsafe")).decision == "denied"


def test_reports_and_prefixes():
    seen = []
    person = Person(ApprovalAnswer("approved_for_session"))
    approvals = Approvals("untrusted", person, report=lambda r, a: seen.append((r.command, a)))
    assert approvals.before("git push origin main", "/w", confined=True).run
    assert approvals.before("git push origin dev", "/w", confined=True).run  # allowed prefix
    assert len(person.asked) == 1 and person.asked[0].prefix == "git push"
    assert seen == [("git push origin main", None),
                    ("git push origin main", ApprovalAnswer("approved_for_session"))]
    assert approvals.before("ls", "/w", confined=True).run and len(person.asked) == 1
    nobody = Approvals("untrusted", None, report=lambda r, a: seen.append((r.command, a)))
    verdict = nobody.before("rm x", "/w", confined=True)
    assert not verdict.run and verdict.note == "nobody is there to approve it"


# -- the shell under each policy, with the kernel sandbox -------------------------------------

@needs_landlock
def test_on_request_escalation_approved_runs_outside_the_sandbox(tmp_path, outside):
    person = Person(ApprovalAnswer("approved"))
    ctx = context(tmp_path, "workspace-write", Approvals("on-request", person))
    target = outside / "out.txt"
    confined = run(ctx, f"echo hi > {target}")
    assert confined.item["exit_code"] != 0 and not target.exists() and not person.asked
    result = run(ctx, f"echo hi > {target}", with_escalated_permissions=True,
                 justification="write the report outside the workspace")
    assert result.success and target.read_text() == "hi\n"
    assert person.asked[0].kind == "escalation"
    assert person.asked[0].reason == "write the report outside the workspace"


@needs_landlock
def test_a_declined_command_never_runs_and_the_model_reads_the_note(tmp_path, outside):
    person = Person(ApprovalAnswer("denied", "use the workspace"))
    ctx = context(tmp_path, "workspace-write", Approvals("on-request", person))
    result = run(ctx, f"echo hi > {outside}/x", with_escalated_permissions=True)
    assert not result.success and not (outside / "x").exists()
    assert result.item["status"] == "declined" and result.item["exit_code"] is None
    assert "the user declined to run this command. Their note: use the workspace" \
        in result.output


@needs_landlock
def test_on_failure_offers_a_sandbox_denial_again_outside(tmp_path, outside):
    person = Person(ApprovalAnswer("approved"))
    ctx = context(tmp_path, "workspace-write", Approvals("on-failure", person))
    result = run(ctx, f"echo hi > {outside}/x")
    assert result.success and (outside / "x").read_text() == "hi\n"
    assert person.asked[0].kind == "retry" and "Read-only file system" in person.asked[0].reason
    # a plain failure (not the sandbox's doing) is not offered again
    assert not run(ctx, "exit 3").success and len(person.asked) == 1
    declined = Person(ApprovalAnswer("denied"))
    ctx = context(tmp_path, "workspace-write", Approvals("on-failure", declined))
    result = run(ctx, f"echo hi > {outside}/y")
    assert not result.success and "declined to run it outside the sandbox" in result.output


def test_untrusted_asks_before_anything_not_known_safe(tmp_path):
    person = Person(ApprovalAnswer("denied"), ApprovalAnswer("approved"))
    ctx = context(tmp_path, "danger-full-access", Approvals("untrusted", person))
    assert run(ctx, "ls").success and not person.asked
    assert not run(ctx, "touch made").success and not (tmp_path / "made").exists()
    assert run(ctx, "touch made").success and (tmp_path / "made").exists()
    assert [r.kind for r in person.asked] == ["unsafe", "unsafe"]


def test_escalation_is_not_offered_without_on_request(tmp_path):
    ctx = context(tmp_path, "workspace-write", Approvals("never", Person()))
    result = run(ctx, "echo hi", with_escalated_permissions=True)
    assert result.success and "running outside the sandbox is not available" in result.output
