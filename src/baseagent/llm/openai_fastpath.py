"""A cheaper request transform for openai-python's chat completions (used by litellm).

Why: litellm sends `openai/...` models through the openai SDK, which passes every request
body through `maybe_transform`, a generic walk that checks each message against a union of
TypedDicts. Measured here (openai 2.54): ~50 ms per call for a 201-message history and
~250 ms at 500 steps, growing with the history: the largest per-step cost the agent had.
For chat-completion bodies the SDK's types carry no aliases and no formats, so that walk
only drops NotGiven/Omit markers and dumps pydantic models; `plain_body` does exactly that.

The swap is installed only after checking the installed SDK's chat types still have no
alias or format anywhere (a newer SDK that adds one keeps its own transform), and only for
the chat-completion request types: every other request goes through the original.

It is process-wide, the one change the library makes to another package (docs/LIBRARY.md,
"No process-wide side effects"):
- What: `install()` rebinds the name `maybe_transform` in
  `openai.resources.chat.completions.completions`, the module of the synchronous chat
  completions resource, to a function that builds the three chat-create body types
  (`CompletionCreateParams` and its streaming/non-streaming forms: `create()` and
  `parse()`) with `plain_body` and hands every other type to the original. It is never
  undone. The async resource uses `async_maybe_transform` and is untouched.
- When: only from `llm/client.load_litellm()`, i.e. once a run on the litellm route imports
  litellm (its model call, the model check, or the background import an Agent starts when
  it is built). A run whose calls take the direct path (`llm/route.py`) or an injected model
  client never imports litellm or openai-python, and installs nothing.
- Why it is safe for another user of openai-python in the process: for those body types
  the copy builds what the SDK's own transform builds (no alias or format to apply, checked
  at install; markers dropped, models dumped, any iterable made a list, as the SDK does):
  the same bytes on the wire (`tests/llm/test_openai_fastpath.py` and
  `tests/llm/test_openai_fastpath_others.py` hold it to the SDK's output).
"""
from __future__ import annotations

import typing
from collections.abc import Iterable, Mapping
from typing import Any


def _needs_real_transform(root: Any) -> bool:
    """True if any type reachable from `root` has an openai PropertyInfo alias or format."""
    from openai._utils._transform import PropertyInfo

    seen: set[int] = set()
    stack = [root]
    while stack:
        tp = stack.pop()
        if id(tp) in seen:
            continue
        seen.add(id(tp))
        for meta in getattr(tp, "__metadata__", ()):
            if isinstance(meta, PropertyInfo) and (meta.alias or meta.format):
                return True
        stack.extend(typing.get_args(tp))
        if isinstance(tp, type) and hasattr(tp, "__annotations__"):
            try:
                stack.extend(typing.get_type_hints(tp, include_extras=True).values())
            except Exception:  # noqa: BLE001 - a hint we cannot resolve: assume the worst
                return True
    return False


def plain_body(value: Any, skip: tuple[type, ...], model_type: type) -> Any:
    """The body as JSON-ready data: NotGiven/Omit values dropped, pydantic models dumped,
    any other mapping made a dict and any other iterable (a generator of messages,
    `dict.values()`: the SDK's types take `Iterable[...]`) a list, as the SDK's transform
    does. The common cases (dict, list, str) are tested first: this runs on every message."""
    if isinstance(value, dict):
        return {k: plain_body(v, skip, model_type) for k, v in value.items()
                if not isinstance(v, skip)}
    if isinstance(value, (list, tuple)):
        return [plain_body(v, skip, model_type) for v in value]
    if isinstance(value, _LEAVES):
        return value
    if isinstance(value, model_type):
        return value.model_dump(exclude_unset=True, mode="json")
    if isinstance(value, Mapping):
        return plain_body(dict(value), skip, model_type)
    if isinstance(value, Iterable):
        return [plain_body(v, skip, model_type) for v in value]
    return value


# Values sent as they are (checked first: nearly every leaf of a body is one of these).
_LEAVES = (str, int, float, bool, type(None), bytes, bytearray)


def install() -> bool:
    """Swap the chat-completions transform if it is safe; returns whether it was swapped."""
    try:
        import pydantic
        from openai import NotGiven, Omit
        from openai.resources.chat.completions import completions as module
        from openai.types.chat import completion_create_params as params
    except Exception:  # noqa: BLE001 - another SDK layout: leave it alone
        return False
    original = getattr(module, "maybe_transform", None)
    if original is None or getattr(original, "_baseagent_fast", False):
        return original is not None
    if _needs_real_transform(params.CompletionCreateParamsBase):
        return False
    chat_types = {params.CompletionCreateParams, params.CompletionCreateParamsStreaming,
                  params.CompletionCreateParamsNonStreaming}
    skip = (NotGiven, Omit)

    def maybe_transform(data: Any, expected_type: Any) -> Any:
        if data is not None and expected_type in chat_types:
            return plain_body(data, skip, pydantic.BaseModel)
        return original(data, expected_type)

    maybe_transform._baseagent_fast = True  # type: ignore[attr-defined]
    module.maybe_transform = maybe_transform
    return True
