"""The toolset orchestrator (AgentB's ToolsetOrchestrator): toolsets built from several
sources, each ready to hand to one agent, and a source too large for one agent split into
groups by the model.

    with ToolsetOrchestrator([Toolset("github", openapi={"gh": {"spec": ...}}),
                              Toolset("files", builtins=["read", "edit"])],
                             model="openai/gpt-4.1") as orchestrator:
        for toolset in orchestrator.toolsets():      # github_issues, github_repos, ..., files
            Agent(tools=[toolset], enabled_toolsets=[], ...)

Each toolset's sources (MCP servers, OpenAPI documents, providers) are started together
and closed with the orchestrator (tools/sources.py: the same lifecycle an agent gives
them), so the Tool objects handed back stay usable until `close()`. A toolset with
`by_tag` becomes one toolset per OpenAPI tag first. Then any toolset with more tools than
`toolset_max_tools` is split: the model is asked once for groups (a JSON answer), the answer
is checked (every tool in exactly one group, none larger than the limit: what is missing
goes to an `other` group, what is too large is cut in order), and cached in
`cache_dir` under the hash of the tools (names, descriptions, schemas) and the
limit, so the next run, or the next agent, makes no model call. An answer that cannot be
read at all is a notice and an in-order split, not cached (the next run asks again).
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baseagent.cancellation import NEVER, CancelToken
from baseagent.tools.sources import ToolSources
from baseagent.tools.tool import Tool
from baseagent.compose.toolset import Toolset

CACHE_VERSION = 1
# What the model reads of each tool's description when it groups them.
DESCRIPTION_CHARS = 160
_UNSAFE = re.compile(r"[^a-z0-9_-]")


@dataclass
class Group:
    """One group of a split: a name (without the toolset's prefix), what it is for, the
    tool names in it."""

    name: str
    description: str
    tools: list[str]


class ToolsetOrchestrator:
    """Keyword options are the library's configuration (`Agent`'s: model, api_base,
    api_key, cwd, toolset_max_tools, ...). `model_client` replaces the litellm client
    (tests: baseagent.testing.deterministic); it is made only when a split needs the model.
    `env`: the environment sources start from (default: this process's). `cache_dir`: where
    splits are cached (default ~/.baseagent/toolsets). `config`: settings already resolved
    (an AgentConfig: `baseagent toolsets split` hands the CLI's), instead of options."""

    def __init__(self, toolsets: Sequence[Toolset], *, model_client: Any = None,
                 env: Mapping[str, str] | None = None, cache_dir: str | Path | None = None,
                 config: Any = None, **options: Any) -> None:
        import os

        from baseagent.config.load import agent_config_from_options

        if config is not None and options:
            from baseagent.errors import ConfigError

            raise ConfigError(f"give config= or options ({', '.join(sorted(options))}), "
                              "not both")
        self.settings = config if config is not None else agent_config_from_options(options)
        self.env = dict(os.environ if env is None else env)
        self.max_tools = self.settings.toolset_max_tools
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None \
            else Path.home() / ".baseagent" / "toolsets"
        self.model_client = model_client
        self.notices: list[str] = []
        self._declared = list(toolsets)
        names = [t.name for t in self._declared]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            from baseagent.errors import ConfigError

            raise ConfigError(f"two toolsets are named {twice[0]!r}")
        self._sources: list[ToolSources] = []
        self._secrets: list[str] = []
        for toolset in self._declared:
            sources, secrets = toolset.sources(self.env, self.settings.cwd)
            self._sources.append(ToolSources(sources))
            self._secrets += secrets
        self._built: list[Toolset] | None = None

    def __enter__(self) -> "ToolsetOrchestrator":
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start every toolset's sources in the background (servers launch, documents load)."""
        for sources in self._sources:
            sources.start()

    def close(self) -> None:
        """Stop every source; the toolsets' tools that came from them stop working."""
        for sources in self._sources:
            sources.close()

    def toolsets(self, cancelled: CancelToken = NEVER) -> list[Toolset]:
        """The toolsets, each ready to hand to one agent (its tools are Tool objects), in
        the order declared, a split one's groups in the model's order. Built once."""
        if self._built is not None:
            return self._built
        taken: set[str] = set()
        built: list[Toolset] = []
        for declared, sources in zip(self._declared, self._sources):
            self.notices += sources.wait(cancelled)
            tools = declared.fixed_tools()
            taken.update(t.name for t in tools)
            tools += sources.tools(taken)
            for toolset in _by_tag(declared, tools) if declared.by_tag else \
                    [_ready(declared, declared.name, declared.description, tools)]:
                built += self._fit(toolset, cancelled)
        self._built = built
        return built

    def toolset(self, name: str) -> Toolset | None:
        """A built toolset by name (a specialist's tools), or None."""
        return next((t for t in self.toolsets() if t.name == name), None)

    # -- splitting -----------------------------------------------------------------------

    def _fit(self, toolset: Toolset, cancelled: CancelToken) -> list[Toolset]:
        tools = list(toolset.tools)
        if len(tools) <= self.max_tools:
            return [toolset]
        groups = self.split(toolset.name, toolset.description, tools, cancelled)
        by_name = {t.name: t for t in tools}
        used: set[str] = set()
        out = []
        for group in groups:
            name = _unique(f"{toolset.name}_{group.name}"[:64], used)
            out.append(_ready(toolset, name, group.description,
                              [by_name[n] for n in group.tools],
                              split_from=toolset.name))
        return out

    def split(self, name: str, description: str, tools: Sequence[Tool],
              cancelled: CancelToken = NEVER) -> list[Group]:
        """The groups of `tools`: from the cache, else from the model (cached)."""
        names = [t.name for t in tools]
        key = source_hash(tools, self.max_tools)
        path = self.cache_dir / f"{key}.json"
        cached = _read_cache(path)
        if cached is not None:
            groups, problems = settle(cached, names, self.max_tools)
            if not problems:
                return groups
        try:
            answer = self._ask(name, description, tools, cancelled)
        except Exception as exc:  # noqa: BLE001 - a failed call is a notice, not the end
            self.notices.append(f"toolset '{name}': the model could not split it ({type(exc).__name__}: "
                                f"{exc}); split in order")
            return settle({"groups": []}, names, self.max_tools)[0]
        parsed = read_answer(answer)
        if parsed is None:
            self.notices.append(f"toolset '{name}': the model's grouping could not be read; "
                                "split in order")
            return settle({"groups": []}, names, self.max_tools)[0]
        groups, problems = settle(parsed, names, self.max_tools)
        self.notices += [f"toolset '{name}': {p}" for p in problems]
        _write_cache(path, groups, self.max_tools, self.notices)
        return groups

    def _ask(self, name: str, description: str, tools: Sequence[Tool],
             cancelled: CancelToken) -> str:
        client = self.model_client
        if client is None:
            from baseagent.compose.model import model_client_for

            client = self.model_client = model_client_for(self.settings, self.env)
        client.bind_cancel(cancelled)
        turn = client.complete(prompt(name, description, tools, self.max_tools), None)
        return turn.text


def prompt(name: str, description: str, tools: Sequence[Tool], max_tools: int) \
        -> list[dict[str, Any]]:
    """The one request that splits a toolset: the tools (name and the first line of the
    description), the limit, and the JSON shape of the answer."""
    listed = "\n".join(f"- {t.name}: {_first_line(t.description)}" for t in tools)
    about = f" ({description})" if description else ""
    return [
        {"role": "system", "content": (
            "You organise an agent's tools into groups of related tools; each group is "
            "handed to one specialist agent. Answer with JSON only.")},
        {"role": "user", "content": (
            f"Split these {len(tools)} tools of the '{name}' toolset{about} into groups of "
            f"related tools, at most {max_tools} tools per group, every tool in exactly one "
            "group. Answer with JSON only, in this shape:\n"
            '{"groups": [{"name": "short_snake_case_name", "description": "one sentence: '
            'what these tools are for", "tools": ["tool_name", "..."]}]}\n\n'
            f"Tools:\n{listed}")},
    ]


def read_answer(text: str) -> dict[str, Any] | None:
    """The JSON object in the model's answer (code fences and prose around it allowed)."""
    from baseagent.llm.lenient_json import loads

    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        value = loads(text[start:end + 1]).value
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def settle(answer: Mapping[str, Any], names: Sequence[str], max_tools: int) \
        -> tuple[list[Group], list[str]]:
    """Groups every tool is in exactly once, none over `max_tools`, from what the model (or
    the cache) said; the problems fixed, one phrase each. Pure."""
    known = set(names)
    placed: set[str] = set()
    groups: list[Group] = []
    problems: list[str] = []
    raw = answer.get("groups") if isinstance(answer.get("groups"), list) else []
    if answer and not raw:
        problems.append("the answer has no groups")
    for entry in raw:
        if not isinstance(entry, Mapping):
            problems.append("a group is not an object")
            continue
        members: list[str] = []
        for tool in entry.get("tools") or []:
            if not isinstance(tool, str) or tool not in known:
                problems.append(f"unknown tool {tool!r} left out")
            elif tool in placed:
                problems.append(f"{tool} is in two groups: kept in the first")
            else:
                placed.add(tool)
                members.append(tool)
        if members:
            name = _UNSAFE.sub("_", str(entry.get("name") or "group").lower()).strip("_")
            groups.append(Group(name or "group", str(entry.get("description") or "")[:300],
                                members))
    missing = [n for n in names if n not in placed]
    if missing and raw:
        problems.append(f"{len(missing)} tool(s) in no group: put in 'other'")
    if missing:
        groups.append(Group("other" if raw else "part", "", missing))
    out: list[Group] = []
    for group in groups:
        if len(group.tools) <= max_tools:
            out.append(group)
            continue
        if raw and group.name not in ("other",):
            problems.append(f"group {group.name} has {len(group.tools)} tools: cut in order")
        for number, start in enumerate(range(0, len(group.tools), max_tools), 1):
            out.append(Group(f"{group.name}_{number}", group.description,
                             group.tools[start:start + max_tools]))
    return out, problems


def source_hash(tools: Sequence[Tool], max_tools: int) -> str:
    """What a split depends on: the tools as the model would see them, and the limit."""
    data = {"version": CACHE_VERSION, "max_tools": max_tools,
            "tools": [[t.name, t.description, t.parameters()] for t in tools]}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def _read_cache(path: Path) -> dict[str, Any] | None:
    from baseagent.fsutil import read_regular

    try:
        data = json.loads(read_regular(path, 4 * 1024 * 1024))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return None
    return data


def _write_cache(path: Path, groups: list[Group], max_tools: int, notices: list[str]) -> None:
    from baseagent.fsutil import atomic_write

    data = {"version": CACHE_VERSION, "max_tools": max_tools,
            "groups": [{"name": g.name, "description": g.description, "tools": g.tools}
                       for g in groups]}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(data, indent=1).encode())
    except OSError as exc:
        notices.append(f"cannot cache the toolset split in {path.parent}: "
                       f"{exc.strerror or exc}")


def _by_tag(declared: Toolset, tools: list[Tool]) -> list[Toolset]:
    """One toolset per OpenAPI tag (an operation's first tag; the rest, untagged or not from
    a document, in `NAME_other`)."""
    from baseagent.openapi.source import OpenApiTool

    groups: dict[str, list[Tool]] = {}
    for tool in tools:
        tag = tool.op.tags[0] if isinstance(tool, OpenApiTool) and tool.op.tags else ""
        groups.setdefault(tag, []).append(tool)
    used: set[str] = set()
    out = []
    for tag, members in sorted(groups.items(), key=lambda kv: (kv[0] == "", kv[0])):
        label = _UNSAFE.sub("_", tag.lower()).strip("_") or "other"
        name = _unique(f"{declared.name}_{label}"[:64], used)
        text = f"The {tag} operations of {declared.name}" if tag else declared.description
        out.append(_ready(declared, name, text, members, tag=tag or None))
    return out


def _ready(declared: Toolset, name: str, description: str, tools: list[Tool],
           **metadata: Any) -> Toolset:
    """A built toolset: ready Tool objects only (no sources of its own)."""
    meta = {**declared.metadata, "source": declared.name,
            **{k: v for k, v in metadata.items() if v is not None}}
    return Toolset(name=name, description=description or declared.description,
                   tools=tools, metadata=meta)


def _unique(name: str, used: set[str]) -> str:
    candidate, number = name, 2
    while candidate in used:
        candidate = f"{name[:60]}_{number}"
        number += 1
    used.add(candidate)
    return candidate


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= DESCRIPTION_CHARS else line[:DESCRIPTION_CHARS] + "..."
