"""Reading the JSON a model meant when what it wrote is not quite JSON.

Small models write tool arguments with the slips people make by hand: unescaped quotes
and raw newlines inside strings (a Python file with a docstring in `content`), Python's
`\"\"\"` blocks, single quotes, trailing commas. Strict parsing refuses all of them, and the
call is lost (or, written as text, taken for prose). Here:

1. strict `json.loads`;
2. by the schema: when the tool's schema is known, each of its keys is found in the text
   and its value taken as the span up to the next key (or the object's end), so quotes and
   newlines inside a string need no escaping: this is what rescues code in `content`;
3. the json-repair library (trailing commas, single quotes, missing brackets, comments),
   kept only when its result has no key the schema lacks, since on code it can split a
   string into invented keys.

json-repair's work grows faster than its input (a quarter-megabyte of brackets took
seconds), so it is given at most REPAIR_CHARS characters; deeper nesting than Python's
parser takes is no reading (never a RecursionError out of here).

Every result is checked against the schema by the caller; `repaired` says what was done so
the tool result can tell the model (and it learns the strict form).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

# The longest text handed to json-repair (characters)
REPAIR_CHARS = 64 * 1024
# What strict parsing raises on a text it cannot read: nesting deeper than the
# interpreter's recursion limit is a RecursionError, not a ValueError
_UNREAD = (ValueError, RecursionError)


@dataclass
class Lenient:
    value: Any
    # One phrase per repair made ("" when the text was strict JSON).
    repaired: str = ""
    error: str = ""  # what strict parsing said, when it failed
    notes: list[str] = field(default_factory=list)


def loads(text: str, schema: dict[str, Any] | None = None) -> Lenient:
    """The value `text` means; raises ValueError when no reading is possible."""
    try:
        return Lenient(json.loads(text))
    except _UNREAD as exc:
        strict_error = str(exc)
    properties = _properties(schema)
    if properties:
        value = by_keys(text, properties)
        if value is not None:
            return Lenient(value, "string values read up to the next key (unescaped quotes "
                                  "or newlines inside a string)", strict_error)
    if not text.rstrip().endswith(("}", "]")):
        raise ValueError(strict_error)  # cut off (an output limit): completing it would
        # invent the rest, e.g. write half a file
    value = _library(text)
    if value is not None and (not properties or not isinstance(value, dict)
                              or set(value) <= set(properties)):
        return Lenient(value, "repaired by json-repair (e.g. single quotes, trailing commas, "
                              "missing brackets)", strict_error)
    raise ValueError(strict_error)


def strict_form_hint() -> str:
    return ("Next time, send strict JSON: double quotes only, and inside strings escape \" as \\\" and "
            "newlines as \\n")


def _properties(schema: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    if not isinstance(schema, dict):
        return {}
    props = schema.get("properties")
    return {k: (v if isinstance(v, dict) else {}) for k, v in props.items()} \
        if isinstance(props, dict) else {}


def _library(text: str) -> Any:
    if len(text) > REPAIR_CHARS:
        return None
    try:
        import json_repair
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    try:
        value = json_repair.loads(text)
    except Exception:  # noqa: BLE001 - the library's own failure: no reading
        return None
    return value if isinstance(value, (dict, list)) and value else None


# -- by the schema's keys ----------------------------------------------------------------------

_QUOTES = ('"""', "'''", '"', "'")


def by_keys(text: str, properties: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The object `text` writes with the schema's keys, each value read up to where the
    next key begins; None unless every key found reads and the text is one object."""
    body = text.strip()
    if not body.startswith("{") or not body.endswith("}"):
        return None  # not an object, or one cut off: its last value may be cut short too
    markers = []
    for key in properties:
        match = re.search(r"""(?:"|')%s(?:"|')\s*:\s*""" % re.escape(key), body)
        if match is not None:
            markers.append((match.start(), match.end(), key))
    if not markers:
        return None
    markers.sort()
    result: dict[str, Any] = {}
    for index, (_, value_start, key) in enumerate(markers):
        if index + 1 < len(markers):
            span = body[value_start:markers[index + 1][0]]
            span = re.sub(r"\s*,\s*\Z", "", span)
        else:
            span = re.sub(r"\s*,?\s*}\Z", "", body[value_start:])
        value = _value(span.strip())
        if value is _UNREADABLE:
            return None
        result[key] = value
    if body[:markers[0][0]].strip() != "{":
        return None  # something before the first known key: not this schema's object
    return result


_UNREADABLE = object()


def _value(span: str) -> Any:
    for quote in _QUOTES:
        if len(span) >= 2 * len(quote) and span.startswith(quote) and span.endswith(quote):
            return _unescape(span[len(quote):-len(quote)])
    try:
        return json.loads(span)
    except _UNREAD:
        return _UNREADABLE


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "'": "'",
            "\\": "\\", "/": "/"}


def _unescape(raw: str) -> str:
    """JSON's escapes where they are escapes; anything else (a raw newline, a lone quote, a
    backslash before another character) stays as written."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        char = raw[i]
        if char == "\\" and i + 1 < len(raw):
            nxt = raw[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", raw[i + 2:i + 6]):
                out.append(chr(int(raw[i + 2:i + 6], 16)))
                i += 6
                continue
        out.append(char)
        i += 1
    return "".join(out)
