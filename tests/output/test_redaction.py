"""Secrets the agent holds never reach the JSONL, the session record, stderr or a command."""
from __future__ import annotations

import io
import json

from baseagent.records.recorder import SessionRecorder
from baseagent.output import events as ev
from baseagent.output.emitter import Emitter
from baseagent.output.jsonl import JsonlSink
from baseagent.output.redact import MARK, Redactor, RedactingStream
from reliability import session_records, shell
from helpers import run_agent

OPENAI_KEY = "sk-secret-value-123456"
GITHUB_TOKEN = "ghp_secretTokenValue999"
CONFIG_KEY = "cfg-secret-key-abcdef"
SECRETS = (OPENAI_KEY, GITHUB_TOKEN, CONFIG_KEY)


def test_secrets_are_stripped_from_commands_and_redacted_everywhere(scripted_server,
                                                                   tmp_path):
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    (home / ".baseagent").mkdir(parents=True)
    (home / ".baseagent" / "config.toml").write_text(f'api_key = "{CONFIG_KEY}"\n')
    (workspace / "secret.txt").write_text(f"openai={OPENAI_KEY}\ngithub={GITHUB_TOKEN}\n"
                                          f"config={CONFIG_KEY}\n")
    server = scripted_server([
        {"tool_calls": [shell('echo "key=[$OPENAI_API_KEY] gh=[$GITHUB_TOKEN]"; '
                              'cat secret.txt; env | grep -c -e sk-secret -e ghp_secret')]},
        {"tool_calls": [{"name": "read_file", "arguments": {"file_path": "secret.txt"}}]},
        # a call with it, so that the turn goes on (a question would end at its answer)
        {"content": f"I saw {OPENAI_KEY} in the file.", "tool_calls": [shell("true")]},
        # the provider quotes the key back in its error, as some do
        {"fault": "status", "status": 401,
         "message": f"Incorrect API key provided: {OPENAI_KEY}. Token {GITHUB_TOKEN}."},
    ])
    run = run_agent(["-i", "show me the secrets"], cwd=workspace, home=home,
                    api_base=server.api_base,
                    env_extra={"OPENAI_API_KEY": OPENAI_KEY, "GITHUB_TOKEN": GITHUB_TOKEN,
                               "BASEAGENT_MAX_RETRIES": "0"})
    assert run.returncode == 1, run.stderr

    # commands never saw the variables
    command = run.completed_items("command_execution")[0]
    assert command["aggregated_output"].startswith("key=[] gh=[]\n")
    assert command["aggregated_output"].endswith("\n0\n")  # `env` holds none of them
    # what a command printed from a file is redacted in the event stream
    assert f"openai={MARK}\ngithub={MARK}\nconfig={MARK}\n" in command["aggregated_output"]
    read = run.completed_items("mcp_tool_call")[0]
    assert f"L1: openai={MARK}" in read["result"]["content"][0]["text"]
    assert run.completed_items("agent_message")[0]["text"] == f"I saw {MARK} in the file."
    # the auth failure is clear, and does not repeat the key
    assert run.events[-1] == {"type": "turn.failed", "error": {"message": (
        f"model call failed: authentication failed (check the API key) (401): "
        f"Incorrect API key provided: {MARK}. Token {MARK}.")}}
    assert len(server.requests) == 4  # the 401 was not retried

    record_text = (home / ".baseagent" / "sessions" /
                   f"{run.events[0]['thread_id']}.jsonl").read_text()
    for secret in SECRETS:
        assert secret not in run.stdout
        assert secret not in run.stderr
        assert secret not in record_text
    records = session_records(home, run.events[0]["thread_id"])
    tool_messages = [r["message"]["content"] for r in records
                     if r["kind"] == "message" and r["message"]["role"] == "tool"]
    assert f"openai={MARK}" in tool_messages[0]


# -- the pieces --------------------------------------------------------------------------------

def test_redactor_from_environment():
    redactor = Redactor.from_environment(
        {"OPENAI_API_KEY": OPENAI_KEY, "MY_TOKEN": "tok-123456789", "SHORT_TOKEN": "abc",
         "PATH": "/usr/local/bin:/usr/bin", "HOME": "/home/someone-long"},
        extra=[CONFIG_KEY, None])
    text = f"{OPENAI_KEY} tok-123456789 abc /usr/bin {CONFIG_KEY}"
    assert redactor.text(text) == f"{MARK} {MARK} abc /usr/bin {MARK}"
    assert not Redactor.from_environment({"PATH": "/usr/bin"})


def test_redactor_keeps_json_valid_and_untouched_objects_identical():
    secret = 'pa"ss\\word-123'
    redactor = Redactor([secret, "short"])
    assert redactor.text(json.dumps({"v": secret})) == json.dumps({"v": MARK})
    data = {"a": [1, {"b": f"x {secret} y"}], "c": "clean"}
    clean = redactor.data(data)
    assert clean == {"a": [1, {"b": f"x {MARK} y"}], "c": "clean"}
    untouched = {"a": ["nothing", {"b": "here"}]}
    assert redactor.data(untouched) is untouched
    assert redactor.text("short stays") == "short stays"  # below the minimum length


