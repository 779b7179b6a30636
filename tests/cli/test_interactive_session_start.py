"""How a person starts and steers the session (issue 40): `baseagent "task"` on a terminal
opens the session seeded with the task; the slash commands /status, /approvals, /init,
/compact and /clear; a resumed thread replays its conversation before the prompt.
agent.py on a pseudo-terminal (pexpect) against the scripted model server."""
from __future__ import annotations

import re

import pexpect

from test_interactive import prompt, screen, session_args, spawn, wait


def call(name: str, **arguments: str) -> dict:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def test_a_task_on_the_command_line_opens_the_session_with_it(scripted_server, workspace, home):
    server = scripted_server([{"content": "Seeded answer."}, {"content": "Second answer."}])
    (workspace / "shot.png").write_bytes(PNG)
    child = spawn([*session_args(server), "--no-verify", "--image", "shot.png", "say hello"],
                  workspace, home)
    wait(child, "› say hello")
    wait(child, "✓ completed · turn 1")
    prompt(child)  # the session goes on: the prompt, not the end of a one-shot run
    assert "Seeded answer." in screen(child)
    child.send("and again\r")
    wait(child, "✓ completed · turn 2")
    prompt(child)
    first = [m for m in server.requests[0]["messages"] if m["role"] == "user"][-1]
    assert {p["type"] for p in first["content"]} == {"text", "image_url"}  # --image with it
    users = [str(m["content"]) for m in server.requests[-1]["messages"] if m["role"] == "user"]
    assert any("say hello" in u for u in users) and "and again" in users  # one thread
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_status_approvals_init_compact_and_clear(scripted_server, workspace, home):
    server = scripted_server([
        {"content": "First."},
        # /init: the agent writes AGENTS.md
        call("write_file", file_path="AGENTS.md", content="# Agents\nrun the tests\n"),
        {"content": "Wrote AGENTS.md."},
        # /compact: the summary
        {"content": "The person said hello; AGENTS.md was written."},
        {"content": "After compaction."},
    ])
    child = spawn([*session_args(server), "--no-verify"], workspace, home)
    prompt(child)
    child.send("/status\r")
    wait(child, "context    measured after the first turn")
    prompt(child)
    text = screen(child)
    for row in ("model      openai/scripted", "sandbox    workspace-write",
                "approvals  on-request", "tokens     0 in"):
        assert row in text, text
    # a long workspace path wraps at the terminal's width
    assert f"workspace{workspace}" in "".join(text.split())
    child.send("hello\r")
    wait(child, "✓ completed · turn 1")
    prompt(child)
    child.send("/status\r")
    wait(child, "% left")
    prompt(child)
    assert re.search(r"context    ~[\d,]+ of [\d,]+ tokens used · \d+% left", screen(child))

    child.send("/approvals\r")
    wait(child, "approvals: on-request (/approvals POLICY:")
    prompt(child)
    child.send("/approvals sometimes\r")
    wait(child, "no approval policy 'sometimes'")
    prompt(child)
    thread_id = re.search(r"thread ([0-9a-f-]{36})", screen(child)).group(1)
    child.send("/approvals never\r")
    wait(child, "approvals: never for this session (was on-request)")
    prompt(child)
    child.send("/status\r")
    wait(child, "approvals  never")
    prompt(child)
    assert f"thread     {thread_id}" in screen(child)  # the same thread

    child.send("/init\r")
    wait(child, "✓ completed · turn 2")
    prompt(child)
    assert (workspace / "AGENTS.md").read_text() == "# Agents\nrun the tests\n"
    assert "AGENTS.md" in server.requests[1]["messages"][-1]["content"]
    child.send("/init\r")
    wait(child, "exists already")
    prompt(child)

    child.send("/compact\r")
    wait(child, "compacted: ")
    prompt(child)
    child.send("go on\r")
    wait(child, "✓ completed · turn 3")
    prompt(child)
    last = server.requests[-1]["messages"]
    assert any("The person said hello" in str(m.get("content")) for m in last)
    # the agent's side of the earlier turns is summarised away (the person's words stay)
    assert not any(m.get("content") in ("First.", "Wrote AGENTS.md.") for m in last)

    child.send("/clear\r")
    wait(child, "new thread")
    prompt(child)
    ids = re.findall(r"thread ([0-9a-f-]{36}) \(new thread\)", screen(child))
    assert ids[-1] != thread_id
    child.send("/exit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_resume_replays_the_earlier_conversation(scripted_server, workspace, home):
    server = scripted_server([{"content": "The first answer."},
                              {"content": "The second answer."}])
    child = spawn([*session_args(server), "--no-verify"], workspace, home)
    prompt(child)
    child.send("the first question\r")
    wait(child, "✓ completed · turn 1")
    prompt(child)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    thread_id = re.search(r"thread ([0-9a-f-]{36})", screen(child)).group(1)

    child = spawn([*session_args(server), "--no-verify", "--resume", thread_id], workspace,
                  home)
    wait(child, "earlier in this thread:")
    wait(child, "› the first question")
    wait(child, "The first answer.")
    prompt(child)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()


PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6300010000050001"
                    "0d0a2db40000000049454e44ae426082")


def test_at_mentions_complete_as_you_type_and_attach_the_file(scripted_server, workspace,
                                                               home, tmp_path):
    (workspace / "src").mkdir()
    (workspace / "src" / "notes_about_parsing.txt").write_text("the parser is in lexer.py\n")
    (workspace / "secret").symlink_to(tmp_path)  # leads out of the workspace
    (tmp_path / "out.txt").write_text("not for the model\n")
    dropped = tmp_path / "My Shot.png"
    dropped.write_bytes(PNG)
    server = scripted_server([{"content": "Read it."}, {"content": "A pixel."}])
    child = spawn([*session_args(server), "--no-verify"], workspace, home)
    prompt(child)
    child.send("explain @notes_ab")
    wait(child, "src/notes_about_parsing.txt")  # the completion menu, from the workspace
    child.send("\t")  # take the first completion
    child.send(" please\r")
    wait(child, "attached @src/notes_about_parsing.txt (26 bytes)")
    wait(child, "✓ completed · turn 1")
    prompt(child)
    users = [m for m in server.requests[0]["messages"] if m["role"] == "user"]
    sent = users[-1]["content"]
    assert sent.startswith("explain @src/notes_about_parsing.txt please")
    assert '<file path="src/notes_about_parsing.txt">\nthe parser is in lexer.py\n</file>' in sent

    # a dropped image (the terminal pastes its path, spaces escaped) goes as an image;
    # a mention through a symlink out of the workspace is not sent
    child.send(f"what is this {str(dropped).replace(' ', chr(92) + ' ')} @secret/out.txt\r")
    wait(child, "@secret/out.txt: outside the workspace, not attached")
    wait(child, "attached My Shot.png (image)")
    wait(child, "✓ completed · turn 2")
    prompt(child)
    last = [m for m in server.requests[1]["messages"] if m["role"] == "user"][-1]
    assert {p["type"] for p in last["content"]} == {"text", "image_url"}
    assert "not for the model" not in str(last["content"])
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    history = home / ".baseagent" / "prompt_history"
    assert history.stat().st_mode & 0o777 == 0o600
