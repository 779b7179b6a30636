"""Lone surrogates out of what goes to the provider and what comes back.

One such character in the history makes every later request fail to encode as UTF-8
(checked: httpx raises UnicodeEncodeError, litellm reports a 500), so it is cleaned on the
way in and on the way out. A Python str decoded from JSON holds a surrogate code point only
when it is unpaired.
"""
from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub_surrogates(value: Any) -> Any:
    """Replace lone surrogates (a model's invalid \\ud800 escape, undecodable input) by
    U+FFFD. Returns the same object when there is nothing to clean."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        items = {k: scrub_surrogates(v) for k, v in value.items()}
        return items if any(items[k] is not value[k] for k in value) else value
    if isinstance(value, list):
        cleaned = [scrub_surrogates(v) for v in value]
        return cleaned if any(a is not b for a, b in zip(cleaned, value)) else value
    return value
