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
from typing import Any

PARSER_MODES = ("auto", "native", "text")
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
# Any fence language: small models label the call ```python or ```bash as often as ```json,
# and may put a comment line (`# tools`) above it; the content must still be a call. The
# content never holds a fence: a block of comments only must not run on into the next one.
_FENCED = re.compile(r"```[ \t]*[\w+-]*[ \t]*\n(?:[ \t]*(?:#|//)[^\n]*\n)*((?:(?!```).)*?)"
                     r"\n[ \t]*```", re.DOTALL)


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
    if not text or not schemas:
        return ParsedText(text=text)
    malformed: list[str] = []
    for pattern in (_TAGGED, _FENCED):
        spans: list[tuple[int, int]] = []
        calls: list[TextCall] = []
        for match in pattern.finditer(text):
            call = _call(match.group(1), schemas, malformed)
            if call is not None:
                calls.append(call)
                spans.append(match.span())
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


def _call_list(candidate: str, schemas: dict[str, dict[str, Any]]) -> list[TextCall]:
    if not candidate.startswith("["):
        return []
    try:
        data = json.loads(candidate)
    except ValueError:
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
    except ValueError as exc:
        return _lenient_call(candidate, schemas, str(exc), malformed)
    if not isinstance(data, dict) or set(data) - {"name", "arguments", "parameters"}:
        return None
    name = data.get("name")
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except ValueError:
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
