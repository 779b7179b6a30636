"""Command line: parse flags, resolve settings, run, map the outcome to an exit code.

Only typer/click are imported at module level: `--help` and `--version` must stay fast and
never import litellm. Usage errors are one line on stderr and exit code 2, never a traceback.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from baseagent import __version__
from baseagent.exit_codes import EXIT_USAGE

if TYPE_CHECKING:
    from baseagent.config.settings import Settings

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    rich_markup_mode=None,
    subcommand_metavar="[TASK | COMMAND [ARGS]...]",
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help=(
        "baseagent: an autonomous coding agent. On a terminal it opens an interactive "
        "session; with an instruction it works until done and streams Codex-compatible "
        "JSONL (or a readable rendering on a terminal).\n\n"
        "\b\n"
        "Usage:\n"
        "  baseagent                               interactive session (on a terminal)\n"
        "  baseagent [OPTIONS] \"TASK\"              on a terminal: the session, TASK its first\n"
        "                                          message; piped or --json: one task, then exit\n"
        "  baseagent -i \"TASK\"                     one task, then exit (anywhere)\n"
        "  baseagent chat [OPTIONS]                the session, explicitly\n"
        "  echo TEXT | baseagent [OPTIONS]         the task from stdin\n"
        "  baseagent --continue                    this workspace's newest thread, continued\n"
        "  baseagent --resume ID -i TEXT           continue a thread (--resume-last: newest)\n"
        "  baseagent sessions [list|show|rm]       the recorded threads\n"
        "  baseagent toolsets [list|split NAME]    the config's named toolsets\n"
        "  baseagent export ID --format atif       trajectories (atif, sharegpt, openai)\n"
        "  baseagent diff | undo [THREAD]          a thread's last turn: its changes, or undo it\n"
        "  baseagent serve [--port N]              HTTP API and web page (docs/SERVE.md)\n"
        "  baseagent exec --json [resume ID] TEXT  Codex `exec` command line (Codex SDK)\n"
        "  baseagent completion bash|zsh|fish      the shell's completion script\n"
        "  baseagent -V | version                  the version\n\n"
        "A first word that names a command (chat, sessions, export, diff, undo, mcp, toolsets, "
        "batch, serve, exec, completion, version) runs that command; send such a word as the task with `baseagent -- WORD` "
        "or -i WORD. --config may also follow a command (baseagent mcp list --config F).\n\n"
        "\b\n"
        "Examples:\n"
        "  cd ~/src/myproject && baseagent -m anthropic/claude-sonnet-4-5\n"
        "  baseagent \"make the failing test pass\" --cost-limit 2\n"
        "  baseagent --full-auto --image screenshot.png \"match this layout\"\n"
        "  baseagent --json -i \"add a CHANGELOG entry\" > run.jsonl\n"
        "  baseagent sessions show 0199a213\n"
        "  baseagent export --all --format sharegpt -o train.jsonl\n\n"
        "API keys come from the provider's usual variable (OPENAI_API_KEY, "
        "ANTHROPIC_API_KEY, GEMINI_API_KEY, ...) or `api_key` in ~/.baseagent/config.toml. "
        "Settings: flags > BASEAGENT_<NAME> variables > the chosen profile (-p NAME: the "
        "file's [profiles.NAME]) > the config file > defaults."
    ),
)

# typer vendors its own click from 0.29 on; find its UsageError through a public class so
# the catch works whichever click typer carries.
_USAGE_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


def _fail_usage(message: str) -> "typer.Exit":
    print(f"baseagent: error: {message}", file=sys.stderr)
    return typer.Exit(EXIT_USAGE)


def _version(value: bool) -> None:
    if value:
        print(f"baseagent {__version__}")
        raise typer.Exit(0)


# The run flags a single run and `batch` share: defined once, used by both commands.
_MODEL = typer.Option(None, "--model", "-m", help="litellm model string [env BASEAGENT_MODEL; default openai/gpt-4.1]")
_API_BASE = typer.Option(None, "--api-base", help="Provider API base URL.")
_MAX_ITERATIONS = typer.Option(None, "--max-iterations", help="Model calls per turn [200].")
_ATTEMPTS = typer.Option(None, "--attempts", metavar="N", help="Independent attempts at the task, each in its own copy of the workspace; the one with the best evidence (tests passed, then the smaller change) is applied [1] (docs/ATTEMPTS.md).")
_ATTEMPTS_PARALLEL = typer.Option(None, "--attempts-parallel", metavar="auto|on|off", help="Run the attempts at once (on) or one after another (off) [auto: one after another on a local server].")
_COST_LIMIT = typer.Option(None, "--cost-limit", help="Stop before spending more than this many USD.")
_TEMPERATURE = typer.Option(None, "--temperature")
_MAX_TOKENS = typer.Option(None, "--max-tokens", help="Max output tokens per model call.")
_CONTEXT_WINDOW = typer.Option(None, "--context-window", help="Override the model's context window (tokens).")
_SANDBOX = typer.Option(None, "--sandbox", help="read-only | workspace-write | danger-full-access. Default: workspace-write when a person is at the terminal (stdin and stdout a TTY, no --json); danger-full-access headless (piped, --json, scripts); read-only under `exec` (as Codex exec).")
_NO_VERIFY = typer.Option(False, "--no-verify", help="Skip the self-verification step.")
_CONFIG = typer.Option(None, "--config", help="TOML config file [default ~/.baseagent/config.toml].")
_PROFILE = typer.Option(None, "--profile", "-p", metavar="NAME", help="Use the config file's [profiles.NAME] table (above the rest of the file, below env and flags) [env BASEAGENT_PROFILE; default: the file's `profile` key].")
_REASONING_EFFORT = typer.Option(None, "--reasoning-effort", help="low | medium | high (also minimal, xhigh): reasoning asked of reasoning models.")
_APPROVAL = typer.Option(
    None, "--ask-for-approval", "-a", metavar="POLICY",
    help="When you are asked before a command runs: untrusted | on-failure | on-request | "
         "never. Default: on-request when a person is at the terminal (with --sandbox "
         "workspace-write); never headless (piped, --json, exec: nobody to ask).")
_FULL_AUTO = typer.Option(False, "--full-auto", help="Work without asking: --sandbox workspace-write with --ask-for-approval on-request (asks only to leave the sandbox).")
_YOLO = typer.Option(False, "--yolo", "--dangerously-bypass-approvals-and-sandbox", help="No sandbox and no approvals (--sandbox danger-full-access, --ask-for-approval never). Only where the machine is disposable.")
_IMAGE = typer.Option(None, "--image", metavar="FILE", help="Attach an image (png, jpeg, gif, webp) to the task, for vision models (repeatable; FILE,FILE too).")
_SET = typer.Option(None, "-c", metavar="KEY=VALUE", help="A setting for this run, as Codex's -c: a settings name (-c model=openai/gpt-4.1, -c sandbox_network=true) or a Codex key (model_reasoning_effort, sandbox_mode, approval_policy, openai_base_url, mcp_servers.NAME.KEY); repeatable; flags win.")
_SANDBOX_NETWORK = typer.Option(False, "--sandbox-network", help="Let commands use the network under workspace-write and read-only (off by default).")
_TOOLS = typer.Option(None, "--tools", metavar="NAME,...", help="Only these built-in tools or groups (read, edit, shell, plan; 'none' for no built-in tool), or [toolsets.NAME] of the config (then the MCP/OpenAPI tools too are only theirs).")
_DISABLE_TOOLS = typer.Option(None, "--disable-tools", metavar="NAME,...", help="Leave out these built-in tools or groups (or [toolsets.NAME]).")
_TOOL_CHOICE = typer.Option(None, "--tool-choice", metavar="auto|required|none|NAME", help="Sent to the provider; required/NAME hold until the model has called a tool.")
_SYSTEM_PROMPT_FILE = typer.Option(None, "--system-prompt-file", help="Replace the system prompt with this file's text.")
_APPEND_SYSTEM_PROMPT = typer.Option(None, "--append-system-prompt", metavar="TEXT|@FILE", help="Add TEXT (or FILE's text) after the system prompt.")
_OSS = typer.Option(False, "--oss", help="Use a local model server: Ollama at http://localhost:11434 unless --api-base names another (LM Studio, llama-server); model openai/<oss_model> [qwen2.5-coder:7b] unless --model.")
_PROMPT_PROFILE = typer.Option(None, "--prompt-profile", metavar="auto|full|compact", help="full: the whole prompt and every tool; compact: short prompt, shell/read_file/write_file, whole-file edits; auto (default): compact for local models.")


def _settings(config: Optional[Path], profile: Optional[str], **flags: object) -> "Settings":
    """Settings from flags > env > the profile > TOML > defaults; a bad value is a usage
    error."""
    from baseagent.config.load import ConfigError, load_settings

    try:
        return load_settings(flags, config_file=config, profile=profile)
    except ConfigError as exc:
        raise _fail_usage(str(exc)) from None


def read_instruction(instruction: Optional[str]) -> str:
    """The flag's text; `-` or no flag with piped stdin reads stdin; otherwise a usage error."""
    if instruction is None or instruction == "-":
        if instruction is None and sys.stdin.isatty():
            raise _fail_usage("no instruction: pass --instruction TEXT or pipe it on stdin")
        text = _read_stdin("the instruction")
    else:
        text = instruction
    if not text.strip():
        raise _fail_usage("the instruction is empty")
    return text


