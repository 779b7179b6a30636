"""Tool calls a model wrote as text: what local models served without tool-call parsing do.

Small open models (and servers that do not parse their output: llama.cpp without --jinja,
older LM Studio and Ollama builds) answer with the call in the text instead of the API's
`tool_calls`. Three shapes are recognised, each holding one JSON object
`{"name": ..., "arguments": {...}}` ("parameters" is taken for "arguments", and arguments
given as a JSON string are decoded):

- Hermes / Qwen tags: `<tool_call>{...}</tool_call>` (the closing tag may be missing at
  the very end, where generation stopped on it);
- a fenced block: ```` ```json {...} ``` ```` (any language or none; comment lines above
  the object are skipped);
- the whole answer being that one object, or a JSON array of such objects (as some models
  list parallel calls); an array runs only if every call in it is valid.

Both shapes are found by a scan in linear time (each opening is read up to the next fence
or closing tag, and the search goes on from there), over a text of at most MAX_TEXT
characters: a longer answer is taken as prose. A regular expression with lazy content and
optional comment lines backtracked there (a 120 KB answer took a minute of CPU).

A candidate becomes a call only if its tool is offered in this request and its arguments
validate against that tool's JSON schema; anything else stays text and never runs. JSON
with the slips small models make (unescaped quotes and newlines in strings, triple-quoted blocks,
single quotes, trailing commas) is read leniently (llm/lenient_json.py) and the call says
so in `repair`, for the tool result to tell the model. A candidate that names an offered
tool but cannot be read at all is reported in `malformed`, so the loop can tell the model
its call did not run instead of taking it for an answer.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

PARSER_MODES = ("auto", "native", "text")
# The longest answer read for calls (characters); a reply holding a whole file in a call
# stays well under it. A longer one is prose.
MAX_TEXT = 1 << 20
_OPEN_TAG, _CLOSE_TAG = "<tool_call>", "</tool_call>"
FENCE = "```"
# The rest of a fence's opening line: any language (small models label the call ```python
# or ```bash as often as ```json), or none.
_FENCE_LABEL = re.compile(r"[ \t]*[\w+-]*[ \t]*\n")
# A comment line above the call (`# tools`), skipped.
_COMMENT = re.compile(r"[ \t]*(?:#|//)[^\n]*\n")
# What json.loads raises on a text it cannot read (too deep a nesting is a RecursionError)
_UNREAD = (ValueError, RecursionError)


@dataclass
class TextCall:
    name: str
    arguments: str  # JSON text of the arguments object
    repair: str = ""  # how its JSON was repaired ("" when it was strict JSON)


@dataclass
class ParsedText:
    """The calls found in a text, and the text that is left once they are taken out;
    `malformed`: one line per would-be call to an offered tool that could not be read."""

    calls: list[TextCall] = field(default_factory=list)
    text: str = ""
    malformed: list[str] = field(default_factory=list)


def parse_tool_calls(text: str, tools: list[dict[str, Any]] | None) -> ParsedText:
    """The well-formed calls to offered tools written in `text` (OpenAI tool specs in
    `tools`). With none found, the text comes back unchanged and no call is made."""
    schemas = _schemas(tools)
    if not text or not schemas or len(text) > MAX_TEXT:
        return ParsedText(text=text)
    malformed: list[str] = []
    for blocks in (_tagged, _fenced):
        spans: list[tuple[int, int]] = []
        calls: list[TextCall] = []
        for start, end, content in blocks(text):
            call = _call(content, schemas, malformed)
            if call is not None:
                calls.append(call)
                spans.append((start, end))
        if calls:
            return ParsedText(calls, _without(text, spans))
    whole = text.strip()  # the whole answer is the call, or a list of calls
    call = _call(whole, schemas, None if malformed else malformed)
    if call is not None:
        return ParsedText([call], "")
    listed = _call_list(whole, schemas)
    if listed:
        return ParsedText(listed, "")
    return ParsedText(text=text, malformed=list(dict.fromkeys(malformed)))


def _tagged(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, content) of each `<tool_call>...</tool_call>` (the closing tag may be
    missing at the very end), content stripped of the whitespace around it."""
    at = text.find(_OPEN_TAG)
    while at >= 0:
        body = at + len(_OPEN_TAG)
        close = text.find(_CLOSE_TAG, body)
        end = len(text) if close < 0 else close + len(_CLOSE_TAG)
        yield at, end, text[body:len(text) if close < 0 else close].strip()
        at = text.find(_OPEN_TAG, end)


