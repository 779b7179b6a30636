"""What a turn may add to its instruction: images, and a final answer held to a JSON schema
(exec's `--image` and `--output-schema`, the library's `run(images=, output_schema=)`).

Kept out of the loop, which only sees a TurnInput: the instruction message with image parts,
and a FinalCheck that validates the answer (one correction round, then a clear failure).
"""
from __future__ import annotations

import base64
import json
import mimetypes
from pathlib import Path
from typing import Any

from baseagent.core.loop import TurnInput
from baseagent.errors import InputError

# Providers accept these in image_url data URLs; anything else is refused up front rather
# than sent and rejected mid-run.
IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}
# Larger images are refused: providers cap inline images around 20 MB and a data URL is
# base64 (4/3 larger) in every request of the thread.
MAX_IMAGE_BYTES = 15 * 1024 * 1024
# How many validation errors to quote back to the model: enough to fix, short enough to read.
MAX_SCHEMA_ERRORS = 5

SCHEMA_REQUIREMENT = """\


Your final answer (your last message, sent without calling any tool) must be only a JSON \
value that matches this JSON schema: no prose and no code fences around it.
<output_schema>
{schema}
</output_schema>"""

SCHEMA_RETRY = """\
Your final answer does not match the required output schema: {problem}
Reply again with only a JSON value that matches the schema given in the instruction (no \
prose, no code fences). Do not call tools unless you must."""


def image_part(path: Path) -> dict[str, Any]:
    """An OpenAI `image_url` content part holding the file as a data URL."""
    mime = mimetypes.guess_type(path.name)[0]
    if mime not in IMAGE_TYPES:
        raise InputError(f"unsupported image type for {path} (use png, jpeg, gif or webp)")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read image {path}: {exc.strerror}") from None
    if len(data) > MAX_IMAGE_BYTES:
        raise InputError(f"image {path} is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB")
    url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return {"type": "image_url", "image_url": {"url": url}}


def load_schema(path: Path) -> dict[str, Any]:
    """Read and check an --output-schema file (JSON Schema, an object at the top)."""
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read output schema {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise InputError(f"output schema {path} is not valid JSON: {exc}") from None
    if not isinstance(schema, dict):
        raise InputError(f"output schema {path} must be a JSON object")
    # jsonschema is a dependency of litellm (pinned), so this adds nothing to install.
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise InputError(f"output schema {path} is not a valid JSON schema: {exc.message}") \
            from None
    return schema


def schema_problem(text: str | None, schema: dict[str, Any]) -> str | None:
    """Why `text` is not a JSON value matching `schema`, or None when it is."""
    try:
        value = json.loads((text or "").strip())
    except ValueError as exc:
        return f"it is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    except RecursionError:
        return "it nests deeper than a JSON answer may"
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    parts = []
    for error in errors[:MAX_SCHEMA_ERRORS]:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        parts.append(f"at {where}: {error.message}")
    return "; ".join(parts)


class SchemaCheck:
    """The loop's FinalCheck for an output schema."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema

    def problem(self, answer: str) -> str | None:
        return schema_problem(answer, self.schema)

    def correction(self, problem: str) -> str:
        return SCHEMA_RETRY.format(problem=problem)

    def failure(self, problem: str) -> str:
        return f"the final answer does not match the output schema after a retry: {problem}"


def check_schema(schema: Any) -> dict[str, Any]:
    """An output schema given as data (the library): an object that is a valid JSON schema."""
    if not isinstance(schema, dict):
        raise InputError("output_schema must be a JSON schema object (a dict)")
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise InputError(f"output_schema is not a valid JSON schema: {exc.message}") from None
    return schema


def turn_input(instruction: str, images: list[dict[str, Any]] | None = None,
               output_schema: dict[str, Any] | None = None) -> TurnInput:
    """The loop's TurnInput: the schema requirement appended to the instruction (so the
    verification reminder restates it too) and the images sent with it."""
    text = instruction
    if output_schema is not None:
        text += SCHEMA_REQUIREMENT.format(
            schema=json.dumps(output_schema, indent=2, ensure_ascii=False))
    content = [{"type": "text", "text": text}, *images] if images else None
    return TurnInput(text=text, content=content,
                     final_check=SchemaCheck(output_schema) if output_schema is not None else None)
