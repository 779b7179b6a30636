"""The text tool-call parser (llm/text_tool_calls.py) against hostile replies: its work
grows linearly with the reply, it reads at most MAX_TEXT characters, and its scan finds
what the regular expressions it replaced found.

The timing test measures CPU time (process_time: another process on the machine does not
count) at several sizes, the smallest of a few runs each, and asks only that eight times
the input cost well under sixty-four times the time (a quadratic parse): generous enough
for a loaded two-core machine, far from what the old parser did (a 120 KB reply, a minute).
"""
from __future__ import annotations

import json
import re
import time
from typing import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baseagent.llm import text_tool_calls
from baseagent.llm.text_tool_calls import MAX_TEXT, parse_tool_calls
from baseagent.tools.registry import ToolRegistry

TOOLS = ToolRegistry().specs()
CALL = '{"name": "shell", "arguments": {"command": "'

# Replies shaped to make a backtracking parser work hard: each is built to `n` characters.
HOSTILE: dict[str, Callable[[int], str]] = {
    "comment lines after an opening fence": lambda n: "```\n" + "# c\n" * (n // 4),
    "whitespace inside an unclosed tag": lambda n: "<tool_call>x" + " " * n + "y",
    "opening fences only": lambda n: "```json\n" * (n // 8),
    "backticks": lambda n: "`" * n,
    "blank lines after an opening fence": lambda n: "```\n" + "\n" * n,
    "fences with comments, never closed": lambda n: ("```py\n# a\n// b\n" * (n // 16)),
    "tags never closed, then one": lambda n: "<tool_call>" * (n // 11) + "</tool_call>",
    "a call cut off": lambda n: CALL + "x" * n,
    "a call with unescaped quotes": lambda n: CALL + 'a"b' * (n // 3) + '"}}',
    "a call with brackets": lambda n: CALL + "{[" * (n // 2) + "}}",
    "a tagged call json-repair reads": lambda n: "<tool_call>" + CALL + "'x'," * (n // 4)
    + "}}</tool_call>",
    "many small broken calls": lambda n: ("<tool_call>" + CALL + "'x',}}</tool_call>")
    * (n // 60),
    "nesting deeper than json takes": lambda n: '{"name": "shell", "arguments": '
    + '{"a": ' * (n // 6) + "}",
}
SIZES = (16_000, 32_000, 64_000, 128_000)


def cpu_seconds(text: str, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        parse_tool_calls(text, TOOLS)
        best = min(best, time.process_time() - started)
    return best


@pytest.mark.parametrize("shape", HOSTILE, ids=list(HOSTILE))
def test_the_work_grows_linearly_with_the_reply(shape):
    make = HOSTILE[shape]
    times = []
    for n in SIZES:
        spent = cpu_seconds(make(n), repeats=1 if times and times[-1] > 1 else 3)
        times.append(spent)
        # A quadratic parse fails here long before the largest size takes minutes
        assert spent < 20, f"{shape}: {spent:.1f}s of CPU at {n} characters"
    floor = 0.002  # below this the clock and the interpreter's own noise dominate
    growth = max(times[-1], floor) / max(times[0], floor)
    # 8x the input: linear is ~8x the time; quadratic ~64x
    assert growth < 8 * 3, f"{shape}: {[round(t, 4) for t in times]}"


def test_a_reply_past_max_text_is_prose():
    call = '```json\n{"name": "shell", "arguments": {"command": "ls"}}\n```'
    assert parse_tool_calls(call + " " * (MAX_TEXT - len(call)), TOOLS).calls
    long = call + " " * (MAX_TEXT + 1 - len(call))
    parsed = parse_tool_calls(long, TOOLS)
    assert not parsed.calls and parsed.text == long


@pytest.mark.parametrize("text", [
    "[" * 5000,
    '{"name": "shell", "arguments": ' + '{"a": ' * 5000 + "}",
    "<tool_call>" + '{"name": "shell", "arguments": ' + "[" * 5000 + "</tool_call>",
    '```json\n{"name": "shell", "arguments": "' + "[" * 5000 + '"}\n```',
], ids=["the whole answer", "a call's arguments", "in a tag", "in a fence"])
def test_nesting_deeper_than_json_takes_is_no_call(text):
    parsed = parse_tool_calls(text, TOOLS)  # no RecursionError
    assert not parsed.calls


# -- the scan finds what the regular expressions found ------------------------------------------

TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
FENCED = re.compile(r"```[ \t]*[\w+-]*[ \t]*\n(?:[ \t]*(?:#|//)[^\n]*\n)*((?:(?!```).)*?)"
                    r"\n[ \t]*```", re.DOTALL)
PIECES = ["```", "`", "\n", "# c", "// d", "#", " ", "\t", "json", "py-3", "{}", "x",
          "<tool_call>", "</tool_call>", "é"]


def fenced_comment_holds_a_fence(text: str) -> bool:
    """The one known difference: a comment line above a call that holds a fence ends the
    block there for the scan (the expression could skip it, at quadratic cost)."""
    return any(re.match(r"[ \t]*(?:#|//)", line) and "```" in line
               for line in text.split("\n"))


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=24).map("".join))
def test_the_scan_finds_what_the_expressions_found(text):
    assert list(text_tool_calls._tagged(text)) == [
        (m.start(), m.end(), m.group(1)) for m in TAGGED.finditer(text)]
    if not fenced_comment_holds_a_fence(text):
        assert list(text_tool_calls._fenced(text)) == [
            (m.start(), m.end(), m.group(1)) for m in FENCED.finditer(text)]


def test_a_comment_holding_a_fence_still_finds_the_call():
    text = '```json\n# a ``` inside\n{"name": "shell", "arguments": {"command": "ls"}}\n```'
    parsed = parse_tool_calls(text, TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in parsed.calls] == [
        ("shell", {"command": "ls"})]


def test_a_native_call_nested_deeper_than_json_takes_is_invalid_json():
    # The same nesting in a call the API returned: the registry's error, not a RecursionError
    registry = ToolRegistry()
    deep = '{"command": ' + "[" * 5000 + "]" * 5000 + "}"
    assert registry.prepare("shell", deep).error.startswith("invalid JSON in the arguments")
    assert registry.repair("shell", '{"command": ' + "[" * 5000) is None
