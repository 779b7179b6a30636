"""Text made inert for a terminal (textsafe.py), and the terminal renderer drawing what the
model chose through it: no control character, escape, bidi override or invisible character
reaches the terminal from a command, a file name, a plan step, a reason, a message or the
approval question; each is shown spelled out. The pseudo-terminal test of the approval
question is tests/cli/test_approvals.py::test_an_approval_question_shows_escapes."""
from __future__ import annotations

import dataclasses
import io
import re
import unicodedata

import pytest

from baseagent.emitting import events as engine
from baseagent.output.header import header_lines
from baseagent.output.pretty import PrettySink
from baseagent.output.term import TerminalCaps
from baseagent.textsafe import inert, inert_line


@pytest.mark.parametrize("text, shown", [
    ("git status", "git status"),
    ("\x1b[2K\x1b[1G  $ git status", "\\x1b[2K\\x1b[1G  $ git status"),
    ("a\rb", "a\\rb"), ("bell\x07", "bell\\x07"), ("nul\x00", "nul\\x00"),
    ("del\x7f", "del\\x7f"), ("csi\x9b31m", "csi\\x9b31m"), ("nel\x85", "nel\\x85"),
    ("rm -rf /\u202e", "rm -rf /\\u202e"), ("a\u2066b\u2069", "a\\u2066b\\u2069"),
    ("\u202a\u202b\u202c\u202d", "\\u202a\\u202b\\u202c\\u202d"),
    ("\u200e\u200f", "\\u200e\\u200f"),
    ("zero\u200bwidth\u200c\u200d\u2060\ufeff", "zero\\u200bwidth\\u200c\\u200d\\u2060\\ufeff"),
    ("soft\u00adhyphen", "soft\\u00adhyphen"), ("line\u2028sep\u2029", "line\\u2028sep\\u2029"),
    ("tag\U000e0041", "tag\\U000e0041"), ("private\ue000", "private\\ue000"),
    ("tab\tkept", "tab\tkept"), ("two\nlines", "two\nlines"),
    ("café ☕ 日本 — “quotes”", "café ☕ 日本 — “quotes”"),  # printable: as it is
    ("printf '\\x1b'", "printf '\\x1b'"),  # a typed backslash stays as typed
])
def test_inert_spells_out_what_a_terminal_would_act_on(text, shown):
    assert inert(text) == shown


def test_one_row_shows_newlines_too():
    assert inert_line("a\nb\tc") == "a\\nb\tc"
    assert inert("a\nb", multiline=False) == "a\\nb"


def test_nothing_hidden_survives_any_character():
    everything = "".join(chr(c) for c in range(0x2FFFF) if not 0xD800 <= c < 0xE000)
    shown = inert(everything)
    left = {unicodedata.category(c) for c in shown if c not in "\t\n"}
    assert not left & {"Cc", "Cf", "Zl", "Zp", "Co", "Cs"}
    assert "\x1b" not in inert_line(everything) and "\n" not in inert_line(everything)


HOSTILE = "\x1b[2K\x1b[1G  $ git status\u202e"


def render(events: list[engine.RunEvent], live: bool = False) -> str:
    out = io.StringIO()
    sink = PrettySink(out, caps=TerminalCaps(live=live, colors=None, width=200, height=50),
                      spinner=False)
    for event in events:
        sink.run_event(event)
    sink.close()
    return out.getvalue()


