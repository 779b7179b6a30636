"""How a cost reads wherever a person sees one: `cost $0.0123`, or `cost unknown` when the
model has no price (litellm's price map does not know it: local models, most proxies).

One function so the terminal's turn summary, `/cost`, `sessions show` and the batch summary
say it the same way. Machine-readable outputs (JSONL, `--json`, summary.json, exports)
carry `null` for an unknown cost, never 0.
"""
from __future__ import annotations


def cost_text(cost_usd: float | None) -> str:
    """`cost $0.0123`, or `cost unknown` when cost_usd is None."""
    return "cost unknown" if cost_usd is None else f"cost ${cost_usd:.4f}"
