"""`baseagent exec`: the command line of Codex `exec`, so Codex clients can drive baseagent.

The Codex TypeScript SDK (`@openai/codex-sdk`, checked against 0.163.0) spawns its engine as

    <path> exec --experimental-json [--config k=v]... [--model M] [--thread-source S]
        [--sandbox S] [--cd DIR] [--add-dir DIR]... [--skip-git-repo-check]
        [--output-schema FILE] [--cyber-access-program P] [--profile NAME] [resume THREAD_ID]
        [--image F]...

(options may follow `resume ID`), sets CODEX_API_KEY when given an apiKey, passes a
baseUrl as `--config openai_base_url="..."`, writes the prompt to stdin and closes it, and
parses every stdout line as JSON. This module turns that argv into Settings flags and a
prompt and hands them to runner.run (and so to the library Agent). The parser is written by hand (not click) because the
argv is fixed by another program: options interleave with the `resume` positional, and an
unknown option must be a one-line error, never a traceback.
"""
from __future__ import annotations

import os
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from baseagent.exit_codes import EXIT_USAGE

PROG = "baseagent exec"

# Codex config keys with a baseagent equivalent (`--config key=value`). Settings field names
# are accepted as they are too, so every baseagent knob is reachable from a Codex client.
CODEX_CONFIG_KEYS = {
    "model": "model",
    "openai_base_url": "api_base",
    "sandbox_mode": "sandbox",
    "sandbox_workspace_write.network_access": "sandbox_network",
    "model_context_window": "context_window",
    "model_max_output_tokens": "max_tokens",
    "model_reasoning_effort": "reasoning_effort",
}
# Keys a Codex client sends whose intent baseagent already meets: accepted without a notice.
# (exec never asks for approval, as Codex exec: nobody is at the keyboard.)
SILENT_CONFIG_KEYS = frozenset({"approval_policy"})

HELP = """\
Usage: baseagent exec [OPTIONS] [PROMPT]
       baseagent exec [OPTIONS] resume [THREAD_ID | --last] [PROMPT]

Codex-compatible non-interactive mode. The prompt is read from stdin when no PROMPT (or
'-') is given. Events are Codex `exec --json` JSONL on stdout.

Options:
  --json, --experimental-json   JSONL on stdout even on a terminal
  -m, --model MODEL             litellm model string
  -s, --sandbox MODE            read-only (default, as Codex exec) | workspace-write |
                                danger-full-access
  -C, --cd DIR                  working directory
  --add-dir DIR                 extra writable directory (repeatable)
  -p, --profile NAME            use the config file's [profiles.NAME] settings
                                (also -c profile=NAME; env BASEAGENT_PROFILE)
  -c, --config KEY=VALUE        setting override; Codex keys model, openai_base_url,
                                sandbox_mode, model_context_window,
                                model_max_output_tokens, model_reasoning_effort,
                                sandbox_workspace_write.network_access,
                                mcp_servers.NAME.KEY, or any baseagent setting
                                name (e.g. sandbox_network=true)
  --output-schema FILE          JSON Schema the final answer must match
  -i, --image FILE[,FILE]       attach image(s) to the prompt (repeatable)
  -o, --output-last-message FILE  write the final answer to FILE
  --skip-git-repo-check         accepted (baseagent never requires a git repository)
  --full-auto                   sandbox workspace-write (commands may write the workspace)
  --dangerously-bypass-approvals-and-sandbox  sandbox danger-full-access (no limits)
  --ephemeral                   do not write a session record
  --no-verify                   skip the self-verification step
  --oss                         a local model server (Ollama at localhost:11434 unless
                                -c openai_base_url=...); see `baseagent --help`
  -h, --help                    show this help
"""


def exec_defaults(settings: Any) -> Any:
    """Codex `exec`'s defaults: commands run read-only unless a flag, `-c sandbox_mode`, the
    environment or the config file says otherwise (`--full-auto`: workspace-write;
    `--dangerously-bypass-approvals-and-sandbox`: full access), and nobody is asked for
    approval (exec runs with nobody at the keyboard: approval_policy never)."""
    from baseagent.sandbox.policy import platform_supported

    confine = "sandbox" not in settings.model_fields_set and platform_supported()
    return settings.model_copy(update={
        **({"sandbox": "read-only"} if confine else {}), "approval_policy": "never"})


class ExecUsageError(Exception):
    """A malformed command line: one line on stderr, exit code 2."""


@dataclass
class ExecRequest:
    """The parsed command line, before settings are resolved."""

    flags: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    prompt: str | None = None
    resume_id: str | None = None
    resume_last: bool = False
    images: list[Path] = field(default_factory=list)
    output_schema: Path | None = None
    profile: str | None = None  # --profile NAME (wins over -c profile=NAME)
    config_profile: str | None = None  # -c profile=NAME
    notices: list[str] = field(default_factory=list)
    show_help: bool = False

    @property
    def resuming(self) -> bool:
        return self.resume_id is not None or self.resume_last