def _controls(text: str) -> list[str]:
    """Control characters and hidden ones in what was drawn, the renderer's own cursor
    moves (`ESC [ 1A`, `ESC [ 2K`, `\\r` of the live block) aside."""
    text = re.sub(r"\r?\x1b\[(?:1A|2K)", "", text)
    return [c for c in text if c not in "\n" and
            unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp"}]


@pytest.mark.parametrize("live", [False, True])
def test_the_renderer_draws_every_model_chosen_text_inert(live):
    command = engine.ToolCallItem(id="c", kind="command_execution", name="shell",
                                  server="baseagent", tool="shell",
                                  command=f"touch x # {HOSTILE}\necho two")
    change = engine.ToolCallItem(id="f", kind="file_change", name="write_file",
                                 server="baseagent", tool="write_file",
                                 changes=({"path": f"/w/{HOSTILE}.py", "kind": "add"},))
    other = engine.ToolCallItem(id="o", kind="mcp_tool_call", name="read_file",
                                server="baseagent", tool="read_file",
                                arguments={"file_path": HOSTILE})
    plan = engine.TurnScopedItem(id="p", kind="todo_list",
                                 data={"items": [{"text": HOSTILE, "completed": False}]})
    approval = engine.ApprovalItem(id="a", command=f"touch y # {HOSTILE}", cwd="/w",
                                   kind="unsafe", reason=HOSTILE, prefix=f"touch{HOSTILE}")
    text = render([
        engine.TurnStarted(turn_id="t", thread_id="th"),
        engine.ItemStarted(item=engine.TextItem(id="r", kind="reasoning", text=HOSTILE)),
        engine.ItemCompleted(item=engine.TextItem(id="r", kind="reasoning", text=HOSTILE)),
        engine.ItemCompleted(item=plan),
        engine.ItemStarted(item=approval),
        engine.ItemCompleted(item=dataclasses.replace(approval, decision="denied",
                                                      note=HOSTILE)),
        engine.ItemStarted(item=command),
        engine.ItemUpdated(item=dataclasses.replace(
            command, progress={"aggregated_output": f"out {HOSTILE}\n"})),
        engine.ItemCompleted(item=dataclasses.replace(command, outcome=engine.ToolOutcome(
            True, "", {"aggregated_output": f"out {HOSTILE}\n", "exit_code": 0}))),
        engine.ItemCompleted(item=dataclasses.replace(change, outcome=engine.ToolOutcome(
            False, f"Error: {HOSTILE}"))),
        engine.ItemCompleted(item=dataclasses.replace(other, outcome=engine.ToolOutcome(
            False, HOSTILE))),
        engine.Notice(message=HOSTILE),
        engine.ItemCompleted(item=engine.TextItem(id="m", kind="message",
                                                  text=f"# Done\n{HOSTILE}")),
        engine.TurnEnded("completed", usage={}),
    ], live=live)
    assert _controls(text) == []
    assert "\\x1b[2K\\x1b[1G  $ git status\\u202e" in text
    # the approval question: the command's first line after `$`, the rest indented
    assert "  $ touch y # \\x1b[2K\\x1b[1G  $ git status\\u202e\n" in text
    assert "$ touch x # \\x1b[2K" in text and "\n  echo two\n" in text
    assert "A not written: /w/\\x1b[2K\\x1b[1G  $ git status\\u202e.py" in text


def test_the_header_draws_what_it_was_given_inert():
    lines = header_lines(version="1", thread_id="t", model="m\x1b[8m", cwd=f"/w/{HOSTILE}",
                         sandbox="read-only", notes=["note\x1b]0;title\x07"], color=False)
    assert _controls("\n".join(lines)) == []
    assert "/w/\\x1b[2K" in lines[1] and "m\\x1b[8m" in lines[1]


def test_sessions_show_and_search_draw_model_text_inert():
    from baseagent.sessions import SessionSummary, render_hits, render_show
    from baseagent.storage import SearchHit

    shown = render_show(SessionSummary(thread_id="t", path="p", updated="", size_bytes=1,
                                       instructions=[HOSTILE]),
                        [{"role": "assistant", "content": f"ok {HOSTILE}"}])
    hits = render_hits([SearchHit("t", "2026-01-01T00:00:00", "assistant", HOSTILE)])
    assert _controls(shown) == [] and _controls(hits) == []
    assert "assistant ok \\x1b[2K" in shown and "\\u202e" in hits


def test_the_error_line_on_stderr_shows_a_servers_escapes(scripted_server, workspace, home):
    from helpers import run_agent

    server = scripted_server([{"fault": "status", "status": 401,
                               "message": "bad key\x1b[2J\x1b]0;owned\x07"}])
    run = run_agent(["-i", "hi"], cwd=workspace, home=home, api_base=server.api_base)
    assert run.returncode != 0
    line = next(line for line in run.stderr.splitlines()
                if line.startswith("baseagent: error:"))
    assert "bad key\\x1b[2J\\x1b]0;owned\\x07" in line and "\x1b" not in run.stderr