# Run options that the main command and `batch` share, passed to Settings under their names.
_SHARED_RUN_OPTIONS = ("model", "api_base", "max_iterations", "cost_limit", "temperature",
                       "max_tokens", "context_window", "sandbox", "reasoning_effort",
                       "tool_choice", "system_prompt_file", "append_system_prompt",
                       "prompt_profile", "attempts", "attempts_parallel")


def _run_flags(params: Mapping[str, Any]) -> dict[str, Any]:
    """The Settings overrides of the shared run options, from a command's parsed parameters.
    A flag not given is None, so the environment, the config file or the default applies."""
    return {
        **{name: params.get(name) for name in _SHARED_RUN_OPTIONS},
        "sandbox_network": True if params.get("sandbox_network") else None,
        "verify": False if params.get("no_verify") else None,
        "oss": True if params.get("oss") else None,
        "enabled_toolsets": _names(params.get("tools")),
        "disabled_toolsets": _names(params.get("disable_tools")),
    }


def _names(value: Optional[str]) -> Optional[list[str]]:
    """A comma-separated flag value as a list (None when the flag is absent)."""
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


@app.callback(invoke_without_command=True)
def main_command(
    ctx: typer.Context,
    instruction: Optional[str] = typer.Option(
        None, "--instruction", "-i", help="The task (or give it as the first argument: baseagent \"TASK\"). '-' (or omitted with piped stdin) reads stdin."),
    prompt: Optional[str] = typer.Option(None, "--prompt", hidden=True),  # cli_args: the positional task
    model: Optional[str] = _MODEL,
    api_base: Optional[str] = _API_BASE,
    cwd: Optional[Path] = typer.Option(None, "--cwd", "-C", help="Workspace directory [default: .]"),
    max_iterations: Optional[int] = _MAX_ITERATIONS,
    attempts: Optional[int] = _ATTEMPTS,
    attempts_parallel: Optional[str] = _ATTEMPTS_PARALLEL,
    cost_limit: Optional[float] = _COST_LIMIT,
    temperature: Optional[float] = _TEMPERATURE,
    max_tokens: Optional[int] = _MAX_TOKENS,
    context_window: Optional[int] = _CONTEXT_WINDOW,
    sandbox: Optional[str] = _SANDBOX,
    reasoning_effort: Optional[str] = _REASONING_EFFORT,
    sandbox_network: bool = _SANDBOX_NETWORK,
    ask_for_approval: Optional[str] = _APPROVAL,
    full_auto: bool = _FULL_AUTO,
    yolo: bool = _YOLO,
    image: Optional[list[str]] = _IMAGE,
    set_config: Optional[list[str]] = _SET,
    json_output: bool = typer.Option(False, "--json", help="Force JSONL output even on a terminal."),
    output_last_message: Optional[Path] = typer.Option(None, "--output-last-message", help="Write the final answer to FILE."),
    no_verify: bool = _NO_VERIFY,
    no_session: bool = typer.Option(False, "--no-session", help="Do not write a session record."),
    config: Optional[Path] = _CONFIG,
    profile: Optional[str] = _PROFILE,
    resume: Optional[str] = typer.Option(None, "--resume", metavar="THREAD_ID", help="Continue this thread (see `baseagent sessions`), with its recorded model, API base and workspace unless given."),
    resume_last: bool = typer.Option(False, "--resume-last", help="Continue the most recently updated thread of any workspace (stderr names its workspace when it is not this one)."),
    continue_last: bool = typer.Option(False, "--continue", help="Continue this workspace's most recently updated thread."),
    external_tools: Optional[Path] = typer.Option(None, "--external-tools", metavar="FILE", help="JSON list of tools you run ({name, description, parameters}); a call to one ends the run with exit code 3 and turn.requires_action."),
    tool_outputs: Optional[Path] = typer.Option(None, "--tool-outputs", metavar="FILE", help="With --resume: JSON object {call_id: output} for a paused run's pending calls ('-': stdin); continues that run."),
    event_format: Optional[str] = typer.Option(None, "--event-format", help="codex (default) | agentb: AgentB's event vocabulary, as JSONL."),
    delegate: bool = typer.Option(False, "--delegate", help="Offer the model the delegate tool (sub-agents)."),
    planner: bool = typer.Option(False, "--planner", help="Planning mode: the agent keeps the plan and works only through the [specialists.NAME] of the config."),
    tools: Optional[str] = _TOOLS,
    disable_tools: Optional[str] = _DISABLE_TOOLS,
    tool_choice: Optional[str] = _TOOL_CHOICE,
    system_prompt_file: Optional[Path] = _SYSTEM_PROMPT_FILE,
    append_system_prompt: Optional[str] = _APPEND_SYSTEM_PROMPT,
    oss: bool = _OSS,
    prompt_profile: Optional[str] = _PROMPT_PROFILE,
    verbose: bool = typer.Option(False, "--verbose", help="Log every model request and response (redacted, one JSON line each) to stderr; stdout stays JSONL."),
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."),
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
            raise _fail_usage("give the task once: as the argument or with --instruction")
        instruction = prompt
    overrides, config_profile = _config_overrides(set_config or [])
    flags = {
        **_run_flags(ctx.params), **_autonomy(full_auto, yolo, sandbox, ask_for_approval),
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
        raise _fail_usage(str(exc)) from None
    loaded, notes = _resumed(settings, flags, resume, resume_last, continue_last)
    if loaded is not None:
        from baseagent.records.replay import settings_for_resume

        here = settings.cwd
        try:
            # The thread's model, API base and workspace, unless a flag says otherwise.
            settings, notes = settings_for_resume(
                settings, loaded, {k for k, v in flags.items() if v is not None})
        except ConfigError as exc:
            raise _fail_usage(str(exc)) from None
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
            raise _fail_usage(_first_run_hint(str(exc))) from None
        raise typer.Exit(code)

    from baseagent.config.load import ConfigError
    from baseagent.errors import InputError
    from baseagent.runner import run

    outputs = None
    if tool_outputs is not None:
        if loaded is None:
            raise _fail_usage("--tool-outputs continues a paused run: give --resume THREAD_ID "
                              "(or --resume-last)")
        if instruction is not None:
            raise _fail_usage("--tool-outputs continues the paused turn: it takes no "
                              "--instruction")
        outputs = _read_json(tool_outputs, "--tool-outputs", dict, "a JSON object "
                             "{call_id: output}")
        text = None
    else:
        text = read_instruction(instruction)
    tools = []
    if external_tools is not None:
        from baseagent.tools.external import load_external_tools

        try:
            tools = load_external_tools(_read_text(external_tools, "--external-tools"),
                                        f"--external-tools {external_tools}")
        except InputError as exc:
            raise _fail_usage(str(exc)) from None
    try:
        code = run(settings, text, resume=loaded, notes=notes, external_tools=tools, images=images,
                   tool_outputs=outputs, approver=_terminal_approver() if present else None)
    except (ConfigError, InputError) as exc:
        raise _fail_usage(_first_run_hint(str(exc))) from None
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
        raise _fail_usage(f"use either {chosen[0]} or {chosen[1]}, not both")
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
                    raise _fail_usage(
                        f"no thread recorded in {settings.cwd} to continue (`baseagent "
                        f"sessions` lists every workspace's; --resume ID continues one)")
                return load_thread(store, newest[0].thread_id), []
            return load_thread(store, resume, resume_last), []
        finally:
            store.close()
    except ConfigError as exc:
        raise _fail_usage(str(exc)) from None


def _autonomy(full_auto: bool, yolo: bool, sandbox: Optional[str],
              approval: Optional[str]) -> dict[str, Optional[str]]:
    """--full-auto and --yolo as the sandbox and approval policy they stand for (Codex's
    meanings); either with --sandbox or -a, or both together, is a usage error."""
    chosen = "--full-auto" if full_auto else \
        "--yolo" if yolo else None
    if full_auto and yolo:
        raise _fail_usage("give --full-auto or --yolo, not both")
    if chosen is None:
        return {"sandbox": sandbox, "approval_policy": approval}
    if sandbox is not None or approval is not None:
        other = "--sandbox" if sandbox is not None else "--ask-for-approval"
        raise _fail_usage(f"{chosen} sets the sandbox and the approval policy: give it or "
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
            raise _fail_usage(str(exc).replace("--config", "-c")) from None
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
            raise _fail_usage(f"--image: {exc}") from None
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
        raise _fail_usage("chat needs a terminal; in scripts pass --instruction TEXT or pipe "
                          "the instruction on stdin")
    return terminal and (chat or not json_output)


@app.command("chat", short_help="Interactive session: baseagent chat -m openai/gpt-4.1",
             help="Interactive session on a terminal (what `baseagent` alone opens): "
                          "each line a turn of one thread; /help inside. Takes the main "
                          "options, e.g. `baseagent chat -m anthropic/claude-sonnet-4-5`.")
def chat_command() -> None:
    """Reached only after the main callback has run the session (see main())."""


@app.command("version", short_help="The version: baseagent version (also -V)",
             help="Print the version and exit (the same as baseagent -V / --version).")
def version_command() -> None:
    _version(True)


def _read_text(path: Path, flag: str) -> str:
    """A file a flag names ('-': stdin), or a usage error saying why it cannot be read
    (bounded, regular files only: fsutil.read_regular)."""
    from baseagent.fsutil import read_regular

    if str(path) == "-":
        return _read_stdin(flag)
    try:
        return read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise _fail_usage(f"{flag}: cannot read {path}: {reason}") from None


def _read_stdin(what: str) -> str:
    from baseagent.fsutil import read_stream

    try:
        return read_stream(sys.stdin.buffer)
    except OSError as exc:
        raise _fail_usage(f"{what} on stdin is {exc.strerror}") from None


def _read_json(path: Path, flag: str, kind: type, what: str) -> Any:
    import json

    try:
        data = json.loads(_read_text(path, flag))
    except ValueError as exc:
        raise _fail_usage(f"{flag}: {path} is not valid JSON: {exc}") from None
    if not isinstance(data, kind):
        raise _fail_usage(f"{flag}: {path} must hold {what}")
    return data


# -- completion: the shell's completion script ------------------------------------------------

COMPLETE_VAR = "_BASEAGENT_COMPLETE"  # set by the script when the shell asks for completions
SHELLS = ("bash", "zsh", "fish")


def _completion_classes() -> None:
    """Register typer's completion classes (add_completion=False leaves them out)."""
    from typer._completion_classes import completion_init

    completion_init()


@app.command("completion", short_help="Shell completion: eval \"$(baseagent completion bash)\"",
             epilog="Examples: eval \"$(baseagent completion bash)\" in ~/.bashrc; "
                    "baseagent completion zsh > \"${fpath[1]}/_baseagent\"; "
                    "baseagent completion fish > ~/.config/fish/completions/baseagent.fish")
def completion_command(
    shell: str = typer.Argument(..., metavar="bash|zsh|fish", help="The shell to complete in."),
) -> None:
    """Print the completion script of this shell: commands, options and their values."""
    if shell not in SHELLS:
        raise _fail_usage(f"no completion for {shell!r} (choose from {', '.join(SHELLS)})")
    import typer.main

    _completion_classes()
    from typer._click.shell_completion import get_completion_class

    complete = get_completion_class(shell)
    sys.stdout.write(complete(typer.main.get_command(app), {}, "baseagent",
                              COMPLETE_VAR).source())


# -- exec: the Codex `exec` command line (parsed by exec_cli, not click) -----------------------

@app.command(
    "exec", add_help_option=False,
    short_help="Codex exec command line: baseagent exec --json \"fix the test\"",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                      "allow_interspersed_args": False},
    help="Codex-compatible mode for Codex clients: `baseagent exec --json [resume ID] [PROMPT]` "
         "(see `baseagent exec --help`).")
def exec_command(ctx: typer.Context) -> None:
    # Normally main() hands `exec` argv straight to exec_cli; this path is for argv that
    # reaches click (e.g. global options before `exec`).
    from baseagent import exec_cli

    raise typer.Exit(exec_cli.main(list(ctx.args)))


# -- sessions and export -----------------------------------------------------------------------

sessions_app = typer.Typer(
    help="List, show, search and remove recorded threads (resumable), in the store the "
         "settings name ([storage], docs/STORAGE.md). Alone: the list.\n\n"
         "Examples: baseagent sessions list; baseagent sessions show 0199a213; "
         "baseagent sessions search 'flaky test'; baseagent sessions rm --older-than 30; "
         "baseagent sessions migrate",
    invoke_without_command=True)
app.add_typer(sessions_app, name="sessions",
              short_help="Recorded threads: baseagent sessions [list|show ID|search TEXT|rm ID]")

_DIR_HELP = "Session directory of JSONL records [default: session_dir setting, ~/.baseagent/sessions]."
_DB_HELP = "SQLite session database [default: the [storage] setting]."


@sessions_app.callback()
def sessions_default(
    ctx: typer.Context,
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
    db: Optional[Path] = typer.Option(None, "--db", help=_DB_HELP),
) -> None:
    """`baseagent sessions` alone lists the threads (what a person typing it wants)."""
    if ctx.invoked_subcommand is None:
        sessions_list(ctx, directory, db, False, 20)
        print("(baseagent sessions show ID | search TEXT | rm ID | list --json; resume with "
              "baseagent --resume ID)", file=sys.stderr)


def _group_option(ctx: typer.Context, name: str, value: Any) -> Any:
    """An option of the command, else the same of `sessions ... COMMAND`."""
    if value is None and ctx.parent is not None:
        value = ctx.parent.params.get(name)
    return value


def _root_settings(ctx: typer.Context) -> Any:
    from baseagent.config.load import ConfigError, load_settings

    try:
        root = ctx.find_root().params
        return load_settings({}, config_file=root.get("config"), profile=root.get("profile"))
    except ConfigError as exc:
        raise _fail_usage(str(exc)) from None


def _session_dir(ctx: typer.Context, directory: Optional[Path]) -> Path:
    """--dir (of the command or of `sessions --dir D ...`), else the session_dir setting
    (env, the root --config file, defaults)."""
    directory = _group_option(ctx, "directory", directory)
    if directory is not None:
        return directory.expanduser().resolve()
    return _root_settings(ctx).session_dir


def _storage(ctx: typer.Context, directory: Optional[Path], db: Optional[Path]) -> Any:
    """The store a sessions command works on: --db (SQLite), --dir (JSONL), else the
    settings' ([storage], session_dir)."""
    from baseagent.errors import ConfigError
    from baseagent.storage import open_storage
    from baseagent.storage.jsonl import JsonlStorage

    directory = _group_option(ctx, "directory", directory)
    db = _group_option(ctx, "db", db)
    if directory is not None and db is not None:
        raise _fail_usage("give --dir (JSONL records) or --db (a SQLite database), not both")
    try:
        if db is not None:
            from baseagent.storage.sqlite import SqliteStorage

            return SqliteStorage(db.expanduser().resolve())
        if directory is not None:
            return JsonlStorage(directory.expanduser().resolve())
        return open_storage(_root_settings(ctx))
    except ConfigError as exc:
        raise _fail_usage(str(exc)) from None


@sessions_app.command("list")
def sessions_list(
    ctx: typer.Context,
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
    db: Optional[Path] = typer.Option(None, "--db", help=_DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="One JSON summary per line."),
    limit: int = typer.Option(20, "--limit", "-n", min=0, help="Show the newest N threads (0: all)."),
) -> None:
    """The newest threads first (by thread id: UUIDv7 ids are time-ordered), with their
    workspace."""
    from baseagent import sessions

    summaries = sessions.list_sessions(_storage(ctx, directory, db))
    if limit and len(summaries) > limit:
        print(f"(the newest {limit} of {len(summaries)} threads; --limit N or --limit 0 for "
              "more)", file=sys.stderr)
        summaries = summaries[:limit]
    if as_json:
        for summary in summaries:
            print(sessions.summary_json(summary))
    else:
        print(sessions.render_list(summaries), end="")


@sessions_app.command("show")
def sessions_show(
    ctx: typer.Context,
    thread_id: str = typer.Argument(..., help="Thread id (or a unique prefix of it)."),
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
    db: Optional[Path] = typer.Option(None, "--db", help=_DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="The summary as JSON."),
) -> None:
    """One thread: model, turns, usage, instructions and the history a resume continues."""
    from baseagent import sessions
    from baseagent.records.replay import SessionLoadError

    try:
        summary, history = sessions.show(_storage(ctx, directory, db), thread_id)
    except SessionLoadError as exc:
        raise _fail_usage(str(exc)) from None
    print(sessions.summary_json(summary) if as_json else sessions.render_show(summary, history),
          end="\n" if as_json else "")


@sessions_app.command("search")
def sessions_search(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="Words every matching message holds."),
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
    db: Optional[Path] = typer.Option(None, "--db", help=_DB_HELP),
    limit: int = typer.Option(20, "--limit", min=1, max=10_000, help="Show at most N matches."),
    as_json: bool = typer.Option(False, "--json", help="One JSON match per line."),
) -> None:
    """Messages of every thread holding every word of TEXT, newest first. SQLite storage
    searches its full-text index (FTS5); JSONL records are scanned (say so on stderr)."""
    from baseagent import sessions
    from baseagent.records.replay import SessionLoadError

    storage = _storage(ctx, directory, db)
    try:
        hits = storage.search(text, limit)
    except SessionLoadError as exc:
        raise _fail_usage(str(exc)) from None
    print(f"(search: {storage.describe_search()})", file=sys.stderr)
    if as_json:
        for hit in hits:
            print(sessions.hit_json(hit))
    else:
        print(sessions.render_hits(hits), end="")


@sessions_app.command("rm")
def sessions_rm(
    ctx: typer.Context,
    thread_ids: Optional[list[str]] = typer.Argument(None, help="Thread ids to delete."),
    older_than: Optional[float] = typer.Option(None, "--older-than", metavar="DAYS", min=0, help="Delete every record not updated for DAYS days."),
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
    db: Optional[Path] = typer.Option(None, "--db", help=_DB_HELP),
) -> None:
    """Delete records: by id, or prune with --older-than DAYS."""
    from baseagent import sessions
    from baseagent.records.replay import SessionLoadError

    if not thread_ids and older_than is None:
        raise _fail_usage("give thread ids or --older-than DAYS")
    storage = _storage(ctx, directory, db)
    try:
        removed = sessions.remove(storage, thread_ids or [])
    except SessionLoadError as exc:
        raise _fail_usage(str(exc)) from None
    if older_than is not None:
        pruned = sessions.prune(storage, older_than)
        if not pruned:
            print(f"no record older than {older_than:g} days: nothing removed", file=sys.stderr)
        removed += pruned
    for where in removed:
        print(f"removed {where}")


@sessions_app.command("migrate")
def sessions_migrate(
    ctx: typer.Context,
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
    db: Optional[Path] = typer.Option(None, "--db", help="The SQLite database to fill [default: the [storage] path, ~/.baseagent/sessions.db]."),
) -> None:
    """Copy every JSONL record of the session directory into the SQLite database. Safe to
    rerun: threads already there are left as they are; the JSONL files are not touched."""
    from baseagent.errors import ConfigError
    from baseagent.storage.migrate import migrate, render_report
    from baseagent.storage.sqlite import SqliteStorage

    source = _session_dir(ctx, directory)
    db = _group_option(ctx, "db", db)
    target_path = db.expanduser().resolve() if db is not None else _root_settings(ctx).storage.path
    try:
        target = SqliteStorage(target_path)
    except ConfigError as exc:
        raise _fail_usage(str(exc)) from None
    try:
        report = migrate(source, target)
    finally:
        target.close()
    sys.stdout.write(render_report(report, source, target_path))
    raise typer.Exit(1 if report.failed else 0)


mcp_app = typer.Typer(help="MCP servers configured in [mcp_servers.NAME] tables.",
                      no_args_is_help=True)
app.add_typer(mcp_app, name="mcp")


@mcp_app.command("list")
def mcp_list(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="One JSON object per server."),
) -> None:
    """Start each configured server, show its status and tools, stop it (exit 1 if one
    failed to start)."""
    import os

    from baseagent.config.load import ConfigError, load_settings
    from baseagent.mcp import listing

    try:
        root = ctx.find_root().params
        settings = load_settings({}, config_file=root.get("config"), profile=root.get("profile"))
    except ConfigError as exc:
        raise _fail_usage(str(exc)) from None
    reports = listing.list_servers(settings, os.environ)
    sys.stdout.write(listing.render_json(reports) if as_json else listing.render(reports))
    raise typer.Exit(listing.exit_code(reports))


