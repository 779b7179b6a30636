"""What a Codex `exec` turn adds to a plain turn: images on the instruction and a final
answer held to a JSON schema (`--image`, `--output-schema`).

Kept out of the loop: it is an Agent whose instruction message gets image parts and whose
final answer is checked, retried once with the validation error, then failed clearly.
"""
from __future__ import annotations

import base64
import json
import mimetypes
from pathlib import Path
from typing import Any

from baseagent.core.loop import Agent, RunOutcome
from baseagent.llm.errors import ModelError

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


class InputError(ValueError):
    """An --image or --output-schema file the run cannot use (a usage error)."""


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


class ExecAgent(Agent):
    """An Agent with the exec-mode extras; without them it behaves exactly like Agent."""

    def __init__(self, *, images: list[dict[str, Any]] | None = None,
                 output_schema: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._pending_images = list(images or [])
        self.output_schema = output_schema

    def run_turn(self, instruction: str) -> RunOutcome:
        if self.output_schema is not None:
            instruction += SCHEMA_REQUIREMENT.format(
                schema=json.dumps(self.output_schema, indent=2, ensure_ascii=False))
        return super().run_turn(instruction)

    def _append(self, message: dict[str, Any]) -> None:
        # The turn's instruction is its first user message: the images belong with it.
        if self._pending_images and message.get("role") == "user" \
                and isinstance(message.get("content"), str):
            message = {**message, "content": [{"type": "text", "text": message["content"]},
                                              *self._pending_images]}
            self._pending_images = []
        super()._append(message)

    def _work(self, instruction: str) -> str:
        final = super()._work(instruction)
        if self.output_schema is None:
            return final
        problem = schema_problem(final, self.output_schema)
        if problem is None:
            return final
        self._append({"role": "user", "content": SCHEMA_RETRY.format(problem=problem)})
        verify, self.verify = self.verify, False  # one correction, not another review round
        try:
            final = super()._work(instruction)
        finally:
            self.verify = verify
        problem = schema_problem(final, self.output_schema)
        if problem is not None:
            raise ModelError(f"the final answer does not match the output schema after a "
                             f"retry: {problem}")
        return final
