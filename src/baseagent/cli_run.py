"""The main command: one task (JSONL, or the terminal's rendering), or the interactive
session on a terminal; the flags it alone takes (resume, autonomy, -c, images) checked here.

cli.py registers `main_command` as the app's callback; the run itself is runner.py's, the
session interactive/'s.
"""
from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from baseagent.cli_common import (API_BASE, APPEND_SYSTEM_PROMPT, APPROVAL, ATTEMPTS,
                                  ATTEMPTS_PARALLEL, CONFIG, CONTEXT_WINDOW, COST_LIMIT,
                                  DISABLE_TOOLS, FULL_AUTO, IMAGE, MAX_ITERATIONS, MAX_TOKENS,
                                  MODEL, NO_VERIFY, OSS, PROFILE, PROMPT_PROFILE,
                                  REASONING_EFFORT, SANDBOX, SANDBOX_NETWORK, SET,
                                  SYSTEM_PROMPT_FILE, TEMPERATURE, TOOL_CHOICE, TOOLS, YOLO,
                                  fail_usage, print_version, read_instruction, read_json,
                                  read_text, run_flags)

if TYPE_CHECKING:
    from baseagent.config.settings import Settings


def main_command(
    ctx: typer.Context,
    instruction: Optional[str] = typer.Option(
        None, "--instruction", "-i", help="The task (or give it as the first argument: baseagent \"TASK\"). '-' (or omitted with piped stdin) reads stdin."),
    prompt: Optional[str] = typer.Option(None, "--prompt", hidden=True),  # cli_args: the positional task
    model: Optional[str] = MODEL,
    api_base: Optional[str] = API_BASE,
    cwd: Optional[Path] = typer.Option(None, "--cwd", "-C", help="Workspace directory [default: .]"),
    max_iterations: Optional[int] = MAX_ITERATIONS,
    attempts: Optional[int] = ATTEMPTS,
    attempts_parallel: Optional[str] = ATTEMPTS_PARALLEL,
    cost_limit: Optional[float] = COST_LIMIT,
    temperature: Optional[float] = TEMPERATURE,
    max_tokens: Optional[int] = MAX_TOKENS,
    context_window: Optional[int] = CONTEXT_WINDOW,
    sandbox: Optional[str] = SANDBOX,
    reasoning_effort: Optional[str] = REASONING_EFFORT,
    sandbox_network: bool = SANDBOX_NETWORK,
    ask_for_approval: Optional[str] = APPROVAL,
    full_auto: bool = FULL_AUTO,
    yolo: bool = YOLO,
    image: Optional[list[str]] = IMAGE,
    set_config: Optional[list[str]] = SET,
    json_output: bool = typer.Option(False, "--json", help="Force JSONL output even on a terminal."),
    output_last_message: Optional[Path] = typer.Option(None, "--output-last-message", help="Write the final answer to FILE."),
    no_verify: bool = NO_VERIFY,
    no_session: bool = typer.Option(False, "--no-session", help="Do not write a session record."),
    config: Optional[Path] = CONFIG,
    profile: Optional[str] = PROFILE,
    resume: Optional[str] = typer.Option(None, "--resume", metavar="THREAD_ID", help="Continue this thread (see `baseagent sessions`), with its recorded model, API base and workspace unless given."),
    resume_last: bool = typer.Option(False, "--resume-last", help="Continue the most recently updated thread of any workspace (stderr names its workspace when it is not this one)."),
    continue_last: bool = typer.Option(False, "--continue", help="Continue this workspace's most recently updated thread."),
    external_tools: Optional[Path] = typer.Option(None, "--external-tools", metavar="FILE", help="JSON list of tools you run ({name, description, parameters}); a call to one ends the run with exit code 3 and turn.requires_action."),
    tool_outputs: Optional[Path] = typer.Option(None, "--tool-outputs", metavar="FILE", help="With --resume: JSON object {call_id: output} for a paused run's pending calls ('-': stdin); continues that run."),
    event_format: Optional[str] = typer.Option(None, "--event-format", help="codex (default) | agentb: AgentB's event vocabulary, as JSONL."),
    delegate: bool = typer.Option(False, "--delegate", help="Offer the model the delegate tool (sub-agents)."),
    planner: bool = typer.Option(False, "--planner", help="Planning mode: the agent keeps the plan and works only through the [specialists.NAME] of the config."),
    tools: Optional[str] = TOOLS,
    disable_tools: Optional[str] = DISABLE_TOOLS,
    tool_choice: Optional[str] = TOOL_CHOICE,
    system_prompt_file: Optional[Path] = SYSTEM_PROMPT_FILE,
    append_system_prompt: Optional[str] = APPEND_SYSTEM_PROMPT,
    oss: bool = OSS,
    prompt_profile: Optional[str] = PROMPT_PROFILE,
    verbose: bool = typer.Option(False, "--verbose", help="Log every model request and response (redacted, one JSON line each) to stderr; stdout stays JSONL."),
    version: bool = typer.Option(False, "--version", "-V", callback=print_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Run one task, or open an interactive session on a terminal."""
    if ctx.invoked_subcommand == "chat":  # `baseagent [OPTIONS] chat`
        ctx.obj = {**(ctx.obj or {}), "chat": True}
    elif ctx.invoked_subcommand is not None:
        return
    # `baseagent "TASK"` (cli_args.rewrite): on a terminal, the session's first message;
    # elsewhere (a pipe, --json) the one-shot run -i TASK is.
    seeded = prompt is not None and prompt != "-"
    if prompt is not None:
        if instruction is not None:
            raise fail_usage("give the task once: as the argument or with --instruction")
        instruction = prompt
    overrides, config_profile = _config_overrides(set_config or [])
    flags = {
        **run_flags(ctx.params), **_autonomy(full_auto, yolo, sandbox, ask_for_approval),
        "cwd": cwd,
        "json_output": True if json_output else None,
        "output_last_message": output_last_message,
        "record_session": False if no_session else None,
        "event_format": event_format,
        "delegate": True if delegate else None,
        "planner": True if planner else None,
        "verbose": True if verbose else None,
    }
    # -c KEY=VALUE under the flags (as Codex): a flag given wins.
    flags = {**overrides, **{k: v for k, v in flags.items() if v is not None}}
    images = _image_paths(image or [])
    from baseagent.config.load import ConfigError, load_settings, with_person_present

    try:
        settings = load_settings(flags, config_file=config, profile=profile or config_profile)
    except ConfigError as exc:
        raise fail_usage(str(exc)) from None
    loaded, notes = _resumed(settings, flags, resume, resume_last, continue_last)
    if loaded is not None:
        from baseagent.records.replay import settings_for_resume

        here = settings.cwd
        try:
            # The thread's model, API base and workspace, unless a flag says otherwise.
            settings, notes = settings_for_resume(
                settings, loaded, {k for k, v in flags.items() if v is not None})
        except ConfigError as exc:
            raise fail_usage(str(exc)) from None
        if resume_last and settings.cwd != here:
            print(f"baseagent: --resume-last: thread {loaded.thread_id} of workspace "
                  f"{settings.cwd} (not this directory; --continue resumes this one's "
                  f"newest thread)", file=sys.stderr)
    present = _person_present(settings.json_output)
    if present:
        settings = with_person_present(settings)
    if (instruction is None or seeded) and tool_outputs is None \
            and _interactive(ctx, settings.json_output):
        from baseagent.interactive import start

        try:
            code = start(settings, resume=loaded, notes=notes,
                         first=instruction, images=images)
        except ConfigError as exc:
            raise fail_usage(_first_run_hint(str(exc))) from None
        raise typer.Exit(code)

    from baseagent.config.load import ConfigError
    from baseagent.errors import InputError
    from baseagent.runner import run

    outputs = None
    if tool_outputs is not None:
        if loaded is None:
            raise fail_usage("--tool-outputs continues a paused run: give --resume THREAD_ID "
                              "(or --resume-last)")
        if instruction is not None:
            raise fail_usage("--tool-outputs continues the paused turn: it takes no "
                              "--instruction")
        outputs = read_json(tool_outputs, "--tool-outputs", dict, "a JSON object "
                             "{call_id: output}")
        text = None
    else:
        text = read_instruction(instruction)
    tools = []
    if external_tools is not None:
        from baseagent.tools.external import load_external_tools

        try:
            tools = load_external_tools(read_text(external_tools, "--external-tools"),
                                        f"--external-tools {external_tools}")
        except InputError as exc:
            raise fail_usage(str(exc)) from None
    try:
        code = run(settings, text, resume=loaded, notes=notes, external_tools=tools, images=images,
                   tool_outputs=outputs, approver=_terminal_approver() if present else None)
    except (ConfigError, InputError) as exc:
        raise fail_usage(_first_run_hint(str(exc))) from None
    raise typer.Exit(code)


NO_KEY_HINT = ("; no key? --oss runs a local model (Ollama, LM Studio, llama-server), and the "
               "offline demo needs none (docs/getting-started.md)")


def _first_run_hint(message: str) -> str:
    """A missing API key on the main command (a first run, most often) also names the ways
    to go on without one."""
    return message + NO_KEY_HINT if message.startswith("missing API key for ") else message


def _resumed(settings: "Settings", flags: Mapping[str, Any], resume: Optional[str],
             resume_last: bool, continue_last: bool) -> tuple[Any, list[str]]:
    """The thread --resume ID, --resume-last (the newest of any workspace) or --continue
    (the newest of this workspace) names, loaded; (None, []) without those flags."""
    chosen = [name for name, given in (("--resume", resume is not None),
                                       ("--resume-last", resume_last),
                                       ("--continue", continue_last)) if given]
    if len(chosen) > 1:
        raise fail_usage(f"use either {chosen[0]} or {chosen[1]}, not both")
    if not chosen:
        return None, []
    from baseagent.config.load import ConfigError
    from baseagent.storage import load_thread, open_storage

    try:
        store = open_storage(settings)
        try:
            if continue_last:
                from baseagent.sessions import recent_in

                newest = recent_in(store, settings.cwd, 1)
                if not newest:
                    raise fail_usage(
                        f"no thread recorded in {settings.cwd} to continue (`baseagent "
                        f"sessions` lists every workspace's; --resume ID continues one)")
                return load_thread(store, newest[0].thread_id), []
            return load_thread(store, resume, resume_last), []
        finally:
            store.close()
    except ConfigError as exc:
        raise fail_usage(str(exc)) from None


def _autonomy(full_auto: bool, yolo: bool, sandbox: Optional[str],
              approval: Optional[str]) -> dict[str, Optional[str]]:
    """--full-auto and --yolo as the sandbox and approval policy they stand for (Codex's
    meanings); either with --sandbox or -a, or both together, is a usage error."""
    chosen = "--full-auto" if full_auto else \
        "--yolo" if yolo else None
    if full_auto and yolo:
        raise fail_usage("give --full-auto or --yolo, not both")
    if chosen is None:
        return {"sandbox": sandbox, "approval_policy": approval}
    if sandbox is not None or approval is not None:
        other = "--sandbox" if sandbox is not None else "--ask-for-approval"
        raise fail_usage(f"{chosen} sets the sandbox and the approval policy: give it or "
                          f"{other}, not both")
    if full_auto:
        return {"sandbox": "workspace-write", "approval_policy": "on-request"}
    return {"sandbox": "danger-full-access", "approval_policy": "never"}


def _config_overrides(items: list[str]) -> tuple[dict[str, Any], Optional[str]]:
    """-c KEY=VALUE (as exec's -c, and Codex's): the Settings overrides and the profile
    `-c profile=NAME` names; an unknown key is a note on stderr, a malformed item a usage
    error."""
    from baseagent.exec_cli import ExecRequest, ExecUsageError, _config_override, \
        parse_config_value

    request = ExecRequest()
    for item in items:
        key, sep, raw = item.partition("=")
        if key.strip() == "approval_policy" and sep:  # exec ignores it; here it applies
            request.config["approval_policy"] = parse_config_value(raw.strip())
            continue
        try:
            _config_override(item, request)
        except ExecUsageError as exc:
            raise fail_usage(str(exc).replace("--config", "-c")) from None
    for notice in request.notices:
        print(f"baseagent: note: {notice}", file=sys.stderr)
    return request.config, request.config_profile


def _image_paths(values: list[str]) -> list[Path]:
    """--image FILE (repeatable, or FILE,FILE), each checked now (a usage error names a
    file that cannot be sent) rather than after the model is reached."""
    from baseagent.core.turn_input import image_part
    from baseagent.errors import InputError

    paths = [Path(part).expanduser().absolute() for value in values for part in value.split(",") if part]
    for path in paths:
        try:
            image_part(path)
        except InputError as exc:
            raise fail_usage(f"--image: {exc}") from None
    return paths


def _terminal_approver() -> Any:
    from baseagent.interactive.approver import TerminalApprover

    return TerminalApprover()


def _person_present(json_output: bool) -> bool:
    """Someone can answer at this terminal: stdin and stdout are a TTY and the output is
    for reading (not --json). Approvals are asked for there (tools/approval.py)."""
    return sys.stdin.isatty() and sys.stdout.isatty() and not json_output


def _interactive(ctx: typer.Context, json_output: bool) -> bool:
    """No instruction: an interactive session when a person is at a terminal (or asked
    with `chat`); otherwise the one-shot path (stdin, or the usage error) as before."""
    chat = bool((ctx.obj or {}).get("chat"))
    terminal = sys.stdin.isatty() and sys.stdout.isatty()
    if chat and not terminal:
        raise fail_usage("chat needs a terminal; in scripts pass --instruction TEXT or pipe "
                          "the instruction on stdin")
    return terminal and (chat or not json_output)