toolsets_app = typer.Typer(
    help="Named toolsets of the config file ([toolsets.NAME]: built-in tools or groups, "
         "[mcp_servers] and [openapi] names, SOURCE:TAG), used by name in --tools and in a "
         "specialist's tools.",
    epilog="Examples: baseagent toolsets list --json; baseagent toolsets split github "
           "-m openai/gpt-4.1",
    no_args_is_help=True)
app.add_typer(toolsets_app, name="toolsets",
              short_help="Named toolsets: baseagent toolsets [list|split NAME]")


def _toolset_settings(ctx: typer.Context, **flags: Any) -> Any:
    """The settings of a toolsets command: the root's run flags (`baseagent -m M toolsets
    split X`), the command's own over them, the root's --config and --profile."""
    from baseagent.config.load import ConfigError, load_settings

    root = ctx.find_root().params
    merged = {**_run_flags(root), "cwd": root.get("cwd"),
              **{k: v for k, v in flags.items() if v is not None}}
    try:
        return load_settings(merged, config_file=root.get("config"), profile=root.get("profile"))
    except ConfigError as exc:
        raise _fail_usage(str(exc)) from None


def _notices(lines: list[str]) -> None:
    for line in lines:
        print(f"baseagent: {line}", file=sys.stderr)


@toolsets_app.command("list", short_help="Each toolset and the tools it resolves to.")
def toolsets_list(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="One JSON object per toolset."),
) -> None:
    """Each toolset: its description, its names and the tools they resolve to (the sources
    it names are started to see; exit 1 if one failed to start)."""
    import os

    from baseagent.compose import toolset_listing
    from baseagent.errors import ConfigError

    settings = _toolset_settings(ctx)
    try:
        listing = toolset_listing.list_toolsets(settings, os.environ)
    except ConfigError as exc:
        raise _fail_usage(str(exc)) from None
    sys.stdout.write(toolset_listing.render_json(listing) if as_json
                     else toolset_listing.render(listing))
    _notices(listing.notices)
    raise typer.Exit(1 if listing.failed else 0)


