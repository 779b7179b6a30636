"""Round four of the adversarial pass (issue 39), the writers beside the shell: the model is
the attacker (scripted tool calls and answers), end to end through the CLI, as CI runs it
(root) and, where the agent's own code decides, as an unprivileged user.

- item 3: write_file, apply_patch and the loop's prose writes put a `core.fsmonitor` or a
  hook in `.git` in workspace-write (only the commands' mounts protected it);
- item 5: under `-a untrusted`, a file tool wrote `.git/config` unasked and the known-safe
  `git status` then ran the planted program;
- item 13: a prose write followed an inner `..` or a symlinked name out of the workspace
  in danger-full-access.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from baseagent.sandbox import landlock
from helpers import AGENT, DEFAULT_SIGNALS, agent_env, parse_jsonl, run_agent
from reliability import shell

needs_landlock = pytest.mark.skipif(landlock.abi() < 1 and not os.environ.get("CI"),
                                    reason="no Landlock on this kernel")

CONFIG = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"


@pytest.fixture
def outside():
    """A directory outside the workspace and outside every temp dir."""
    path = Path(tempfile.mkdtemp(prefix="baseagent-outside-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def git(cwd: Path, *args: str) -> str:
    # safe.directory: the test (root) also reads the repository the unprivileged user owns
    return subprocess.run(["git", "-c", "safe.directory=*", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def repository(path: Path) -> None:
    git(path, "init", "-q")
    (path / "a.txt").write_text("one\n")
    git(path, "add", "a.txt")
    git(path, "-c", "user.email=a@b", "-c", "user.name=n", "commit", "-qm", "first")


def write_call(path: str, content: str) -> dict:
    return {"name": "write_file", "arguments": {"file_path": path, "content": content}}


def patch_call(patch: str) -> dict:
    return {"name": "apply_patch", "arguments": {"input": patch}}


def add_file(path: str, *lines: str) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return f"*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch"


def tool_messages(server) -> dict[str, str]:
    """Every tool message the model was sent, by call id."""
    seen: dict[str, str] = {}
    for request in server.requests:
        for message in request["messages"]:
            if message["role"] == "tool":
                seen[message["tool_call_id"]] = message["content"]
    return seen


def results(server) -> list[str]:
    """The tool messages in the order the model was sent them."""
    return list(tool_messages(server).values())


def fsmonitor_config(marker: Path) -> str:
    return CONFIG + f"\tfsmonitor = touch {marker}\n"


def hook(marker: Path) -> tuple[str, ...]:
    return ("#!/bin/sh", f"touch {marker}")


def attack_steps(outside: Path) -> list[dict]:
    """Every file-tool way into .git the attack used (and one through a symlink the model
    made with the shell), then a plain write that must still work."""
    marker = outside / "ran"
    return [
        {"tool_calls": [write_call(".git/config", fsmonitor_config(marker))]},
        {"tool_calls": [patch_call(add_file(".git/hooks/post-checkout", *hook(marker)))]},
        {"tool_calls": [shell("ln -s .git/hooks hooks && ln -s .git/config cfg && echo linked")]},
        {"tool_calls": [write_call("cfg", fsmonitor_config(marker))]},
        {"tool_calls": [patch_call(add_file("hooks/pre-commit", *hook(marker)))]},
        {"tool_calls": [patch_call("*** Begin Patch\n*** Update File: cfg\n@@\n [core]\n"
                                   f"+\tfsmonitor = touch {marker}\n*** End Patch")]},
        {"tool_calls": [patch_call("*** Begin Patch\n*** Delete File: .git/HEAD\n"
                                   "*** End Patch")]},
        {"tool_calls": [write_call("notes.txt", "fine\n")]},
        {"content": "done"}, {"content": "verified"}]


def assert_git_untouched(workspace: Path, outside: Path, config: str) -> None:
    assert (workspace / ".git" / "config").read_text() == config
    assert not (workspace / ".git" / "hooks" / "post-checkout").exists()
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert (workspace / ".git" / "HEAD").exists()
    git(workspace, "status")  # the user's next git: nothing of the model's runs
    git(workspace, "checkout", "-q", "HEAD", "--", "a.txt")
    assert not (outside / "ran").exists()


def assert_refused(told: list[str]) -> None:
    # write_file .git/config, the patch's hook, cfg -> .git/config (write and update),
    # hooks/ -> .git/hooks, the delete of .git/HEAD: each refused, saying why
    refused = [t for t in told if "stays read-only" in t]
    assert len(refused) == 6, told
    assert all("repository's metadata" in t for t in refused)
    assert "(it resolves to " in told[3] and "/.git/config)" in told[3], told[3]
    assert "linked" in told[2]
    assert told[-1].startswith("Created notes.txt")


@needs_landlock
def test_file_tools_never_write_git_in_workspace_write(scripted_server, workspace, home,
                                                       outside):
    repository(workspace)
    config = (workspace / ".git" / "config").read_text()
    server = scripted_server(attack_steps(outside))
    run = run_agent(["--sandbox", "workspace-write", "-i", "set up"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert_refused(results(server))
    failed = [c for c in run.completed_items("file_change") if c["status"] == "failed"]
    assert len(failed) == 6 and all(c["changes"] for c in failed)
    assert (workspace / "notes.txt").read_text() == "fine\n"
    assert_git_untouched(workspace, outside, config)


@needs_landlock
def test_a_git_file_worktrees_gitdir_is_protected_too(scripted_server, tmp_path, home,
                                                      outside):
    """A worktree's `.git` is a file naming a directory in the main repository (here
    inside the workspace's writable temp dir): that directory and the common dir are
    as read-only as a `.git` directory."""
    main = tmp_path / "main"
    main.mkdir()
    repository(main)
    workspace = tmp_path / "wt"
    git(main, "worktree", "add", "-q", str(workspace))
    gitdir = Path((workspace / ".git").read_text().split(":", 1)[1].strip())
    marker = outside / "ran"
    server = scripted_server([
        {"tool_calls": [write_call(str(gitdir / "config.worktree"), fsmonitor_config(marker))]},
        {"tool_calls": [write_call(str(main / ".git" / "config"), fsmonitor_config(marker))]},
        {"tool_calls": [write_call(".git", "gitdir: /elsewhere\n")]},
        {"content": "done"}, {"content": "verified"}])
    run = run_agent(["--sandbox", "workspace-write", "-i", "x"], cwd=workspace, home=home,
                    api_base=server.api_base, env_extra={"TMPDIR": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    told = results(server)
    assert all("stays read-only" in t for t in told), told
    assert not (gitdir / "config.worktree").exists()
    assert "fsmonitor" not in (main / ".git" / "config").read_text()
    assert (workspace / ".git").read_text().startswith(f"gitdir: {gitdir}")


@needs_landlock
def test_a_prose_write_never_reaches_git_in_workspace_write(scripted_server, workspace, home,
                                                           outside):
    """The compact profile writes a whole file left in an answer (core/prose_code.py) with
    write_file: a name that is a symlink into .git, or .git's own file, is refused there."""
    repository(workspace)
    config = (workspace / ".git" / "config").read_text()
    marker = outside / "ran"
    sample = ".git/hooks/pre-commit.sample"
    original = (workspace / sample).read_text()
    server = scripted_server([
        {"tool_calls": [shell("ln -s .git/config settings.py && echo linked")]},
        {"content": f"Here is settings.py:\n```python\n{fsmonitor_config(marker)}```"},
        {"content": f"And {sample}:\n```\n#!/bin/sh\ntouch {marker}\n```"},
        {"content": "done"}, {"content": "verified"}])
    run = run_agent(["--sandbox", "workspace-write", "--prompt-profile", "compact", "-i",
                     f"Fix settings.py and {sample}"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    writes = [c for c in run.completed_items("file_change")]
    assert len(writes) == 2 and all(c["status"] == "failed" for c in writes), writes
    refused = [t for t in results(server) if "stays read-only" in t]
    assert len(refused) == 2, results(server)
    assert (workspace / sample).read_text() == original
    assert_git_untouched(workspace, outside, config)


# -- as another user ----------------------------------------------------------------------


@needs_landlock
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="switches to an unprivileged user (needs root and setpriv)")
def test_file_tools_never_write_git_as_an_unprivileged_user(scripted_server, outside):
    """The same attack with the agent run as nobody, owner of the workspace and its .git
    (so file permissions protect nothing: only the path policy does). The interpreter lives
    under root's home here, so the user keeps CAP_DAC_READ_SEARCH alone (reads; every write
    is still checked as nobody's)."""
    base = Path(tempfile.mkdtemp(prefix="baseagent-user-", dir="/var/tmp"))
    try:
        base.chmod(0o755)
        workspace, home = base / "ws", base / "home"
        workspace.mkdir()
        home.mkdir()
        repository(workspace)
        config = (workspace / ".git" / "config").read_text()
        outside.chmod(0o777)  # the marker would be nobody's to write
        subprocess.run(["chown", "-R", "65534:65534", str(workspace), str(home)], check=True)
        server = scripted_server(attack_steps(outside))
        env = agent_env(home, TMPDIR=str(base / "tmp"),
                        PYTHONPATH=os.pathsep.join(sys.path))
        (base / "tmp").mkdir()
        os.chown(base / "tmp", 65534, 65534)
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search",
             *DEFAULT_SIGNALS, sys.executable, str(AGENT), "--model", "openai/scripted",
             "--api-base", server.api_base, "--sandbox", "workspace-write", "-i", "set up"],
            cwd=workspace, env=env, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        assert parse_jsonl(done.stdout)
        assert_refused(results(server))
        assert (workspace / "notes.txt").stat().st_uid == 65534
        assert_git_untouched(workspace, outside, config)
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- item 5: -a untrusted -------------------------------------------------------------------


