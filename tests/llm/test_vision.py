"""Whether a model takes images (view_image's gate, compose/), read from litellm's
map without litellm (llm/model_map.py `supports_vision`) and held to litellm's own
supports_vision on the pinned map; a model the map does not know is None (allowed), where
litellm says False."""
from __future__ import annotations

import json

import pytest

from baseagent.llm.model_map import ModelMap, supports_vision

MODEL_MAP = ModelMap.load()
ENTRIES = json.loads(MODEL_MAP._text)  # noqa: SLF001 - the whole map, for the test's lists
PROVIDERS = ("openai", "anthropic", "gemini", "mistral", "deepseek", "xai")
MAPPED = sorted(f"{v['litellm_provider']}/{k.split('/', 1)[-1]}" for k, v in ENTRIES.items()
                if isinstance(v, dict) and v.get("litellm_provider") in PROVIDERS
                and v.get("mode") == "chat")
OTHERS = ["gpt-4o", "gpt-3.5-turbo", "openrouter/openai/gpt-4o", "ollama/llama3",
          "openai/scripted", "openai/qwen2.5-coder:7b", "anthropic/claude-local-test",
          "hosted_vllm/some-model"]


@pytest.fixture(scope="module")
def litellm():
    from baseagent.llm.client import load_litellm

    return load_litellm()


def test_known_answers():
    assert supports_vision("openai/gpt-4.1") is True
    assert supports_vision("openai/gpt-3.5-turbo") is False
    assert supports_vision("openai/scripted") is None
    assert supports_vision("openai/gpt-4.1", model_map=ModelMap(text="{}")) is None


def test_as_litellm_says(litellm):
    for model in MAPPED + OTHERS:
        ours = supports_vision(model, MODEL_MAP)
        theirs = litellm.supports_vision(model=model)
        if ours is None:
            assert theirs is False, model  # unknown to the map: litellm says no
        else:
            assert ours is theirs, model
