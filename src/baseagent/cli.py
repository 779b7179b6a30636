"""Command line: parse flags, resolve settings, run, map the outcome to an exit code.

Only typer/click are imported at module level: `--help` and `--version` must stay fast and
never import litellm. Usage errors are one line on stderr and exit code 2, never a traceback.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from baseagent import __version__
from baseagent.exit_codes import EXIT_USAGE

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="baseagent: an autonomous coding agent that streams Codex-compatible JSONL.",
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


def read_instruction(instruction: Optional[str]) -> str:
    """The flag's text; `-` or no flag with piped stdin reads stdin; otherwise a usage error."""
    if instruction is None or instruction == "-":
        if instruction is None and sys.stdin.isatty():
            raise _fail_usage("no instruction: pass --instruction TEXT or pipe it on stdin")
        text = sys.stdin.read()
    else:
        text = instruction
    if not text.strip():
        raise _fail_usage("the instruction is empty")
    return text


def _names(value: Optional[str]) -> Optional[list[str]]:
    """A comma-separated flag value as a list (None when the flag is absent)."""
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


@app.callback(invoke_without_command=True)
def main_command(
    ctx: typer.Context,
    instruction: Optional[str] = typer.Option(
        None, "--instruction", "-i", help="The task. '-' (or omitted with piped stdin) reads stdin."),
    model: Optional[str] = typer.Option(
        None, "--model", "-m", help="litellm model string [env BASEAGENT_MODEL; default openai/gpt-4.1]"),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="Provider API base URL."),
    cwd: Optional[Path] = typer.Option(None, "--cwd", "-C", help="Workspace directory [default: .]"),
    max_iterations: Optional[int] = typer.Option(None, "--max-iterations", help="Model calls per turn [200]."),
    cost_limit: Optional[float] = typer.Option(None, "--cost-limit", help="Stop before spending more than this many USD."),
    temperature: Optional[float] = typer.Option(None, "--temperature"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help="Max output tokens per model call."),
    context_window: Optional[int] = typer.Option(None, "--context-window", help="Override the model's context window (tokens)."),
    sandbox: Optional[str] = typer.Option(None, "--sandbox", help="danger-full-access (default) | workspace-write | read-only"),
    json_output: bool = typer.Option(False, "--json", help="Force JSONL output even on a terminal."),
    output_last_message: Optional[Path] = typer.Option(None, "--output-last-message", help="Write the final answer to FILE."),
    no_verify: bool = typer.Option(False, "--no-verify", help="Skip the self-verification step."),
    no_session: bool = typer.Option(False, "--no-session", help="Do not write a session record."),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML config file [default ~/.baseagent/config.toml]."),
    resume: Optional[str] = typer.Option(None, "--resume", metavar="THREAD_ID", help="Continue this thread (see `baseagent sessions list`)."),
    resume_last: bool = typer.Option(False, "--resume-last", help="Continue the most recently updated thread."),
    tools: Optional[str] = typer.Option(None, "--tools", metavar="NAME,...", help="Only these built-in tools or groups (read, edit, shell; 'none' for no built-in tool)."),
    disable_tools: Optional[str] = typer.Option(None, "--disable-tools", metavar="NAME,...", help="Leave out these built-in tools or groups."),
    tool_choice: Optional[str] = typer.Option(None, "--tool-choice", metavar="auto|required|none|NAME", help="Sent to the provider; required/NAME hold until the model has called a tool."),
    system_prompt_file: Optional[Path] = typer.Option(None, "--system-prompt-file", help="Replace the system prompt with this file's text."),
    append_system_prompt: Optional[str] = typer.Option(None, "--append-system-prompt", metavar="TEXT|@FILE", help="Add TEXT (or FILE's text) after the system prompt."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Run one task: `baseagent --instruction "fix the failing test"`."""
    if ctx.invoked_subcommand is not None:
        return
    flags = {
        "model": model, "api_base": api_base, "cwd": cwd, "max_iterations": max_iterations,
        "cost_limit": cost_limit, "temperature": temperature, "max_tokens": max_tokens,
        "context_window": context_window, "sandbox": sandbox,
        "json_output": True if json_output else None,
        "output_last_message": output_last_message,
        "verify": False if no_verify else None,
        "record_session": False if no_session else None,
        "enabled_toolsets": _names(tools), "disabled_toolsets": _names(disable_tools),
        "tool_choice": tool_choice, "system_prompt_file": system_prompt_file,
        "append_system_prompt": append_system_prompt,
    }
    from baseagent.config.load import ConfigError, load_settings

    try:
        settings = load_settings(flags, config_file=config)
    except ConfigError as exc:
        raise _fail_usage(str(exc)) from None
    if resume is not None and resume_last:
        raise _fail_usage("use either --resume THREAD_ID or --resume-last, not both")
    loaded = None
    if resume is not None or resume_last:
        from baseagent.core.records import SessionLoadError, resolve

        try:
            loaded = resolve(settings.session_dir, resume, resume_last)
        except SessionLoadError as exc:
            raise _fail_usage(str(exc)) from None
    text = read_instruction(instruction)

    from baseagent.errors import InputError
    from baseagent.runner import run

    try:
        code = run(settings, text, resume=loaded)
    except (ConfigError, InputError) as exc:
        raise _fail_usage(str(exc)) from None
    raise typer.Exit(code)


# -- exec: the Codex `exec` command line (parsed by exec_cli, not click) -----------------------

@app.command(
    "exec", add_help_option=False,
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

sessions_app = typer.Typer(help="List, show and remove session records (resumable threads).",
                           no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")

_DIR_HELP = "Session directory [default: session_dir setting, ~/.baseagent/sessions]."


def _session_dir(ctx: typer.Context, directory: Optional[Path]) -> Path:
    """--dir, else the session_dir setting (env, the root --config file, defaults)."""
    if directory is not None:
        return directory.expanduser().resolve()
    from baseagent.config.load import ConfigError, load_settings

    try:
        return load_settings({}, config_file=ctx.find_root().params.get("config")).session_dir
    except ConfigError as exc:
        raise _fail_usage(str(exc)) from None


@sessions_app.command("list")
def sessions_list(
    ctx: typer.Context,
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
    as_json: bool = typer.Option(False, "--json", help="One JSON summary per line."),
) -> None:
    """Every thread, most recently updated first."""
    from baseagent import sessions

    summaries = sessions.list_sessions(_session_dir(ctx, directory))
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
    as_json: bool = typer.Option(False, "--json", help="The summary as JSON."),
) -> None:
    """One thread: model, turns, usage, instructions and the history a resume continues."""
    from baseagent import sessions
    from baseagent.core.records import SessionLoadError

    try:
        summary, history = sessions.show(_session_dir(ctx, directory), thread_id)
    except SessionLoadError as exc:
        raise _fail_usage(str(exc)) from None
    print(sessions.summary_json(summary) if as_json else sessions.render_show(summary, history),
          end="\n" if as_json else "")


@sessions_app.command("rm")
def sessions_rm(
    ctx: typer.Context,
    thread_ids: Optional[list[str]] = typer.Argument(None, help="Thread ids to delete."),
    older_than: Optional[float] = typer.Option(None, "--older-than", metavar="DAYS", min=0, help="Delete every record not updated for DAYS days."),
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
) -> None:
    """Delete records: by id, or prune with --older-than DAYS."""
    from baseagent import sessions
    from baseagent.core.records import SessionLoadError

    if not thread_ids and older_than is None:
        raise _fail_usage("give thread ids or --older-than DAYS")
    session_dir = _session_dir(ctx, directory)
    try:
        removed = sessions.remove(session_dir, thread_ids or [])
    except SessionLoadError as exc:
        raise _fail_usage(str(exc)) from None
    if older_than is not None:
        removed += sessions.prune(session_dir, older_than)
    for path in removed:
        print(f"removed {path}")


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
        settings = load_settings({}, config_file=ctx.find_root().params.get("config"))
    except ConfigError as exc:
        raise _fail_usage(str(exc)) from None
    reports = listing.list_servers(settings, os.environ)
    sys.stdout.write(listing.render_json(reports) if as_json else listing.render(reports))
    raise typer.Exit(listing.exit_code(reports))


@app.command("export")
def export_command(
    ctx: typer.Context,
    thread_id: Optional[str] = typer.Argument(None, help="Thread id (or a unique prefix)."),
    fmt: str = typer.Option("atif", "--format", "-f", help="atif | sharegpt | openai"),
    export_all: bool = typer.Option(False, "--all", help="Every session in the directory, one JSON document per line."),
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to FILE instead of stdout."),
) -> None:
    """Export trajectories: ATIF v1.7, ShareGPT (training) or the raw OpenAI messages."""
    from baseagent.core.records import SessionLoadError, find_session, session_files
    from baseagent.export import FORMATS, dumps, export_record

    if fmt not in FORMATS:
        raise _fail_usage(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    if export_all == (thread_id is not None):
        raise _fail_usage("give a THREAD_ID or --all")
    session_dir = _session_dir(ctx, directory)
    documents = []
    try:
        paths = session_files(session_dir)[::-1] if export_all \
            else [find_session(session_dir, thread_id or "")]
        for path in paths:
            documents.append(export_record(path, fmt))
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


def main(argv: list[str] | None = None) -> None:
    """Console entry point: click's multi-line usage errors become one line, exit code 2."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "exec":
        # The argv of Codex `exec` (fixed by Codex clients) goes to its own parser untouched.
        from baseagent import exec_cli

        sys.exit(exec_cli.main(args[1:]))
    try:
        code = app(args=argv, standalone_mode=False, prog_name="baseagent")
    except _USAGE_ERROR as exc:
        print(f"baseagent: error: {exc.format_message()} (see --help)", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    except typer.Abort:
        sys.exit(130)
    except typer.Exit as exc:  # raised inside callbacks when standalone_mode=False
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
