"""A call's price from a model-map entry, as litellm prices it (without importing it).

The part of litellm 1.105.0's generic_cost_per_token that a chat call of the direct path
reaches: uncached input, cache reads and writes, output and reasoning output, each at its
rate, the whole request at the `_above_<N>k_tokens` rates once its prompt passes N. An
entry with pricing this does not follow (a tier table, off-peak hours, character or
per-second prices) is not priced here: llm/route.py sends such a model through litellm.
tests/llm/test_model_map.py holds this to litellm.cost_per_token for every chat model of the
two wires in the pinned map.
"""
from __future__ import annotations

from typing import Any

# Keys whose presence means pricing this module does not reproduce.
_FOREIGN_PRICING = ("tiered_pricing", "off_peak", "input_cost_per_character",
                    "output_cost_per_character", "input_cost_per_second",
                    "output_cost_per_second", "input_cost_per_query")
# Suffixes of threshold keys litellm skips without a service tier (_NON_STANDARD_...).
_TIER_SUFFIXES = ("_flex", "_priority", "_batches", "_fast", "_ultrafast", "_balanced")


def priceable(info: dict[str, Any] | None) -> bool:
    """Whether `price` reproduces litellm for this entry (None: unmapped, priced as None)."""
    if info is None:
        return True
    return not any(key.startswith(_FOREIGN_PRICING) for key in info)


def _rate(info: dict[str, Any], key: str, default: float | None = 0.0) -> float | None:
    value = info.get(key)
    if isinstance(value, bool):
        return default
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return default
    return default


def _threshold(key: str) -> float:
    part = key.split("_above_")[1].split("_tokens")[0]
    return float(part.replace("k", "")) * (1000 if "k" in part else 1)


def price(info: dict[str, Any] | None, prompt_tokens: int, completion_tokens: int,
          cached_tokens: int = 0, cache_write_tokens: int = 0,
          reasoning_tokens: int = 0) -> float | None:
    """USD for one call (None when the model is not in the map). `prompt_tokens` is the
    whole prompt, cache reads and writes included."""
    if info is None:
        return None
    prompt_rate = _rate(info, "input_cost_per_token") or 0.0
    output_rate = _rate(info, "output_cost_per_token") or 0.0
    write_rate = _rate(info, "cache_creation_input_token_cost", None)
    read_rate = _rate(info, "cache_read_input_token_cost", None)
    thresholds = [k for k in info if k.startswith("input_cost_per_token_above_")
                  and not k.endswith(_TIER_SUFFIXES)]
    for key in sorted(thresholds, key=_threshold, reverse=True):
        if info.get(key) is None:
            continue
        try:
            limit = _threshold(key)
        except (IndexError, ValueError):
            continue
        if prompt_tokens > limit:
            part = key.split("_above_")[1].split("_tokens")[0]
            prompt_rate = _rate(info, key, prompt_rate) or 0.0
            output_rate = _rate(info, f"output_cost_per_token_above_{part}_tokens",
                                output_rate) or 0.0
            write_rate = _rate(info, f"cache_creation_input_token_cost_above_{part}_tokens",
                               write_rate)
            read_rate = _rate(info, f"cache_read_input_token_cost_above_{part}_tokens",
                              read_rate)
            break
    read_rate = prompt_rate if read_rate is None else read_rate
    write_rate = prompt_rate if write_rate is None else write_rate
    # the same sums in the same order as litellm, so the floats come out identical
    text = max(prompt_tokens - cached_tokens - cache_write_tokens, 0)
    prompt_cost = float(text) * prompt_rate
    prompt_cost += float(cached_tokens) * read_rate
    if cache_write_tokens:
        prompt_cost += cache_write_tokens * write_rate
    if reasoning_tokens > 0:
        reasoning_rate = _rate(info, "output_cost_per_reasoning_token", None)
        completion_cost = float(max(0, completion_tokens - reasoning_tokens)) * output_rate
        completion_cost += float(reasoning_tokens) * (
            output_rate if reasoning_rate is None else reasoning_rate)
    else:
        completion_cost = float(completion_tokens) * output_rate
    return float(prompt_cost) + float(completion_cost)
