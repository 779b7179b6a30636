"""Token accounting for the prompt: tiktoken's cl100k_base (bundled with litellm), else an estimate.

Counting must stay cheap while the history grows to hundreds of messages, so each message is
counted once and its count is cached by identity (the loop only ever appends new message
dicts; compaction replaces the ones it changes). Loading a tokenizer costs a few hundred
milliseconds, so callers first compare a free upper bound (`bound`) with their budget and
only ask for exact counts when the prompt may be near it.

The tokenizer is loaded only once an exact count is needed (tests and short runs never pay
for it), from the file litellm bundles; litellm itself is not imported here.
"""
from __future__ import annotations

import json
import math
import os
from typing import Any, Callable

from baseagent.scoped_env import scoped_environ

# Fallback estimate when no tokenizer is available: the usual ~4 characters per token of
# English and code (the scripted model server uses the same rule).
CHARS_PER_TOKEN = 4
# Role and separators a chat format adds around each message (OpenAI documents 3-4).
MESSAGE_OVERHEAD_TOKENS = 4
# An image part is billed by its pixel size, not its base64 text; ~1K tokens is the order of
# a screenshot on OpenAI and Anthropic alike, and counting the data URL would be 100x off.
IMAGE_TOKENS = 1_000
# Models litellm would count with a HuggingFace tokenizer (llama, cohere command-r, claude 2;
# downloaded at first use) are counted with the bundled cl100k_base instead: no download can
# stall a run, and for budgeting a window it is close enough.

