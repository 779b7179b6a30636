"""The composition root's prompts: the system prompt of a run (built in, from a file, for a
specialist) and the opening messages of a new thread."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baseagent.config.settings import AgentConfig
from baseagent.errors import ConfigError
from baseagent.compose.model import profile_of

if TYPE_CHECKING:
    from baseagent.prompts.profiles import PromptProfile
    from baseagent.tools.tool import Tool


def system_prompt(settings: AgentConfig, tools: Sequence[Tool],
                  profile: PromptProfile | None = None, person_present: bool = False) -> str:
    """The system prompt: the built-in one (or system_prompt / system_prompt_file), then
    append_system_prompt (text, or @FILE). Read once, here, so every request of the thread
    sends the same bytes; an unreadable file is a ConfigError before anything runs."""
    from baseagent.prompts.system import compose_system_prompt
    from baseagent.tools.registry import DEFAULT_TOOLS

    profile = profile or profile_of(settings)

    base = settings.system_prompt
    if settings.system_prompt_file is not None:
        base = _read_prompt_file(settings.system_prompt_file, "system_prompt_file")
    if settings.planner and base is None:
        from baseagent.core.delegation.specialists import planner_prompt
        from baseagent.prompts.system import PLANNER_PROMPT

        base = planner_prompt(PLANNER_PROMPT, settings.specialists)
    append = settings.append_system_prompt
    if append is not None and append.startswith("@"):
        append = _read_prompt_file(Path(append[1:]), "append_system_prompt")
    builtins = [t.name for t in tools if t.name in DEFAULT_TOOLS]
    expected = list(profile.tools or DEFAULT_TOOLS)
    restricted = None if base is not None or builtins == expected else builtins
    return compose_system_prompt(profile.system_prompt if base is None else base, append,
                                 restricted, person_present=person_present and base is None)


def _read_prompt_file(path: Path, key: str) -> str:
    from baseagent.fsutil import read_regular

    path = path.expanduser()
    try:
        return read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(f"{key}: cannot read {path}: {reason}") from None


def opening_messages(cwd: Path, shell: str, system: str | None = None,
                     env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The system prompt (default: the built-in one) and the environment context (`env`:
    the commands' environment, which the agent's own git runs with)."""
    from baseagent.prompts.context import environment_context

    from baseagent.prompts.system import SYSTEM_PROMPT

    return [{"role": "system", "content": system or SYSTEM_PROMPT},
            {"role": "user", "content": environment_context(cwd, shell, env=env)}]


def compose_specialist_prompt(base: str, role: str, prompt: str | None) -> str:
    """A specialist's system prompt: the built-in one, who it is, then its own `prompt`."""
    text = base.rstrip("\n") + "\n\n" + role.strip("\n") + "\n"
    if prompt:
        text += "\n" + prompt.strip("\n") + "\n"
    return text