def test_longer_secret_wins_over_its_prefix():
    assert Redactor(["abcdefgh", "abcdefgh-ijkl"]).text("abcdefgh-ijkl") == MARK


def test_emitter_redacts_for_every_listener(tmp_path):
    out = io.BytesIO()
    record = SessionRecorder(tmp_path / "s.jsonl", redact=Redactor([OPENAI_KEY]).data)
    emitter = Emitter([JsonlSink(out)], redact=Redactor([OPENAI_KEY]))
    emitter.add_listener(record)
    emitter.emit(ev.ItemCompleted(item=ev.CommandExecutionItem(
        id="item_0", command=f"echo {OPENAI_KEY}", aggregated_output=f"{OPENAI_KEY}\n",
        exit_code=0, status="completed")))
    record.message({"role": "tool", "tool_call_id": "c", "content": f"key {OPENAI_KEY}"})
    record.close()
    line = json.loads(out.getvalue())
    assert line["item"]["command"] == f"echo {MARK}"
    assert line["item"]["aggregated_output"] == f"{MARK}\n"
    text = (tmp_path / "s.jsonl").read_text()
    assert OPENAI_KEY not in text and text.count(MARK) == 3


def test_redacting_stream():
    target = io.StringIO()
    stream = RedactingStream(target, Redactor([GITHUB_TOKEN]))
    print(f"token {GITHUB_TOKEN} leaked", file=stream)
    assert target.getvalue() == f"token {MARK} leaked\n"


# -- secrets in pieces and in other forms (issue 14) -------------------------------------------

PIECES_KEY = "sk-pieces-0123456789abcdefghijKLMN"


def leaked_runs(text: str, secret: str, size: int = 12) -> list[str]:
    """Every run of `size` characters of `secret` that `text` holds."""
    return [secret[i:i + size] for i in range(len(secret) - size + 1)
            if secret[i:i + size] in text]


def test_secrets_in_pieces_and_encodings_are_redacted(scripted_server, tmp_path):
    import base64

    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    (workspace / "key.txt").write_text(PIECES_KEY)
    printed = ("head -c 16 key.txt; sleep 0.8; tail -c +17 key.txt; echo; "  # two prints
               "rev key.txt; echo; base64 -w0 key.txt; echo; "
               "printf 'xy%s' \"$(cat key.txt)\" | base64 -w0; echo; fold -w 14 key.txt")
    server = scripted_server([
        {"tool_calls": [shell(printed)]},
        # the model streams the key back, three characters at a time
        {"content": f"The key is {PIECES_KEY} as asked.", "chunk_size": 3,
         "chunk_delay": 0.03},  # no edit, no test named: the answer, no verification round
    ])
    last = tmp_path / "last.txt"
    run = run_agent(["--output-last-message", str(last), "-i", "print the key"],
                    cwd=workspace, home=home, api_base=server.api_base,
                    env_extra={"OPENAI_API_KEY": PIECES_KEY})
    assert run.returncode == 0, run.stderr
    updates = [e["item"] for e in run.of_type("item.updated")]
    assert any(i["type"] == "agent_message" for i in updates)
    assert any(i["type"] == "command_execution" for i in updates)
    forms = [PIECES_KEY[::-1], base64.b64encode(PIECES_KEY.encode()).decode()[:-4]]
    for text in (run.stdout, run.stderr, last.read_text()):
        assert not leaked_runs(text, PIECES_KEY), leaked_runs(text, PIECES_KEY)
        assert not any(form in text for form in forms)
    for item in updates:  # a growing prefix never shows more than seven characters
        shown = item.get("text") or item.get("aggregated_output") or ""
        assert not any(shown.endswith(PIECES_KEY[:n]) for n in range(8, len(PIECES_KEY)))
    assert last.read_text() == f"The key is {MARK} as asked."
    record = (home / ".baseagent" / "sessions" /
              f"{run.events[0]['thread_id']}.jsonl").read_text()
    assert not leaked_runs(record, PIECES_KEY)


def test_redactor_pieces_edges_and_encodings():
    import base64

    redactor = Redactor([PIECES_KEY])
    assert redactor.text(f"a {PIECES_KEY[:14]}\n{PIECES_KEY[14:]} b") == f"a {MARK}\n{MARK} b"
    assert redactor.text(f"streaming {PIECES_KEY[:9]}") == f"streaming {MARK}"
    assert redactor.text(f"{PIECES_KEY[-8:]} was cut") == f"{MARK} was cut"
    # a short name equal to a key's first characters (its vendor prefix) stays readable
    assert redactor.text(PIECES_KEY[:6]) == PIECES_KEY[:6]
    assert redactor.text(f"mid {PIECES_KEY[3:10]} mid") == f"mid {PIECES_KEY[3:10]} mid"
    for prefix in (b"", b"A", b"AB"):
        encoded = base64.b64encode(prefix + PIECES_KEY.encode() + b"tail").decode()
        assert MARK in redactor.text(encoded)
        assert not leaked_runs(redactor.text(encoded), encoded[len(prefix) + 2:], 16)
    assert redactor.text(PIECES_KEY.encode().hex()) == MARK
    assert redactor.text("ordinary text, sk- and all") == "ordinary text, sk- and all"
