"""litellm's model map (context windows, prices), read without importing litellm.

litellm ships the map as a JSON file inside its package and, with
LITELLM_LOCAL_MODEL_COST_MAP (which the client always sets), reads exactly that file. The
direct path (llm/route.py) needs a model's entry to size the context and price its usage,
which is all of the map it needs: the file is found through the import system without
importing the package, searched as text for the one entry (key case-insensitive, as
litellm looks keys up) and only that entry is parsed: a few milliseconds, and no 30 MB
of parsed map kept alive. What each lookup found (a key's entry as text, the
generalization rules) is remembered for the process while the file is unchanged (its path,
size and modification time), so a library process building many agents reads and searches
the ~3 MB file once, not once per agent; the text itself is not kept (3 MB, twice with its
lowered copy, for answers of a few hundred bytes). litellm's "fallback generalizations" (capability rules for model
names the map does not list, such as a new Claude version) are read the same way.
tests/llm/test_model_map.py holds every lookup and price to litellm's own on the pinned map.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import stat as stat_mode
from pathlib import Path
from typing import Any

MAP_FILE = "model_prices_and_context_window_backup.json"
_DECODER = json.JSONDecoder()
# What lookups found, per version of a map file (path, size, mtime): read-only memos.
_ANSWERS: dict[tuple[str, int, int], dict[str, tuple[str, str] | None]] = {}
_RULES: dict[tuple[str, int, int], list[Any]] = {}


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
    """The map's text, with the lookups the direct path needs. Made from a text, or from a
    file (`load`): then the text is read at the first lookup the process has not answered
    before, and the answers are shared with every later ModelMap of the same file."""

    def __init__(self, text: str | None = None, *, path: Path | None = None,
                 identity: tuple[str, int, int] | None = None) -> None:
        self._text_value = text
        self._lower_value: str | None = None
        self._path = path
        self._answers: dict[str, tuple[str, str] | None] = (
            _ANSWERS.setdefault(identity, {}) if identity is not None else {})
        self._identity = identity
        self._rules: list[tuple[re.Pattern[str], dict[str, Any], list[str] | None]] | None = (
            _RULES.get(identity) if identity is not None else None)

    @classmethod
    def load(cls, path: Path | None = None) -> "ModelMap | None":
        """The map at `path` (else litellm's); None when there is no such file."""
        path = path or map_path()
        if path is None:
            return None
        try:
            info = path.stat()
        except OSError:
            return None
        # the text is read later, at the first lookup not yet answered: an unreadable file
        # is no map now, as it was when the text was read here
        if not stat_mode.S_ISREG(info.st_mode) or not os.access(path, os.R_OK):
            return None
        return cls(path=path, identity=(str(path), info.st_size, info.st_mtime_ns))

    @property
    def _text(self) -> str:
        if self._text_value is None:
            try:
                self._text_value = self._path.read_text(encoding="utf-8") if self._path else ""
            except OSError:
                self._text_value = ""
        return self._text_value

    @property
    def _lower(self) -> str:
        if self._lower_value is None:
            lower = self._text.lower()
            # offsets in the lowered text are offsets in the text only when lowering kept
            # every length (the pinned map is ASCII)
            self._lower_value = lower if len(lower) == len(self._text) else self._text
        return self._lower_value

    def entry(self, key: str) -> tuple[str, dict[str, Any]] | None:
        """(the map's own key, its entry) for `key`, matched exactly, else ignoring case (as
        litellm's _get_model_cost_key). Each call parses the entry afresh, so a caller may
        change what it gets."""
        found = self._answer(key)
        if found is None:
            return None
        own, raw = found
        return own, json.loads(raw)

    def _answer(self, key: str) -> tuple[str, str] | None:
        """(the map's own key, its entry's JSON text), remembered per file version."""
        if not key or '"' in key or "\n" in key:
            return None
        if key not in self._answers:
            self._answers[key] = self._find(key)
        return self._answers[key]

    def _find(self, key: str) -> tuple[str, str] | None:
        text = self._text
        at = text.find('\n    "' + key + '": {')
        if at < 0:
            at = self._lower.find('\n    "' + key.lower() + '": {')
        if at < 0:
            return None
        start = at + len(key) + 9
        _, end = _DECODER.raw_decode(text, start)
        return text[at + 6:at + 6 + len(key)], text[start:end]

    def known(self, key: str) -> bool:
        return self._answer(key) is not None  # no need to parse the entry

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
            if self._identity is not None:
                _RULES[self._identity] = parsed
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


def supports_vision(model: str, model_map: ModelMap | None = None) -> bool | None:
    """Whether `model` (a litellm model string) takes images, as litellm's supports_vision
    reads its map: True or False for a model the map knows (an entry without the key is
    False, as for litellm), None for one it does not know (local models, proxies) or when
    the map cannot be read. Read from the map file, so deciding never imports litellm
    (tests/llm/test_vision.py holds it to litellm)."""
    model_map = model_map or ModelMap.load()
    if model_map is None:
        return None
    provider, _, name = model.partition("/")
    if name:
        info = resolve(model_map, provider, name)
    else:
        found = model_map.entry(provider)
        info = found[1] if found is not None else None
    if info is None:
        return None
    return bool(info.get("supports_vision", False))
