"""Tool calls written as text (llm/text_tool_calls.py): what becomes a call, what stays text."""
from __future__ import annotations

import json

import pytest

from baseagent.llm.text_tool_calls import parse_tool_calls
from baseagent.tools.registry import ToolRegistry

TOOLS = ToolRegistry().specs()
LS = {"name": "shell", "arguments": {"command": "ls"}}


def _tag(obj: object) -> str:
    return f"<tool_call>\n{json.dumps(obj)}\n</tool_call>"


# (text, expected calls as (name, arguments), expected remaining text)
CASES = {
    "hermes tag": (_tag(LS), [("shell", {"command": "ls"})], ""),
    "tag with prose around": (f"I will list the files.\n{_tag(LS)}\nThen read.",
                              [("shell", {"command": "ls"})], "I will list the files.\n\nThen read."),
    "two tags": (_tag(LS) + "\n" + _tag({"name": "read_file", "arguments": {"file_path": "a"}}),
                 [("shell", {"command": "ls"}), ("read_file", {"file_path": "a"})], ""),
    "unclosed tag at the end": ('<tool_call>\n{"name": "shell", "arguments": {"command": "pwd"}}',
                                [("shell", {"command": "pwd"})], ""),
    "json fence": ('Running it:\n```json\n{"name": "shell", "arguments": {"command": "ls"}}\n```',
                   [("shell", {"command": "ls"})], "Running it:"),
    "plain fence": ('```\n{"name": "list_dir", "arguments": {"dir_path": "."}}\n```',
                    [("list_dir", {"dir_path": "."})], ""),
    "whole answer is the object": (json.dumps(LS), [("shell", {"command": "ls"})], ""),
    "parameters instead of arguments": (_tag({"name": "shell", "parameters": {"command": "ls"}}),
                                        [("shell", {"command": "ls"})], ""),
    "arguments as a JSON string": (_tag({"name": "shell", "arguments": '{"command": "ls"}'}),
                                   [("shell", {"command": "ls"})], ""),
    "optional argument kept": (_tag({"name": "shell", "arguments": {"command": "ls",
                                                                     "timeout_ms": 5000}}),
                               [("shell", {"command": "ls", "timeout_ms": 5000})], ""),
    "a JSON array of calls": (json.dumps([LS, {"name": "write_file", "arguments": {
        "file_path": "c.txt", "content": "6"}}]),
        [("shell", {"command": "ls"}), ("write_file", {"file_path": "c.txt", "content": "6"})],
        ""),
    # never run: these stay text
    "an array with one invalid call": (json.dumps([LS, {"name": "nope", "arguments": {}}]),
                                       [], None),
    "an array that is not calls": ("[1, 2, 3]", [], None),
    "tool not offered": (_tag({"name": "rm_rf", "arguments": {}}), [], None),
    "missing required argument": (_tag({"name": "shell", "arguments": {}}), [], None),
    "argument of the wrong type": (_tag({"name": "shell", "arguments": {"command": 3}}),
                                   [], None),
    "unknown argument": (_tag({"name": "shell", "arguments": {"command": "ls", "sudo": True}}),
                         [], None),
    "not JSON": ("<tool_call>shell ls</tool_call>", [], None),
    "JSON that is not a call": ('```json\n{"name": "Ada", "age": 36}\n```', [], None),
    "extra keys on the call": (_tag({"name": "shell", "arguments": {"command": "ls"},
                                     "why": "x"}), [], None),
    "a call mentioned inside prose": (f"Use {json.dumps(LS)} to list files.", [], None),
    "plain answer": ("Done: hello.py prints a greeting.", [], None),
    "empty": ("", [], None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_text_tool_calls(name: str) -> None:
    text, calls, remaining = CASES[name]
    parsed = parse_tool_calls(text, TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in parsed.calls] == calls
    assert parsed.text == (text if remaining is None else remaining)


def test_a_valid_call_next_to_an_invalid_one_runs_alone() -> None:
    text = _tag({"name": "nope", "arguments": {}}) + "\n" + _tag(LS)
    parsed = parse_tool_calls(text, TOOLS)
    assert [c.name for c in parsed.calls] == ["shell"]
    assert "nope" in parsed.text  # the invalid one stays in the text, unrun


def test_no_tools_offered_means_no_calls() -> None:
    assert parse_tool_calls(_tag(LS), []).calls == []
    assert parse_tool_calls(_tag(LS), None).text == _tag(LS)


def test_null_for_an_optional_argument_means_not_given():
    from baseagent.prompts.profiles import COMPACT

    specs = [COMPACT.shape(s) for s in ToolRegistry().specs()]  # optional ints, no null
    text = ('```json\n{"name": "shell", "arguments": {"command": "ls", "workdir": null, '
            '"timeout_ms": null}}\n```')
    parsed = parse_tool_calls(text, specs)
    assert [(c.name, json.loads(c.arguments)) for c in parsed.calls] == [("shell", {"command": "ls"})]
    required_null = '{"name": "shell", "arguments": {"command": null}}'
    assert parse_tool_calls(required_null, specs).calls == []


def test_fenced_calls_in_any_language_with_comment_lines_above():
    text = ('Step 1\n```python\n# tools\n{"name": "read_file", "arguments": {"file_path": "a.py"}}'
            '\n```\nStep 2\n```python\ndef f():\n    pass\n```\n')
    parsed = parse_tool_calls(text, ToolRegistry().specs())
    assert [c.name for c in parsed.calls] == ["read_file"]
    assert "def f():" in parsed.text and "read_file" not in parsed.text


def test_a_block_of_comments_only_does_not_run_into_the_next_block():
    """A ```python block holding only `# Run the tests with: ...` once swallowed the fence
    after it, so the call in the next block was reported unreadable and never ran."""
    text = ('pangram.py\n```python\ndef is_pangram(s):\n    return True\n```\n\n'
            '```python\n# Run the tests with: python -m pytest -q pangram_test.py\n```\n\n'
            'If they pass:\n\n```json\n'
            '{"name": "shell", "arguments": {"command": "python -m pytest -q pangram_test.py"}}'
            '\n```')
    parsed = parse_tool_calls(text, ToolRegistry().specs())
    assert parsed.malformed == []
    assert [(c.name, json.loads(c.arguments)) for c in parsed.calls] == [
        ("shell", {"command": "python -m pytest -q pangram_test.py"})]
    assert "def is_pangram(s):" in parsed.text