def parse_config_value(raw: str) -> Any:
    """A TOML value (`"x"`, `3`, `true`, `[..]`); anything else is taken as a plain string,
    as Codex does, so `-c model=gpt-4.1` works without quotes."""
    try:
        return tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        return raw


def _config_override(item: str, request: ExecRequest) -> None:
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ExecUsageError(f"--config expects KEY=VALUE, got {item!r}")
    from baseagent.config.settings import Settings
    from baseagent.config.load import ALIASES, TABLE_KEYS

    if key == "profile":  # Codex's top-level key: the profile to use (--profile wins)
        request.config_profile = str(parse_config_value(raw.strip()))
        return
    head, _, path = key.partition(".")
    if head in TABLE_KEYS and path:
        # Codex's dotted form: mcp_servers.NAME.KEY=VALUE, or mcp_servers.NAME={...}.
        name, _, field = path.partition(".")
        value = parse_config_value(raw.strip())
        table = request.config.setdefault(head, {}).setdefault(name, {})
        if field:
            table[field] = value
        elif isinstance(value, dict):
            table.update(value)
        else:
            raise ExecUsageError(f"--config {key} expects a table, e.g. {key}={{url=\"...\"}}")
        return
    target = CODEX_CONFIG_KEYS.get(key) or ALIASES.get(key) or \
        (key if key in Settings.model_fields and key not in SILENT_CONFIG_KEYS else None)
    if target is None:
        if key not in SILENT_CONFIG_KEYS:
            request.notices.append(f"ignoring config key {key!r}: baseagent has no such setting")
        return
    request.config[target] = parse_config_value(raw.strip())


def _set(name: str, value: Any) -> Callable[[ExecRequest, str | None], None]:
    def apply(request: ExecRequest, _arg: str | None) -> None:
        request.flags[name] = value
    return apply


def _flag_value(name: str, convert: Callable[[str], Any] = str) \
        -> Callable[[ExecRequest, str | None], None]:
    def apply(request: ExecRequest, arg: str | None) -> None:
        request.flags[name] = convert(arg or "")
    return apply


def _add_images(request: ExecRequest, arg: str | None) -> None:
    request.images.extend(Path(p) for p in (arg or "").split(",") if p)


def _add_dir(request: ExecRequest, arg: str | None) -> None:
    request.flags.setdefault("writable_roots", []).append(Path(arg or "").expanduser().resolve())


def _schema(request: ExecRequest, arg: str | None) -> None:
    request.output_schema = Path(arg or "")


def _profile(request: ExecRequest, arg: str | None) -> None:
    request.profile = arg or ""


def _ignored(name: str) -> Callable[[ExecRequest, str | None], None]:
    def apply(request: ExecRequest, arg: str | None) -> None:
        request.notices.append(f"ignoring {name} {arg}: not supported by baseagent")
    return apply


def _nothing(_request: ExecRequest, _arg: str | None) -> None:
    return None


def _last(request: ExecRequest, _arg: str | None) -> None:
    request.resume_last = True


def _help(request: ExecRequest, _arg: str | None) -> None:
    request.show_help = True


def _config(request: ExecRequest, arg: str | None) -> None:
    _config_override(arg or "", request)


# option name -> (takes a value, action)
OPTIONS: dict[str, tuple[bool, Callable[[ExecRequest, str | None], None]]] = {
    "--experimental-json": (False, _set("json_output", True)),
    "--json": (False, _set("json_output", True)),
    "--model": (True, _flag_value("model")),
    "-m": (True, _flag_value("model")),
    "--sandbox": (True, _flag_value("sandbox")),
    "-s": (True, _flag_value("sandbox")),
    "--cd": (True, _flag_value("cwd", lambda a: Path(a).expanduser())),
    "-C": (True, _flag_value("cwd", lambda a: Path(a).expanduser())),
    "--add-dir": (True, _add_dir),
    "--config": (True, _config),
    "-c": (True, _config),
    "--output-schema": (True, _schema),
    "--image": (True, _add_images),
    "-i": (True, _add_images),
    "--output-last-message": (True, _flag_value("output_last_message", Path)),
    "-o": (True, _flag_value("output_last_message", Path)),
    "--skip-git-repo-check": (False, _nothing),
    "--full-auto": (False, _set("sandbox", "workspace-write")),
    "--dangerously-bypass-approvals-and-sandbox": (False, _set("sandbox", "danger-full-access")),
    "--yolo": (False, _set("sandbox", "danger-full-access")),
    "--ephemeral": (False, _set("record_session", False)),
    "--no-verify": (False, _set("verify", False)),
    "--oss": (False, _set("oss", True)),
    "--last": (False, _last),
    "--color": (True, _nothing),  # output style follows the terminal check
    # Sent by the SDK for thread options baseagent has no use for: accepted, noted.
    "--thread-source": (True, _ignored("--thread-source")),
    "--cyber-access-program": (True, _ignored("--cyber-access-program")),
    "--profile": (True, _profile),
    "-p": (True, _profile),
    "--help": (False, _help),
    "-h": (False, _help),
}