@toolsets_app.command("split", short_help="The groups the model splits a large toolset into (cached).")
def toolsets_split(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="NAME", help="A [toolsets.NAME] of the config file."),
    model: Optional[str] = _MODEL,
    api_base: Optional[str] = _API_BASE,
    max_tools: Optional[int] = typer.Option(None, "--max-tools", help="toolset_max_tools: split a toolset with more tools than this [30]."),
    as_json: bool = typer.Option(False, "--json", help="The groups as one JSON object."),
) -> None:
    """The groups the orchestrator splits a toolset larger than toolset_max_tools into:
    one model call (the run's model settings), cached under ~/.baseagent/toolsets/ by the
    hash of the tools, so asking again makes no call (exit 1 if the model's split failed)."""
    import os

    from baseagent.compose import toolset_listing
    from baseagent.errors import ConfigError

    settings = _toolset_settings(ctx, model=model, api_base=api_base,
                                 toolset_max_tools=max_tools)
    cache_dir = Path.home() / ".baseagent" / "toolsets"
    try:
        report = toolset_listing.split_toolset(settings, os.environ, name, cache_dir)
    except ConfigError as exc:
        raise _fail_usage(str(exc)) from None
    sys.stdout.write(toolset_listing.render_split_json(report) if as_json
                     else toolset_listing.render_split(report))
    _notices(report.notices)
    raise typer.Exit(1 if report.failed else 0)


