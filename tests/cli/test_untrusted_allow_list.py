"""`-a untrusted` end to end: the model plays the attacker with commands built from programs
on the known-safe list (tools/safe_commands.py) whose options run code or write files. Each
is asked (a headless run has nobody to ask, so each is declined) and nothing it would have
done happens, while the ordinary read-only commands beside them still run without a
question. Real CLI, scripted model server."""
from __future__ import annotations

import subprocess

from helpers import run_agent

# Each would run `bash` on a file the workspace holds, or write a file, if it ran.
ATTACKS = [
    "sort -S 1k --compress-program=bash cmds.txt",
    "git grep --no-index -Obash pwned g.sh",
    "uniq IN OUT",
    "sort -oSORTED IN",
    "git log --output=LOGF",
    "find . -name IN -fprint FOUND",
    "sed -n '1w SEDOUT' IN",
]
SAFE = ["ls -la", "git status", "git log --oneline -5", "sort IN", "sed -n 1,5p IN",
        "grep -rn pwned g.sh", "find . -name '*.sh'"]
# What the attacks would leave behind.
TRACES = ["pwned-sort", "pwned-grep", "OUT", "SORTED", "LOGF", "FOUND", "SEDOUT"]


def _setup(workspace):
    (workspace / "cmds.txt").write_text("".join(
        f"touch {workspace}/pwned-sort # {i:06d}\n" for i in range(2000)))
    (workspace / "g.sh").write_text(f"touch {workspace}/pwned-grep # pwned\n")
    (workspace / "IN").write_text("b\na\n")
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=workspace, check=True)
    subprocess.run([*git, "add", "."], cwd=workspace, check=True)
    subprocess.run([*git, "commit", "-qm", "start"], cwd=workspace, check=True)


def test_untrusted_asks_before_safe_programs_with_unsafe_arguments(scripted_server, workspace,
                                                                   home):
    _setup(workspace)
    steps = [{"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}
             for command in [*ATTACKS, *SAFE]]
    server = scripted_server([*steps, {"content": "Done."}, {"content": "Checked."}])
    run = run_agent(["-i", "look around", "-a", "untrusted"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    asked = [e["item"] for e in run.of_type("item.completed")
             if e["item"]["type"] == "approval_request"]
    assert [a["command"] for a in asked] == ATTACKS
    assert {(a["kind"], a["decision"]) for a in asked} == {("unsafe", "denied")}
    commands = {c["command"]: c for c in run.completed_items("command_execution")}
    for attack in ATTACKS:
        assert commands[attack]["status"] == "declined", attack
    for command in SAFE:
        assert commands[command]["status"] == "completed", (command, commands[command])
        assert commands[command]["exit_code"] == 0
    assert "a\nb" in commands["sort IN"]["aggregated_output"]
    left = sorted(p.name for p in workspace.iterdir() if p.name in TRACES)
    assert left == []