def parse_exec_args(argv: list[str]) -> ExecRequest:
    request = ExecRequest()
    positionals: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if token == "--":
            positionals.extend(argv[index:])
            break
        if not token.startswith("-") or token == "-":
            positionals.append(token)
            continue
        name, has_inline, inline = token.partition("=") if token.startswith("--") \
            else (token, False, "")
        spec = OPTIONS.get(name)
        if spec is None:
            raise ExecUsageError(f"unknown option {name!r}")
        takes_value, action = spec
        value: str | None = None
        if takes_value:
            if has_inline:
                value = inline
            elif index < len(argv):
                value = argv[index]
                index += 1
            else:
                raise ExecUsageError(f"option {name} needs a value")
        elif has_inline:
            raise ExecUsageError(f"option {name} takes no value")
        action(request, value)
    _assign_positionals(request, positionals)
    return request


def _assign_positionals(request: ExecRequest, positionals: list[str]) -> None:
    if positionals and positionals[0] == "resume":
        rest = positionals[1:]
        if not request.resume_last:
            if not rest:
                raise ExecUsageError("resume needs a THREAD_ID (or --last)")
            request.resume_id, rest = rest[0], rest[1:]
    else:
        if request.resume_last:
            raise ExecUsageError("--last only goes with resume")
        rest = positionals
    if len(rest) > 1:
        raise ExecUsageError(f"unexpected argument {rest[1]!r} (quote the prompt)")
    request.prompt = rest[0] if rest else None


def _read_prompt(prompt: str | None) -> str:
    if prompt is None or prompt == "-":
        if prompt is None and sys.stdin.isatty():
            raise ExecUsageError("no prompt: pass PROMPT or pipe it on stdin")
        from baseagent.fsutil import read_stream

        try:
            prompt = read_stream(sys.stdin.buffer)
        except OSError as exc:
            raise ExecUsageError(f"the prompt on stdin is {exc.strerror}") from None
    if not prompt.strip():
        raise ExecUsageError("the prompt is empty")
    return prompt


def _fail(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: list[str], env: dict[str, str] | None = None) -> int:
    """Run `exec` with these arguments; returns the exit code (never raises on bad input)."""
    env = dict(os.environ) if env is None else env
    try:
        request = parse_exec_args(argv)
    except ExecUsageError as exc:
        return _fail(f"{exc} (see --help)")
    if request.show_help:
        print(HELP, end="")
        return 0
    for notice in request.notices:
        print(f"{PROG}: note: {notice}", file=sys.stderr)

    # Explicit flags beat --config overrides, which beat env and the config file (as Codex).
    flags: dict[str, Any] = {**request.config, **request.flags}
    if env.get("CODEX_API_KEY") and "api_key" not in flags:
        flags["api_key"] = env["CODEX_API_KEY"]  # how the Codex SDK passes its apiKey

    from baseagent.config.load import ConfigError, load_settings

    try:
        settings = load_settings(flags, env=env,
                                 profile=request.profile or request.config_profile)
    except ConfigError as exc:
        return _fail(str(exc))
    settings = exec_defaults(settings)

    from baseagent.records.replay import settings_for_resume
    from baseagent.core.turn_input import image_part, load_schema
    from baseagent.storage import load_thread, open_storage
    from baseagent.errors import InputError

    notes: list[str] = []
    try:
        resume = None
        if request.resuming:
            store = open_storage(settings)
            try:
                resume = load_thread(store, request.resume_id, request.resume_last)
            finally:
                store.close()
        if resume is not None:
            settings, notes = settings_for_resume(settings, resume, set(flags))
        for path in request.images:
            image_part(path)  # checked before anything runs; sent by the run
        schema = load_schema(request.output_schema) if request.output_schema else None
        prompt = _read_prompt(request.prompt)
    except (ConfigError, InputError, ExecUsageError) as exc:
        return _fail(str(exc))

    from baseagent.runner import run

    try:
        return run(settings, prompt, resume=resume, images=request.images,
                   output_schema=schema, notes=notes)
    except (ConfigError, InputError) as exc:
        return _fail(str(exc))
