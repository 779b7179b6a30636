"""litellm's model map (context windows, prices), read without importing litellm.

litellm ships the map as a JSON file inside its package and, with
LITELLM_LOCAL_MODEL_COST_MAP (which the client always sets), reads exactly that file. The
direct path (llm/route.py) needs a model's entry to size the context and price its usage,
which is all of the map it needs: the file is found through the import system without
importing the package, searched as text for the one entry (key case-insensitive, as
litellm looks keys up) and only that entry is parsed: a few milliseconds, and no 30 MB
of parsed map kept alive. The text, lowered once, is kept per process for as long as the
file is unchanged (a library process builds many agents; each would otherwise read and
search ~1.4 MB again), and so is where each key was found: read-only memos of a file. litellm's "fallback generalizations" (capability rules for model
names the map does not list, such as a new Claude version) are read the same way.
tests/llm/test_model_map.py holds every lookup and price to litellm's own on the pinned map.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

MAP_FILE = "model_prices_and_context_window_backup.json"
_DECODER = json.JSONDecoder()


def map_path() -> Path | None:
    """Where the installed litellm keeps its map (None when litellm is not installed)."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        path = Path(location) / MAP_FILE
        if path.is_file():
            return path
    return None


class ModelMap:
    """The map's text, with the lookups the direct path needs."""

    def __init__(self, text: str) -> None:
        self._text = text
        lower = text.lower()
        # offsets in the lowered text are offsets in the text only when lowering kept
        # every length (the pinned map is ASCII)
        self._lower = lower if len(lower) == len(text) else text
        self._rules: list[tuple[re.Pattern[str], dict[str, Any], list[str] | None]] | None = None
        self._found: dict[str, int] = {}  # key -> its entry's offset (-1: not in the map)

    @classmethod
    def load(cls, path: Path | None = None) -> "ModelMap | None":
        """The map at `path` (else litellm's), shared by every caller in the process while
        the file stays the same (its size and modification time)."""
        path = path or map_path()
        if path is None:
            return None
        try:
            stat = path.stat()
        except OSError:
            return None
        return _load(str(path), stat.st_size, stat.st_mtime_ns)

    def entry(self, key: str) -> tuple[str, dict[str, Any]] | None:
        """(the map's own key, its entry) for `key`, matched exactly, else ignoring case (as
        litellm's _get_model_cost_key). Each call parses the entry afresh, so a caller may
        change what it gets."""
        if not key or '"' in key or "\n" in key:
            return None
        at = self._found.get(key)
        if at is None:
            exact = self._text.find('\n    "' + key + '": {')
            at = exact if exact >= 0 else self._lower.find('\n    "' + key.lower() + '": {')
            self._found[key] = at
        if at < 0:
            return None
        value, _ = _DECODER.raw_decode(self._text, at + len(key) + 9)
        return self._text[at + 6:at + 6 + len(key)], value

    def known(self, key: str) -> bool:
        return self.entry(key) is not None

    def rules(self) -> list[tuple[re.Pattern[str], dict[str, Any], list[str] | None]]:
        """The capability rules of litellm's fallback generalizations, in file order:
        (pattern, model_info, fill_missing_for_providers). Routing-only rules (whose
        model_info is just litellm_provider) are left out, as litellm leaves them out of
        model info."""
        if self._rules is None:
            found = self.entry("fallback_generalizations")
            rules = found[1].get("rules", []) if found else []
            parsed = []
            for rule in rules:
                info = rule.get("model_info") if isinstance(rule, dict) else None
                if not isinstance(info, dict) or set(info) <= {"litellm_provider"}:
                    continue
                try:
                    pattern = re.compile(rule["pattern"], re.IGNORECASE)
                except (KeyError, re.error):
                    continue
                parsed.append((pattern, info, rule.get("fill_missing_for_providers")))
            self._rules = parsed
        return self._rules

    def generalized(self, name: str) -> dict[str, Any] | None:
        """The union of every capability rule matching `name` (later rules win)."""
        merged: dict[str, Any] = {}
        matched = False
        for pattern, info, _ in self.rules():
            if pattern.search(name):
                merged.update(info)
                matched = True
        return merged if matched else None

    def fill_missing(self, key: str, provider: str) -> dict[str, Any]:
        """The flagged rules' keys for an entry of `provider` (they only fill what the
        entry lacks)."""
        merged: dict[str, Any] = {}
        for pattern, info, providers in self.rules():
            if providers and provider in providers and pattern.search(key):
                merged.update(info)
        return merged


@functools.lru_cache(maxsize=4)
def _load(path: str, size: int, mtime_ns: int) -> ModelMap | None:
    """One ModelMap per version of the file (size and mtime are part of the key)."""
    try:
        return ModelMap(Path(path).read_text(encoding="utf-8"))
    except OSError:
        return None


def resolve(model_map: ModelMap, provider: str, name: str) -> dict[str, Any] | None:
    """A model's info as litellm's get_model_info resolves `provider/name` (1.105.0): the
    first candidate name with an entry of this provider (or of none), with the flagged
    generalizations filling what it lacks; else, when no candidate is in the map at all,
    the generalizations of the first candidate any rule matches; None when unmapped."""
    candidates = [f"{provider}/{name}", name]
    seen_any = False
    for candidate in candidates:
        found = model_map.entry(candidate)
        if found is None:
            continue
        seen_any = True
        key, info = found
        owner = info.get("litellm_provider")
        if owner is not None and owner != provider:
            continue
        if info.get("mode", "chat") in ("chat", "responses"):
            fill = model_map.fill_missing(key, info.get("litellm_provider") or "")
            info = {**{k: v for k, v in fill.items() if k not in info}, **info}
        return info
    if seen_any:
        return None
    for candidate in candidates:
        general = model_map.generalized(candidate)
        if general is not None:
            return {**general, "litellm_provider": provider}
    return None
