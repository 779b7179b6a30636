"""Command line: the typer app, its small commands, and the console entry point.

Only typer/click are imported at module level: `--help` and `--version` must stay fast and
never import litellm. Usage errors are one line on stderr and exit code 2, never a traceback.
The commands live by what they do: the main command (one task or the session) in
cli_run.py, the recorded threads' in cli_threads.py, the tool sources' in cli_sources.py,
batch in cli_batch.py; what they share in cli_common.py; the argv rewrite in cli_args.py.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

import typer

from baseagent import cli_batch, cli_sources, cli_threads
from baseagent.cli_common import API_BASE, MODEL, fail_usage, print_version
from baseagent.cli_run import main_command
from baseagent.exit_codes import EXIT_USAGE

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


app.callback(invoke_without_command=True)(main_command)


def _include(module: typer.Typer) -> None:
    """A command module's commands and groups, after the app's own, in the order the module
    declares them (`--help` lists commands, then groups, in the order they were added)."""
    app.registered_commands.extend(module.registered_commands)
    app.registered_groups.extend(module.registered_groups)


@app.command("chat", short_help="Interactive session: baseagent chat -m openai/gpt-4.1",
             help="Interactive session on a terminal (what `baseagent` alone opens): "
                          "each line a turn of one thread; /help inside. Takes the main "
                          "options, e.g. `baseagent chat -m anthropic/claude-sonnet-4-5`.")
def chat_command() -> None:
    """Reached only after the main callback has run the session (see main())."""


@app.command("version", short_help="The version: baseagent version (also -V)",
             help="Print the version and exit (the same as baseagent -V / --version).")
def version_command() -> None:
    print_version(True)


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
        raise fail_usage(f"no completion for {shell!r} (choose from {', '.join(SHELLS)})")
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


# The other modules' commands, in the order `--help` lists them (serve's is here).
_include(cli_threads.commands)  # export, diff, undo; the sessions group


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
    model: Optional[str] = MODEL,
    api_base: Optional[str] = API_BASE,
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


_include(cli_batch.commands)  # batch, batch-report
_include(cli_sources.commands)  # the mcp and toolsets groups


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
