"""Token accounting: what is counted, the per-message cache, the bound, the fallback."""
from __future__ import annotations

import os
import pytest

from baseagent.core.context.tokens import (IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS, TokenCounter,
                                   estimate_tokens, countable_text)


class CountingTokenizer:
    """One token per word; records every text it was asked to count."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, text: str) -> int:
        self.calls.append(text)
        return len(text.split())


def test_countable_text_covers_what_the_model_reads():
    assert countable_text({"role": "user", "content": "hi there"}) == ("hi there", 0)
    parts = {"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 9000}}]}
    assert countable_text(parts) == ("look", 1)  # the data URL is not counted as text
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "shell", "arguments": '{"command": "ls"}'}}]}
    text, images = countable_text(call)
    assert "call_1" in text and "shell" in text and '{"command": "ls"}' in text
    assert images == 0
    assert countable_text({"role": "tool", "tool_call_id": "call_1", "content": "out"})[0] \
        == "out\ncall_1"


def test_count_adds_overhead_and_images():
    counter = TokenCounter("m", text_counter=CountingTokenizer())
    assert counter.count({"role": "user", "content": "one two three"}) \
        == MESSAGE_OVERHEAD_TOKENS + 3
    image = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
    assert counter.count(image) == MESSAGE_OVERHEAD_TOKENS + IMAGE_TOKENS


def test_each_message_is_tokenised_once():
    tokenizer = CountingTokenizer()
    counter = TokenCounter("m", text_counter=tokenizer)
    history = [{"role": "user", "content": f"message number {i}"} for i in range(50)]
    first = [counter.count(m) for m in history]
    again = [counter.count(m) for m in history]
    assert first == again and len(tokenizer.calls) == 50
    # an equal but distinct dict is a different message: counted on its own
    counter.count(dict(history[0]))
    assert len(tokenizer.calls) == 51


def test_a_message_edited_in_place_is_recounted():
    tokenizer = CountingTokenizer()
    counter = TokenCounter("m", text_counter=tokenizer)
    message = {"role": "tool", "tool_call_id": "c", "content": "a b c d e f"}
    assert counter.count(message) == MESSAGE_OVERHEAD_TOKENS + 7  # 6 words + the id
    message["content"] = "short"
    assert counter.count(message) == MESSAGE_OVERHEAD_TOKENS + 2


def test_retain_forgets_messages_no_longer_in_the_history():
    tokenizer = CountingTokenizer()
    counter = TokenCounter("m", text_counter=tokenizer)
    kept, dropped = {"role": "user", "content": "a"}, {"role": "user", "content": "b"}
    counter.count(kept)
    counter.count(dropped)
    counter.retain([kept])
    assert counter.cached(kept) and not counter.cached(dropped)


def test_bound_never_below_the_estimate_and_needs_no_tokenizer():
    tokenizer = CountingTokenizer()
    counter = TokenCounter("m", text_counter=tokenizer)
    for text in ["plain ascii text", "ünïcödé ✓ 漢字テキスト", "x" * 1000]:
        message = {"role": "user", "content": text}
        assert counter.bound(message) == MESSAGE_OVERHEAD_TOKENS + len(text.encode())
        assert counter.bound(message) >= MESSAGE_OVERHEAD_TOKENS + estimate_tokens(text)
    assert tokenizer.calls == []


def test_a_broken_tokenizer_falls_back_to_the_estimate():
    def broken(_text: str) -> int:
        raise RuntimeError("no tokenizer")

    counter = TokenCounter("m", text_counter=broken)
    assert counter.count_text("x" * 41) == estimate_tokens("x" * 41) == 11
    assert not counter.exact


@pytest.mark.parametrize("model", ["openai/gpt-4.1", "openai/scripted",
                                   "anthropic/claude-sonnet-4-5",
                                   "together_ai/meta-llama/Llama-3-70b-chat-hf"])
def test_real_tokenizer_offline(model):
    """litellm's tokenizer, offline (bundled encodings); llama models must not download."""
    counter = TokenCounter(model)
    text = "def greet():\n    return 'hello, world'\n" * 20
    tokens = counter.count_text(text)
    assert counter.exact
    assert estimate_tokens(text) * 0.5 < tokens < len(text)  # a real count, not chars/4
    cjk = "漢字テキスト" * 30
    message = {"role": "user", "content": cjk}
    assert counter.count(message) <= counter.bound(message)


def test_bundled_tokenizer_counts_like_litellm():
    """Our own cl100k_base (rank table released) counts like the encoding litellm's
    token_counter uses (compared directly: the client switches token_counter off)."""
    from baseagent.llm.client import load_litellm

    # Through the client's lock: an Agent made by an earlier test in this process may be
    # importing litellm on its background thread, and two half-done imports collide.
    load_litellm()
    from litellm.litellm_core_utils.default_encoding import encoding

    from baseagent.core.context.tokens import bundled_tokenizer

    count = bundled_tokenizer()
    for text in ["def greet():\n    return 'hello'\n" * 50, "漢字テキスト" * 40,
                 "special <|endoftext|> text stays text", ""]:
        assert count(text) == len(encoding.encode(text, disallowed_special=()))


def test_loading_the_tokenizer_leaves_the_environment_alone():
    from baseagent.core.context.tokens import bundled_tokenizer

    before = dict(os.environ)
    assert bundled_tokenizer()("hello world") == 2
    assert dict(os.environ) == before