@app.command("export", short_help="Trajectories: baseagent export ID --format atif",
             epilog="Examples: baseagent export 0199a213 --format atif; "
                    "baseagent export --all --format sharegpt -o train.jsonl")
def export_command(
    ctx: typer.Context,
    thread_id: Optional[str] = typer.Argument(None, help="Thread id (or a unique prefix)."),
    fmt: str = typer.Option("atif", "--format", "-f", help="atif | sharegpt | openai"),
    export_all: bool = typer.Option(False, "--all", help="Every session in the directory, one JSON document per line."),
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
    db: Optional[Path] = typer.Option(None, "--db", help=_DB_HELP),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to FILE instead of stdout."),
) -> None:
    """Export trajectories: ATIF v1.7, ShareGPT (training) or the raw OpenAI messages."""
    from baseagent.records.replay import SessionLoadError
    from baseagent.export import FORMATS, dumps, export_thread

    if fmt not in FORMATS:
        raise _fail_usage(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    if export_all == (thread_id is not None):
        raise _fail_usage("give a THREAD_ID or --all")
    storage = _storage(ctx, directory, db)
    documents = []
    try:
        keys = [info.thread_id for info in storage.list_threads()][::-1] if export_all \
            else [storage.resolve(thread_id or "")]
        for key in keys:
            documents.append(export_thread(storage, key, fmt))
    except SessionLoadError as exc:
        raise _fail_usage(str(exc)) from None
    # One thread: a readable document (ShareGPT stays one line: it is a training line).
    pretty = not export_all and fmt != "sharegpt"
    text = "".join(dumps(doc, pretty) + "\n" for doc in documents)
    if output is None:
        sys.stdout.write(text)
    else:
        from baseagent.fsutil import atomic_write

        output.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(output, text.encode("utf-8"))


# -- checkpoints: a thread's turns as changes to the workspace (checkpoints/, docs/CHECKPOINTS.md)

_THREAD_ARG = typer.Argument(None, metavar="THREAD", help="Thread id (or a unique prefix) [default: the newest thread with checkpoints in this directory].")


def _checkpoint_dir(ctx: typer.Context, thread_id: Optional[str], directory: Optional[Path]) -> Path:
    from baseagent.checkpoints.command import NoThread, find_thread

    try:
        return find_thread(_session_dir(ctx, directory), Path.cwd(), thread_id)
    except NoThread as exc:
        raise _fail_usage(str(exc)) from None


def _finish(outcome: Any) -> None:
    sys.stdout.write(outcome.out)
    if outcome.err:
        print(f"baseagent: {outcome.err}", file=sys.stderr)
    raise typer.Exit(outcome.code)


@app.command("diff", short_help="What a thread's last turn changed: baseagent diff [THREAD] [--session]",
             epilog="Examples: baseagent diff; baseagent diff --session; baseagent diff 0199a213 > turn.patch")
def diff_command(
    ctx: typer.Context,
    thread_id: Optional[str] = _THREAD_ARG,
    session: bool = typer.Option(False, "--session", help="Every turn of the thread (not undone), not just the last."),
    stat: bool = typer.Option(False, "--stat", help="Only the changed files, no diff."),
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
) -> None:
    """The changes of the thread's last turn that changed the workspace, as a unified diff."""
    from baseagent.checkpoints import command

    _finish(command.diff(_checkpoint_dir(ctx, thread_id, directory), _git_env(), session, stat))


@app.command("undo", short_help="Put the workspace back as it was before a thread's last turn: baseagent undo [THREAD]",
             epilog="Examples: baseagent undo; baseagent undo 0199a213")
def undo_command(
    ctx: typer.Context,
    thread_id: Optional[str] = _THREAD_ARG,
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
) -> None:
    """Undo the thread's last turn that changed the workspace (again: the one before). Refuses,
    changing nothing, when a file that turn changed has changed since it ended."""
    from baseagent.checkpoints import command

    _finish(command.undo(_checkpoint_dir(ctx, thread_id, directory), _git_env()))


def _git_env() -> dict[str, str]:
    """What git needs of this process's environment (PATH), and nothing else."""
    import os

    return {"PATH": os.environ.get("PATH", os.defpath)}


# -- serve: the agent over HTTP and a web page (baseagent/serve/, docs/SERVE.md) ----------------

@app.command("serve", short_help="HTTP API + web page: baseagent serve --port 8765")
def serve_command(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on; an address other than loopback needs --token."),
    port: int = typer.Option(8765, "--port", help="Port (0: any free one)."),
    token: Optional[str] = typer.Option(None, "--token", help="The bearer token [env BASEAGENT_SERVE_TOKEN; default: a random one, printed once]."),
    allow_host: Optional[list[str]] = typer.Option(None, "--allow-host", metavar="NAME", help="Another Host name to accept (behind a proxy)."),
    cwd: Optional[Path] = typer.Option(None, "--cwd", "-C", help="New threads' workspace [default: .]"),
    batch: Optional[Path] = typer.Option(None, "--batch", metavar="DIR", help="Also show this batch's report at /batch (rebuilt on each load)."),
    model: Optional[str] = _MODEL,
    api_base: Optional[str] = _API_BASE,
) -> None:
    """Serve the agent: an HTTP API (SSE events, OpenAPI at /openapi.json) and a web page."""
    from baseagent.serve.command import TOKEN_ENV, ServeOptions, run as run_serve

    root = ctx.find_root().params
    defaults = {"cwd": str((cwd or Path.cwd()).resolve())}
    defaults.update({k: v for k, v in (("model", model), ("api_base", api_base)) if v})
    options = ServeOptions(host=host, port=port, token=token or os.environ.get(TOKEN_ENV) or None,
                           allow_hosts=tuple(allow_host or ()), config_file=root.get("config"),
                           profile=root.get("profile"), defaults=defaults,
                           batch_dir=batch.resolve() if batch else None)
    raise typer.Exit(run_serve(options, dict(os.environ)))


# -- batch: many tasks in isolated workspaces (baseagent/batch/, docs/BATCH.md) ----------------

@app.command("batch")
def batch_command(
    ctx: typer.Context,
    tasks_file: Optional[Path] = typer.Argument(None, metavar="TASKS.jsonl", help="One task per line: {\"instruction\", \"id\", \"workspace\", \"setup\", \"check\", \"model\", \"metadata\"} (or hermes' {\"prompt\"})."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory; rerunning with the same one resumes."),
    workers: int = typer.Option(2, "--workers", "-w", "--num_workers", help="Tasks run at once (one process or Ray actor each)."),
    dataset_file: Optional[Path] = typer.Option(None, "--dataset_file", metavar="TASKS.jsonl", help="hermes' batch_runner name for TASKS.jsonl."),
    run_name: Optional[str] = typer.Option(None, "--run_name", metavar="NAME", help="hermes' batch_runner: --out data/NAME."),
    batch_size: Optional[int] = typer.Option(None, "--batch_size", metavar="N", help="hermes' batch_runner: prompts per batch. Here it only numbers the batches (metadata.batch_num = task index // N in trajectories.jsonl): every task is checkpointed on its own."),
    backend: str = typer.Option("local", "--backend", help="local | ray"),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="Join this Ray cluster [default: start a local one]."),
    task_timeout: Optional[float] = typer.Option(None, "--task-timeout", metavar="S", help="Cancel a task after S seconds (recorded as error)."),
    retries: int = typer.Option(0, "--retries", metavar="K", help="Rerun a task K more times after a worker crash or timeout."),
    json_summary: bool = typer.Option(False, "--json", help="Print the summary as one JSON line on stdout."),
    model: Optional[str] = _MODEL,
    api_base: Optional[str] = _API_BASE,
    max_iterations: Optional[int] = typer.Option(None, "--max-iterations", "--max_turns", help="Model calls per task [200]; --max_turns is hermes' batch_runner name."),
    attempts: Optional[int] = _ATTEMPTS,
    attempts_parallel: Optional[str] = _ATTEMPTS_PARALLEL,
    cost_limit: Optional[float] = _COST_LIMIT,
    temperature: Optional[float] = _TEMPERATURE,
    max_tokens: Optional[int] = _MAX_TOKENS,
    context_window: Optional[int] = _CONTEXT_WINDOW,
    sandbox: Optional[str] = _SANDBOX,
    sandbox_network: bool = _SANDBOX_NETWORK,
    reasoning_effort: Optional[str] = _REASONING_EFFORT,
    tools: Optional[str] = _TOOLS,
    disable_tools: Optional[str] = _DISABLE_TOOLS,
    tool_choice: Optional[str] = _TOOL_CHOICE,
    system_prompt_file: Optional[Path] = _SYSTEM_PROMPT_FILE,
    append_system_prompt: Optional[str] = _APPEND_SYSTEM_PROMPT,
    oss: bool = _OSS,
    prompt_profile: Optional[str] = _PROMPT_PROFILE,
    no_verify: bool = _NO_VERIFY,
    config: Optional[Path] = _CONFIG,
    profile: Optional[str] = _PROFILE,
) -> None:
    """Run every task of TASKS.jsonl in its own workspace copy; results in --out DIR
    (`baseagent batch report DIR`: its HTML report)."""
    # Run flags given before `batch` (`baseagent --model M batch ...`) count too.
    given = {k: v for k, v in ctx.params.items() if v is not None and v is not False}
    params = {**ctx.find_root().params, **given}
    settings = _settings(params.get("config"), params.get("profile"), **_run_flags(params))
    from baseagent.batch import BatchError, BatchOptions
    from baseagent.batch.command import run as run_batch
    from baseagent.errors import BaseAgentError

    try:
        tasks_file, out = _batch_paths(tasks_file, dataset_file, out, run_name)
        options = BatchOptions(tasks_file, out, workers=workers, backend=backend,  # type: ignore[arg-type]
                               ray_address=ray_address, task_timeout=task_timeout, retries=retries,
                               batch_size=batch_size)
        code = run_batch(settings, options, json_summary=json_summary)
    except (BatchError, BaseAgentError) as exc:
        raise _fail_usage(str(exc)) from None
    raise typer.Exit(code)


@app.command("batch-report", hidden=True)
def batch_report_command(
    out_dir: Path = typer.Argument(..., metavar="DIR", help="A batch's --out directory."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="FILE", help="Where to write the report [DIR/report.html]."),
) -> None:
    """`baseagent batch report DIR`: one self-contained HTML file of the batch (docs/BATCH.md)."""
    from baseagent.batch.report import build_report

    if not (out_dir / "results.jsonl").is_file():
        raise _fail_usage(f"{out_dir}: no results.jsonl (not a batch's --out directory?)")
    path = build_report(out_dir, output)
    print(f"baseagent batch: report written to {path}", file=sys.stderr)
    raise typer.Exit(0)


def _batch_paths(tasks_file: Optional[Path], dataset_file: Optional[Path],
                 out: Optional[Path], run_name: Optional[str]) -> tuple[Path, Path]:
    """TASKS.jsonl and --out DIR, from our names or hermes' batch_runner's (--dataset_file,
    --run_name NAME = --out data/NAME, where hermes writes a run)."""
    from baseagent.batch import BatchError

    if tasks_file is not None and dataset_file is not None and tasks_file != dataset_file:
        raise BatchError("give the tasks file once: TASKS.jsonl or --dataset_file")
    tasks = tasks_file or dataset_file
    if tasks is None:
        raise BatchError("no tasks: give TASKS.jsonl (or --dataset_file FILE)")
    if out is not None and run_name is not None:
        raise BatchError("give --out DIR or --run_name NAME (= --out data/NAME), not both")
    if run_name is not None:
        if not run_name.strip() or "/" in run_name or run_name in (".", ".."):
            raise BatchError(f"--run_name {run_name!r}: a plain name, no '/'")
        out = Path("data") / run_name
    if out is None:
        raise BatchError("no output directory: give --out DIR (or --run_name NAME)")
    return tasks, out


def main(argv: list[str] | None = None) -> None:
    """Console entry point: click's multi-line usage errors become one line, exit code 2."""
    args = sys.argv[1:] if argv is None else argv
    try:
        _main(args)
    except KeyboardInterrupt:
        sys.exit(130)


def _main(args: list[str]) -> None:
    if args and args[0] == "exec":
        # The argv of Codex `exec` (fixed by Codex clients) goes to its own parser untouched.
        from baseagent import exec_cli

        sys.exit(exec_cli.main(args[1:]))
    obj = {}
    if args[:2] == ["batch", "report"]:
        # `batch report DIR`: `batch` itself takes TASKS.jsonl, so report is its own command.
        args = ["batch-report", *args[2:]]
    if args and args[0] == "chat":
        # `baseagent chat [OPTIONS]`: the main command's options, session forced.
        args, obj = args[1:], {"chat": True}
    import os

    import typer.main

    from baseagent.cli_args import ArgvError, rewrite

    if os.environ.get(COMPLETE_VAR):  # the completion script asking (click answers, exits)
        _completion_classes()

    command = typer.main.get_command(app)
    try:
        # A positional task; global options after a subcommand (cli_args.py).
        args = rewrite(command, args)
    except ArgvError as exc:
        print(f"baseagent: error: {exc}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    try:
        code = command.main(args=args, standalone_mode=False, prog_name="baseagent", obj=obj)
    except _USAGE_ERROR as exc:
        print(f"baseagent: error: {exc.format_message()} (see --help)", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    except typer.Abort:
        sys.exit(130)
    except typer.Exit as exc:  # raised inside callbacks when standalone_mode=False
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