TextCounter = Callable[[str], int]
# Where tiktoken's cl100k_base file comes from; its cache key is the sha1 of this URL.
_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def estimate_tokens(text: str) -> int:
    """The documented fallback: ceil(characters / CHARS_PER_TOKEN)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def countable_text(message: dict[str, Any]) -> tuple[str, int]:
    """(the text of a message that the model reads, number of image parts in it)."""
    pieces: list[str] = []
    images = 0
    content = message.get("content")
    if isinstance(content, str):
        pieces.append(content)
    elif isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") in ("image_url", "input_image", "image"):
                images += 1
            elif isinstance(part.get("text"), str):
                pieces.append(part["text"])
            else:
                pieces.append(json.dumps(part, ensure_ascii=False))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        pieces.append(str(call.get("id") or ""))
        pieces.append(str(function.get("name") or ""))
        pieces.append(str(function.get("arguments") or ""))
    if message.get("tool_call_id"):
        pieces.append(str(message["tool_call_id"]))
    return "\n".join(pieces), images


def _byte_len(text: str) -> int:
    # str.isascii() is O(1) in CPython; only non-ASCII text pays for an encode.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _fingerprint(message: dict[str, Any]) -> tuple[Any, ...]:
    """Cheap guard against a cached message dict having been edited in place."""
    content = message.get("content")
    size = len(content) if isinstance(content, (str, list)) else -1
    return (message.get("role"), size, len(message.get("tool_calls") or ()))


class TokenCounter:
    """Counts message tokens for one model; exact counts are cached per message object.

    `text_counter` replaces the tokenizer (tests; a caller with its own tokenizer).
    """

    def __init__(self, model: str, text_counter: TextCounter | None = None) -> None:
        self.model = model
        self._text_counter = text_counter
        self._exact = text_counter is not None  # False once the tokenizer proved unusable
        self._cache: dict[int, tuple[dict[str, Any], tuple[Any, ...], int]] = {}
        self.tokenized_chars = 0  # how much text went through the tokenizer (bench, tests)

    # -- text --------------------------------------------------------------------------------

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        counter = self._text_counter or self._load()
        if counter is None:
            return estimate_tokens(text)
        try:
            count = int(counter(text))
        except Exception:  # noqa: BLE001 - a tokenizer bug must not stop the run
            self._text_counter, self._exact = _fallback_counter, False
            return estimate_tokens(text)
        self.tokenized_chars += len(text)
        return count

    @property
    def exact(self) -> bool:
        """Whether counts come from a tokenizer (after the first count) or the estimate."""
        return self._exact

    def _load(self) -> TextCounter | None:
        """Bind the tokenizer; the documented estimate if that is impossible."""
        try:
            counter = bundled_tokenizer()
            counter("warm up")  # loads the encoding now, so a failure is seen here
        except Exception:  # noqa: BLE001 - no litellm or no tokenizer: documented estimate
            self._text_counter, self._exact = _fallback_counter, False
            return None
        self._text_counter, self._exact = counter, True
        return counter

    # -- messages ----------------------------------------------------------------------------

    def count(self, message: dict[str, Any], cache: bool = True) -> int:
        """Tokens of one message (cached while the same dict is in use, unless `cache` is
        False: a throwaway message, e.g. a candidate marker, need not be remembered)."""
        key = id(message)
        hit = self._cache.get(key)
        fingerprint = _fingerprint(message)
        if hit is not None and hit[0] is message and hit[1] == fingerprint:
            return hit[2]
        text, images = countable_text(message)
        tokens = MESSAGE_OVERHEAD_TOKENS + self.count_text(text) + images * IMAGE_TOKENS
        if cache:
            # Keeping the dict referenced keeps its id from being reused by another message.
            self._cache[key] = (message, fingerprint, tokens)
        return tokens

    def cached(self, message: dict[str, Any]) -> bool:
        hit = self._cache.get(id(message))
        return hit is not None and hit[0] is message

    def bound(self, message: dict[str, Any]) -> int:
        """An upper bound on count(message) without a tokenizer: one token per UTF-8 byte.

        Byte-level BPE tokenizers never produce more tokens than bytes, so a prompt whose
        bound is under budget is under budget, and nothing needs tokenising.
        """
        text, images = countable_text(message)
        return MESSAGE_OVERHEAD_TOKENS + _byte_len(text) + images * IMAGE_TOKENS

    def count_json(self, value: Any) -> int:
        """Tokens of a JSON value as sent (tool definitions)."""
        if not value:
            return 0
        return self.count_text(json.dumps(value, ensure_ascii=False, separators=(",", ":")))

    def retain(self, messages: list[dict[str, Any]]) -> None:
        """Forget cached counts of messages no longer in `messages` (after compaction)."""
        keep = {id(m) for m in messages}
        self._cache = {k: v for k, v in self._cache.items() if k in keep}


def bundled_tokenizer() -> TextCounter:
    """cl100k_base through tiktoken, from the copy of its file that litellm ships (offline).

    This is the encoding `litellm.token_counter` uses for OpenAI and unknown models, so
    counts match its there. (For Claude it would use a bundled Claude 2 tokenizer; Anthropic
    publishes none for later models, so cl100k_base is as good an estimate for budgeting.)
    It is built here rather than borrowed from litellm because the client turns litellm's
    counter off (llm/client.py: it re-counts the whole prompt on every call just to price
    it), and so that its Python-side rank table (~13 MB; the tokenizer core keeps its own
    copy) can be released. Raises if the bundled file is missing: no download is attempted.
    """
    import hashlib
    import importlib.util

    import tiktoken
    from tiktoken_ext.openai_public import cl100k_base

    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("litellm is not installed: no bundled tokenizer file")
    bundled = os.path.join(spec.submodule_search_locations[0], "litellm_core_utils", "tokenizers")
    # tiktoken finds its files in TIKTOKEN_CACHE_DIR under sha1(url); litellm points it at
    # the same directory when it counts tokens itself. A user's own setting is kept; ours is
    # set only while the encoding loads.
    with scoped_environ({"TIKTOKEN_CACHE_DIR": bundled}):
        key = hashlib.sha1(_CL100K_URL.encode()).hexdigest()
        if not os.path.isfile(os.path.join(os.environ["TIKTOKEN_CACHE_DIR"], key)):
            raise FileNotFoundError("cl100k_base is not in the tiktoken cache; not downloading")
        params = cl100k_base()
    encoding = tiktoken.Encoding(**params)
    params["mergeable_ranks"].clear()  # only pickling reads it; encode() uses the core's copy

    def counter(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return counter


def _fallback_counter(text: str) -> int:
    return estimate_tokens(text)
