"""litellm's model map read without litellm (llm/model_map.py) and prices computed from it
(llm/pricing.py), held to litellm's own get_model_info and cost_per_token on the pinned map:
every chat model of the two wires the direct path speaks, and names the map does not list."""
from __future__ import annotations

import json

import pytest

from baseagent.llm.model_map import ModelMap, resolve
from baseagent.llm.pricing import price, priceable

MODEL_MAP = ModelMap.load()
ENTRIES = json.loads(MODEL_MAP._text)  # noqa: SLF001 - the whole map, for the test's lists


def models(provider: str) -> list[str]:
    return sorted(k for k, v in ENTRIES.items() if isinstance(v, dict)
                  and v.get("litellm_provider") == provider and v.get("mode") == "chat"
                  and "/" not in k)


UNLISTED = {"openai": ["scripted-local", "qwen2.5-coder:7b", "o9", "deep-research-local",
                       "my-codex", "claude-newfamily-5"],
            "anthropic": ["claude-newfamily-5", "claude-local-test", "claude-sonnet-9-9"]}
CASES = [(p, m) for p in ("openai", "anthropic") for m in models(p) + UNLISTED[p]]
# (prompt, completion, cache reads, cache writes, reasoning) of a call
USAGES = [(1000, 200, 0, 0, 0), (9000, 50, 7000, 0, 0), (5000, 300, 1000, 2000, 0),
          (250_000, 4000, 100_000, 50_000, 0), (3000, 900, 0, 0, 600)]


@pytest.fixture(scope="module")
def litellm():
    from baseagent.llm.client import load_litellm

    return load_litellm()


def test_the_map_is_found_and_read_as_text():
    assert MODEL_MAP is not None and MODEL_MAP._text.isascii()  # offsets hold ignoring case
    assert MODEL_MAP.entry("GPT-4.1")[0] == "gpt-4.1"
    assert MODEL_MAP.entry("no-such-model") is None


@pytest.mark.parametrize("provider, name", CASES)
def test_model_info_as_litellm_resolves_it(litellm, provider, name):
    try:
        expected = litellm.get_model_info(f"{provider}/{name}")
    except Exception:  # noqa: BLE001 - unmapped
        expected = None
    info = resolve(MODEL_MAP, provider, name)
    if expected is None:
        assert info is None
        return
    assert info is not None
    for key in ("max_input_tokens", "max_output_tokens", "max_tokens"):
        assert info.get(key) == expected.get(key), key


def _usage(provider: str, prompt: int, completion: int, read: int, written: int,
           reasoning: int):
    """The Usage litellm builds from that provider's stream."""
    from litellm.types.utils import (CompletionTokensDetailsWrapper,
                                     PromptTokensDetailsWrapper, Usage)

    details = CompletionTokensDetailsWrapper(reasoning_tokens=reasoning,
                                             text_tokens=completion - reasoning)
    if provider == "anthropic":
        return Usage(prompt_tokens=prompt, completion_tokens=completion,
                     total_tokens=prompt + completion,
                     prompt_tokens_details=PromptTokensDetailsWrapper(
                         cached_tokens=read, cache_creation_tokens=written,
                         text_tokens=prompt - read - written),
                     cache_creation_input_tokens=written, cache_read_input_tokens=read,
                     completion_tokens_details=details)
    return Usage(prompt_tokens=prompt, completion_tokens=completion,
                 total_tokens=prompt + completion,
                 prompt_tokens_details=PromptTokensDetailsWrapper(cached_tokens=read),
                 completion_tokens_details=details)


@pytest.mark.parametrize("provider, name", CASES)
def test_prices_as_litellm_computes_them(litellm, provider, name):
    info = resolve(MODEL_MAP, provider, name)
    if not priceable(info):
        pytest.skip("the direct path leaves this model to litellm")
    for prompt, completion, read, written, reasoning in USAGES:
        if provider == "openai":
            written = 0
        usage = _usage(provider, prompt, completion, read, written, reasoning)
        try:
            p, c = litellm.cost_per_token(model=f"{provider}/{name}", prompt_tokens=prompt,
                                          completion_tokens=completion, usage_object=usage)
            expected = float(p) + float(c)
        except Exception:  # noqa: BLE001 - unpriced
            expected = None
        got = price(info, prompt, completion, read, written, reasoning)
        assert got == expected, (prompt, completion, read, written, reasoning)
    # an estimate (no usage from the provider) is priced as prompt tokens alone
    try:
        p, c = litellm.cost_per_token(model=f"{provider}/{name}", prompt_tokens=4321,
                                      completion_tokens=7)
        expected = float(p) + float(c)
    except Exception:  # noqa: BLE001
        expected = None
    assert price(info, 4321, 7) == expected



def test_the_map_is_read_once_per_process_while_the_file_is_unchanged(tmp_path, monkeypatch):
    from pathlib import Path
    path = tmp_path / "map.json"
    path.write_text('{\n    "m1": {"max_input_tokens": 10}\n}\n', encoding="utf-8")
    reads = []
    real_read = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: (reads.append(self),
                                                                    real_read(self, *a, **k))[1])
    first = ModelMap.load(path)
    got = first.entry("m1")
    assert got == ("m1", {"max_input_tokens": 10}) and len(reads) == 1
    got[1]["max_input_tokens"] = 99  # a caller changing its copy changes nothing shared
    assert first.entry("M1") == ("m1", {"max_input_tokens": 10}) and first.entry("m2") is None
    second = ModelMap.load(path)  # the next agent in the process: answers remembered
    assert second.entry("m1") == ("m1", {"max_input_tokens": 10})
    assert second.entry("m2") is None and len(reads) == 1
    path.write_text('{\n    "m2": {"max_input_tokens": 20}\n}\n', encoding="utf-8")
    third = ModelMap.load(path)  # the file changed (size): read again
    assert third.entry("m2") == ("m2", {"max_input_tokens": 20}) and len(reads) == 2
    assert ModelMap.load(tmp_path / "missing.json") is None