def _fenced(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, content) of each fenced block: an opening fence with its label, the
    comment lines above the call skipped, and content that holds no fence, up to a closing
    fence at the start of a line (after blanks). Each opening is read up to the next fence
    at most, and the next opening searched from that fence: linear in the text."""
    at = text.find(FENCE)
    while at >= 0:
        label = _FENCE_LABEL.match(text, at + len(FENCE))
        if label is None:
            at = text.find(FENCE, at + 1)
            continue
        # Comment lines above the content (never one holding a fence: it would be read
        # as content and end the block there)
        lines = [label.end()]
        while (comment := _COMMENT.match(text, lines[-1])) is not None \
                and FENCE not in comment.group():
            lines.append(comment.end())
        close = text.find(FENCE, lines[-1])
        if close < 0:
            return
        newline = text.rfind("\n", 0, close)
        # The closing fence starts its line; the content is what lies before that line,
        # after as many comment lines as leave it room (none left: the comments are it)
        start = next((s for s in reversed(lines) if s <= newline), None) \
            if newline >= 0 and not text[newline + 1:close].strip(" \t") else None
        if start is None:
            at = close if close > at else text.find(FENCE, at + 1)
            continue
        yield at, close + len(FENCE), text[start:newline]
        at = text.find(FENCE, close + len(FENCE))


def _call_list(candidate: str, schemas: dict[str, dict[str, Any]]) -> list[TextCall]:
    if not candidate.startswith("["):
        return []
    try:
        data = json.loads(candidate)
    except _UNREAD:
        return []
    if not isinstance(data, list) or not data:
        return []
    calls = [_call(json.dumps(item), schemas) for item in data]
    return [c for c in calls if c is not None] if all(calls) else []


def _schemas(tools: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    schemas: dict[str, dict[str, Any]] = {}
    for spec in tools or []:
        function = spec.get("function") if isinstance(spec, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            schemas[function["name"]] = function.get("parameters") or {"type": "object"}
    return schemas


def _call(candidate: str, schemas: dict[str, dict[str, Any]],
          malformed: list[str] | None = None) -> TextCall | None:
    """The call `candidate` (JSON text) makes, if it is one to an offered tool with
    arguments that validate; otherwise None (and, when it names an offered tool, a line in
    `malformed` saying why it was not read)."""
    try:
        data = json.loads(candidate)
    except _UNREAD as exc:
        return _lenient_call(candidate, schemas, str(exc) or type(exc).__name__, malformed)
    if not isinstance(data, dict) or set(data) - {"name", "arguments", "parameters"}:
        return None
    name = data.get("name")
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except _UNREAD:
            return None
    if not isinstance(name, str) or name not in schemas:
        return None
    if isinstance(arguments, dict):
        arguments = _without_nulls(arguments, schemas[name])
    problem = "they are not an object" if not isinstance(arguments, dict) \
        else _problem(arguments, schemas[name])
    if problem is not None:
        if malformed is not None:
            malformed.append(f"{name}: its arguments do not match the tool's parameters "
                             f"({problem})")
        return None
    return TextCall(name=name, arguments=json.dumps(arguments, ensure_ascii=False))


_NAMED = re.compile(r"""^\s*\{\s*["']name["']\s*:\s*["']([\w.-]+)["']\s*,\s*"""
                    r"""["'](?:arguments|parameters)["']\s*:\s*""")


def _lenient_call(candidate: str, schemas: dict[str, dict[str, Any]], error: str,
                  malformed: list[str] | None) -> TextCall | None:
    """A call whose JSON is not strict: `{"name": ..., "arguments": {...}}` with the
    arguments read by the tool's schema (llm/lenient_json.py)."""
    from baseagent.llm import lenient_json

    head = _NAMED.match(candidate)
    name = head.group(1) if head is not None else None
    if name not in schemas:
        if name is None and malformed is not None and (tool := _named_tool(candidate, schemas)):
            malformed.append(f"{tool}: the call is not valid JSON ({error})")
        return None
    assert head is not None and name is not None
    body = candidate[head.end():].rstrip()
    if body.endswith("}") and body.startswith("{"):
        body = body[:-1]  # the call's own closing brace; the arguments' one stays
    try:
        read = lenient_json.loads(body, schemas[name])
    except ValueError:
        read = None
    if read is not None and isinstance(read.value, dict):
        read.value = _without_nulls(read.value, schemas[name])
    if read is None or not isinstance(read.value, dict) or not _valid(read.value, schemas[name]):
        if malformed is not None:
            malformed.append(f"{name}: its arguments are not valid JSON ({error})")
        return None
    return TextCall(name=name, arguments=json.dumps(read.value, ensure_ascii=False),
                    repair=f"the call was not valid JSON ({error}); {read.repaired}")


def _named_tool(candidate: str, schemas: dict[str, dict[str, Any]]) -> str | None:
    """The offered tool a broken candidate names, if it looks like a call at all."""
    match = re.search(r"""["']name["']\s*:\s*["']([\w.-]+)["']""", candidate)
    return match.group(1) if match is not None and match.group(1) in schemas else None


def _without_nulls(arguments: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """`null` for an optional argument means "not given" (models write `"timeout_ms": null`
    for what they leave at its default); a required one keeps it, to fail validation."""
    required = set(schema.get("required") or [])
    return {k: v for k, v in arguments.items() if v is not None or k in required}


def _valid(arguments: dict[str, Any], schema: dict[str, Any]) -> bool:
    return _problem(arguments, schema) is None


def _problem(arguments: dict[str, Any], schema: dict[str, Any]) -> str | None:
    """The first way `arguments` break `schema`, in words, or None when they fit."""
    import jsonschema  # a dependency already (exec --output-schema); imported when needed

    validator = jsonschema.validators.validator_for(schema)(schema)
    for error in validator.iter_errors(arguments):
        where = ".".join(str(p) for p in error.absolute_path)
        return f"{where}: {error.message}" if where else error.message
    return None


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    kept, last = [], 0
    for start, end in spans:
        kept.append(text[last:start])
        last = end
    kept.append(text[last:])
    return re.sub(r"\n{3,}", "\n\n", "".join(kept)).strip()