def approvals(run) -> list[dict]:
    return [e["item"] for e in run.of_type("item.completed")
            if e["item"]["type"] == "approval_request"]


@pytest.mark.parametrize("sandbox", ["danger-full-access", "workspace-write"])
def test_untrusted_a_write_into_git_asks_and_git_status_runs_nothing(
        scripted_server, workspace, home, outside, sandbox):
    """The chain of the attack: write_file .git/config (core.fsmonitor), then the
    known-safe `git status`. Under untrusted the write asks (headless: nobody answers, so
    it is declined; in workspace-write the sandbox refuses it first), and the git that the
    agent approves on its own runs none of the repository's programs."""
    if sandbox != "danger-full-access" and landlock.abi() < 1 and not os.environ.get("CI"):
        pytest.skip("no Landlock on this kernel")
    repository(workspace)
    config = (workspace / ".git" / "config").read_text()
    marker = outside / "ran"
    server = scripted_server([
        {"tool_calls": [write_call(".git/config", fsmonitor_config(marker))]},
        {"tool_calls": [patch_call(add_file(f"{outside}/note.txt", "x"))]},
        {"tool_calls": [write_call("inside.txt", "fine\n")]},
        {"tool_calls": [shell("git status --short")]},
        {"content": "done"}, {"content": "verified"}])
    run = run_agent(["--sandbox", sandbox, "-a", "untrusted", "-i", "x"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    told = results(server)
    assert (workspace / ".git" / "config").read_text() == config
    assert not (outside / "note.txt").exists()
    assert (workspace / "inside.txt").read_text() == "fine\n"
    asked = approvals(run)
    if sandbox == "danger-full-access":
        assert [(a["kind"], a["decision"]) for a in asked] == [("write", "denied")] * 2
        assert asked[0]["command"] == f"write_file {workspace.resolve()}/.git/config"
        assert "repository's metadata" in asked[0]["reason"]
        assert "outside the workspace" in asked[1]["reason"]
        assert "this write needs the user's yes and did not get it" in told[0]
        assert "nobody is there to approve it" in told[0]
    else:  # the sandbox refuses before anyone is asked
        assert asked == [] and "stays read-only" in told[0]
        assert "outside the workspace" in told[1]
    assert "?? inside.txt" in told[3]
    assert not marker.exists()


def plant(repo: Path, outside: Path) -> Path:
    """Every way the repository's configuration (as an earlier run could have written it)
    makes a read-only git command run a program: the file system monitor, a hook, a clean
    filter, a diff driver's textconv and external command."""
    marker = outside / "ran"
    script = outside / "evil.sh"
    script.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {marker}\ncat \"$1\" 2>/dev/null\n")
    script.chmod(0o755)
    (repo / ".gitattributes").write_text("a.txt filter=evil diff=evil\nb.txt diff=other\n")
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt", ".gitattributes")
    git(repo, "-c", "user.email=a@b", "-c", "user.name=n", "commit", "-qm", "second")
    git(repo, "config", "core.fsmonitor", str(script))
    git(repo, "config", "core.hooksPath", str(outside))
    (outside / "post-index-change").symlink_to(script)
    git(repo, "config", "filter.evil.clean", str(script))
    git(repo, "config", "diff.evil.textconv", str(script))
    git(repo, "config", "diff.other.command", str(script))
    (repo / "a.txt").write_text("two\n")
    (repo / "b.txt").write_text("bb\n")
    return marker


def test_untrusted_the_agents_auto_approved_git_runs_none_of_the_repositorys_programs(
        scripted_server, workspace, home, outside):
    repository(workspace)
    marker = plant(workspace, outside)
    commands = ["git status --short", "git diff", "git log -p -1", "git show HEAD",
                "git blame a.txt", "cd . && git diff --stat"]
    server = scripted_server([*({"tool_calls": [shell(c)]} for c in commands),
                              {"tool_calls": [shell("git -c core.fsmonitor=x status")]},
                              {"content": "done"}, {"content": "verified"}])
    run = run_agent(["-a", "untrusted", "-i", "look"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert not marker.exists(), marker.read_text()
    out = [c["aggregated_output"] for c in run.completed_items("command_execution")]
    assert " M a.txt" in out[0] and " M b.txt" in out[0], out[0]
    assert "cannot run" in out[1] or "diff --git" in out[1], out[1]
    # a git command the agent does not approve on its own is asked about (and declined)
    assert [a["command"] for a in approvals(run)] == ["git -c core.fsmonitor=x status"]
    # without untrusted (a person's yes, or no approvals), git is the user's own
    git(workspace, "status")
    assert marker.exists()


# -- item 13: prose writes stay in the workspace, in every mode ------------------------------


@pytest.mark.parametrize("sandbox", ["danger-full-access", "workspace-write"])
def test_a_prose_write_never_leaves_the_workspace(scripted_server, tmp_path, home, outside,
                                                  sandbox):
    if sandbox != "danger-full-access" and landlock.abi() < 1 and not os.environ.get("CI"):
        pytest.skip("no Landlock on this kernel")
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    escape = tmp_path / "escape.py"  # beside the workspace: reached by sub/../../escape.py
    escape.write_text("def f():\n    return 'ESCAPE-BODY'\n")
    target = outside / "target.py"
    target.write_text("def g():\n    return 'TARGET-BODY'\n")
    (workspace / "link.py").symlink_to(target)
    (workspace / "ok.py").write_text("def h():\n    return 1\n")
    server = scripted_server([
        {"content": "Here is sub/../../escape.py:\n```python\ndef f():\n    return 2\n```\n"
                    "Here is link.py:\n```python\ndef g():\n    return 2\n```\n"
                    "Here is ok.py:\n```python\ndef h():\n    return 2\n```"},
        {"content": "done"}, {"content": "verified"}])
    run = run_agent(["--sandbox", sandbox, "--prompt-profile", "compact", "-i",
                     "Fix sub/../../escape.py, link.py and ok.py"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert escape.read_text() == "def f():\n    return 'ESCAPE-BODY'\n"
    assert target.read_text() == "def g():\n    return 'TARGET-BODY'\n"
    assert (workspace / "ok.py").read_text() == "def h():\n    return 2\n"  # still written
    changes = [c["changes"][0]["path"] for c in run.completed_items("file_change")]
    assert changes == [str(workspace / "ok.py")], changes
    # the task's text never showed the model the files outside either
    sent = json.dumps(server.requests[0]["messages"])
    assert "ESCAPE-BODY" not in sent and "TARGET-BODY" not in sent


# -- a symlink swapped in between the check and the write (in-process) -----------------------


def _swap_to_git(ws: Path) -> None:
    shutil.rmtree(ws / "sub")
    (ws / "sub").symlink_to(ws / ".git" / "hooks", target_is_directory=True)


@needs_landlock
def test_write_file_into_git_through_a_symlink_swapped_in_after_the_check(tmp_path,
                                                                        monkeypatch):
    """Landlock cannot keep .git read-only inside a writable root; the write goes to the
    directory that was checked, held open (tools/paths.held_parent)."""
    from baseagent.tools import write_file
    from baseagent.tools.context import ToolContext
    from baseagent.tools.tool import ToolError

    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / ".git" / "hooks").mkdir(parents=True)
    ctx = ToolContext(cwd=ws, sandbox="workspace-write", env={"TMPDIR": str(ws)})
    real_stat = write_file._stat_or_none

    def swap_then_stat(path):
        _swap_to_git(ws)
        return real_stat(path)

    monkeypatch.setattr(write_file, "_stat_or_none", swap_then_stat)
    with pytest.raises(ToolError, match="directory changed"):
        write_file.run(write_file.Args(file_path="sub/post-checkout", content="x"), ctx)
    assert list((ws / ".git" / "hooks").iterdir()) == []


@needs_landlock
def test_apply_patch_into_git_through_a_symlink_swapped_in_after_the_check(tmp_path,
                                                                         monkeypatch):
    """apply_patch looks at each path again just before it changes it (paths.recheck),
    and undoes what it did before the refusal."""
    from baseagent.tools import apply_patch
    from baseagent.tools.context import ToolContext
    from baseagent.tools.tool import ToolError

    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / ".git" / "hooks").mkdir(parents=True)
    ctx = ToolContext(cwd=ws, sandbox="workspace-write", env={"TMPDIR": str(ws)})
    real_confirm = apply_patch.confirm_writes

    def swap_then_confirm(*args):
        _swap_to_git(ws)
        return real_confirm(*args)

    monkeypatch.setattr(apply_patch, "confirm_writes", swap_then_confirm)
    patch = ("*** Begin Patch\n*** Add File: a.txt\n+a\n*** Add File: sub/post-checkout\n"
             "+#!/bin/sh\n*** End Patch")
    with pytest.raises(ToolError, match="stays read-only"):
        apply_patch.run(apply_patch.Args(input=patch), ctx)
    assert list((ws / ".git" / "hooks").iterdir()) == []
    assert not (ws / "a.txt").exists()  # undone


def test_protected_paths_one_definition(tmp_path):
    """sandbox/paths.py: `.git` of each root whether it exists or not, resolved; a `.git`
    file's gitdir and common dir; the commands' mounts take the ones that exist."""
    from baseagent.sandbox.paths import protected_paths, protecting
    from baseagent.sandbox.policy import Policy

    ws, other = tmp_path / "ws", tmp_path / "other"
    ws.mkdir()
    other.mkdir()
    main = tmp_path / "main" / ".git"
    (main / "worktrees" / "w").mkdir(parents=True)
    (main / "worktrees" / "w" / "commondir").write_text("../..\n")
    (ws / ".git").write_text(f"gitdir: {main}/worktrees/w\n")
    found = protected_paths([ws, other], ws)
    assert found == [ws / ".git", main / "worktrees" / "w", main, other / ".git"]
    assert protecting(main / "config", found) == main
    assert protecting(ws / ".github" / "x", found) is None
    policy = Policy.build("workspace-write", ws, env={"TMPDIR": str(other)})
    try:
        assert {p for p in policy.protected_paths()} >= {ws / ".git", other / ".git"}
        assert main not in policy.protected_paths()  # outside the roots: read-only anyway
        args = policy.supervisor_args()
        try:
            mounted = [args.args[i + 2] for i, a in enumerate(args.args) if a == "--ro"]
        finally:
            args.close()
        assert mounted == [str(ws / ".git")] if policy.enforced else mounted == []
    finally:
        policy.close()


def test_untrusted_write_questions_in_process(tmp_path, outside):
    """Who answers a write question: an approver function (yes writes, once per call for
    all its paths); `requires_action` cannot be asked mid-call (declined); inside the
    workspace nobody is asked; other policies never ask."""
    from baseagent.tools import apply_patch, write_file
    from baseagent.tools.approval import (REQUIRES_ACTION, ApprovalAnswer, ApprovalRequest,
                                          Approvals)
    from baseagent.tools.context import ToolContext
    from baseagent.tools.tool import ToolError

    asked: list[ApprovalRequest] = []

    def yes(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer("approved")

    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    ctx = ToolContext(cwd=ws, approvals=Approvals("untrusted", yes))
    write_file.run(write_file.Args(file_path="in.txt", content="x"), ctx)
    assert asked == []
    patch = (f"*** Begin Patch\n*** Add File: {outside}/a.txt\n+a\n*** Add File: "
             ".git/info/x\n+b\n*** Add File: c.txt\n+c\n*** End Patch")
    apply_patch.run(apply_patch.Args(input=patch), ctx)
    assert len(asked) == 1 and asked[0].kind == "write" and asked[0].prefix == ""
    assert asked[0].command == (f"apply_patch {outside.resolve()}/a.txt "
                                f"{ws.resolve()}/.git/info/x")
    assert (outside / "a.txt").exists() and (ws / ".git" / "info" / "x").exists()
    held = ToolContext(cwd=ws, approvals=Approvals("untrusted", REQUIRES_ACTION))
    with pytest.raises(ToolError, match="no one can be asked at this point"):
        write_file.run(write_file.Args(file_path=f"{outside}/b.txt", content="x"), held)
    assert not (outside / "b.txt").exists()
    for policy in ("never", "on-request", "on-failure"):
        free = ToolContext(cwd=ws, approvals=Approvals(policy, yes))
        write_file.run(write_file.Args(file_path=f"{outside}/{policy}.txt", content="x"),
                       free)
    assert len(asked) == 1
