"""Tool calls a model wrote as text: what local models served without tool-call parsing do.

Small open models (and servers that do not parse their output: llama.cpp without --jinja,
older LM Studio and Ollama builds) answer with the call in the text instead of the API's
`tool_calls`. Three shapes are recognised, each holding one JSON object
`{"name": ..., "arguments": {...}}` ("parameters" is taken for "arguments", and arguments
given as a JSON string are decoded):

- Hermes / Qwen tags: `<tool_call>{...}</tool_call>` (the closing tag may be missing at
  the very end, where generation stopped on it);
- a fenced block: ```` ```json {...} ``` ```` (or a fence with no language);
- the whole answer being that one object, or a JSON array of such objects (as some models
  list parallel calls); an array runs only if every call in it is valid.

A candidate becomes a call only if its tool is offered in this request and its arguments
validate against that tool's JSON schema; anything else stays text and never runs.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

PARSER_MODES = ("auto", "native", "text")
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_FENCED = re.compile(r"```[ \t]*(?:json|JSON|tool_call)?[ \t]*\n(.*?)\n[ \t]*```", re.DOTALL)


@dataclass
class TextCall:
    name: str
    arguments: str  # JSON text of the arguments object


@dataclass
class ParsedText:
    """The calls found in a text, and the text that is left once they are taken out."""

    calls: list[TextCall] = field(default_factory=list)
    text: str = ""


def parse_tool_calls(text: str, tools: list[dict[str, Any]] | None) -> ParsedText:
    """The well-formed calls to offered tools written in `text` (OpenAI tool specs in
    `tools`). With none found, the text comes back unchanged and no call is made."""
    schemas = _schemas(tools)
    if not text or not schemas:
        return ParsedText(text=text)
    for pattern in (_TAGGED, _FENCED):
        spans: list[tuple[int, int]] = []
        calls: list[TextCall] = []
        for match in pattern.finditer(text):
            call = _call(match.group(1), schemas)
            if call is not None:
                calls.append(call)
                spans.append(match.span())
        if calls:
            return ParsedText(calls, _without(text, spans))
    whole = text.strip()  # the whole answer is the call, or a list of calls
    call = _call(whole, schemas)
    if call is not None:
        return ParsedText([call], "")
    listed = _call_list(whole, schemas)
    if listed:
        return ParsedText(listed, "")
    return ParsedText(text=text)


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


def _call(candidate: str, schemas: dict[str, dict[str, Any]]) -> TextCall | None:
    """The call `candidate` (JSON text) makes, if it is one to an offered tool with
    arguments that validate; otherwise None."""
    try:
        data = json.loads(candidate)
    except ValueError:
        return None
    if not isinstance(data, dict) or set(data) - {"name", "arguments", "parameters"}:
        return None
    name = data.get("name")
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except ValueError:
            return None
    if not isinstance(name, str) or name not in schemas or not isinstance(arguments, dict):
        return None
    if not _valid(arguments, schemas[name]):
        return None
    return TextCall(name=name, arguments=json.dumps(arguments, ensure_ascii=False))


def _valid(arguments: dict[str, Any], schema: dict[str, Any]) -> bool:
    import jsonschema  # a dependency already (exec --output-schema); imported when needed

    validator = jsonschema.validators.validator_for(schema)(schema)
    return not any(True for _ in validator.iter_errors(arguments))


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    kept, last = [], 0
    for start, end in spans:
        kept.append(text[last:start])
        last = end
    kept.append(text[last:])
    return re.sub(r"\n{3,}", "\n\n", "".join(kept)).strip()
