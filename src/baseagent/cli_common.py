"""What every command of the command line shares: the usage error, the run flags, reading
a flag's file or stdin, and the settings from the flags.

cli.py and its command modules (cli_run.py, cli_threads.py, cli_sources.py, cli_batch.py)
import these; only typer is imported at module level, so `--help` stays fast.
"""
from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from baseagent import __version__
from baseagent.exit_codes import EXIT_USAGE

if TYPE_CHECKING:
    from baseagent.config.settings import Settings


def fail_usage(message: str) -> "typer.Exit":
    """The usage error: one line on stderr; raise what it returns (exit code 2)."""
    print(f"baseagent: error: {message}", file=sys.stderr)
    return typer.Exit(EXIT_USAGE)


def print_version(value: bool) -> None:
    """-V / --version (an eager callback) and `baseagent version`: print it and exit."""
    if value:
        print(f"baseagent {__version__}")
        raise typer.Exit(0)


# The run flags a single run and `batch` share: defined once, used by both commands.
MODEL = typer.Option(None, "--model", "-m", help="litellm model string [env BASEAGENT_MODEL; default openai/gpt-4.1]")
API_BASE = typer.Option(None, "--api-base", help="Provider API base URL.")
MAX_ITERATIONS = typer.Option(None, "--max-iterations", help="Model calls per turn [200].")
ATTEMPTS = typer.Option(None, "--attempts", metavar="N", help="Independent attempts at the task, each in its own copy of the workspace; the one with the best evidence (tests passed, then the smaller change) is applied [1] (docs/ATTEMPTS.md).")
ATTEMPTS_PARALLEL = typer.Option(None, "--attempts-parallel", metavar="auto|on|off", help="Run the attempts at once (on) or one after another (off) [auto: one after another on a local server].")
COST_LIMIT = typer.Option(None, "--cost-limit", help="Stop before spending more than this many USD.")
TEMPERATURE = typer.Option(None, "--temperature")
MAX_TOKENS = typer.Option(None, "--max-tokens", help="Max output tokens per model call.")
CONTEXT_WINDOW = typer.Option(None, "--context-window", help="Override the model's context window (tokens).")
SANDBOX = typer.Option(None, "--sandbox", help="read-only | workspace-write | danger-full-access. Default: workspace-write when a person is at the terminal (stdin and stdout a TTY, no --json); danger-full-access headless (piped, --json, scripts); read-only under `exec` (as Codex exec).")
NO_VERIFY = typer.Option(False, "--no-verify", help="Skip the self-verification step.")
CONFIG = typer.Option(None, "--config", help="TOML config file [default ~/.baseagent/config.toml].")
PROFILE = typer.Option(None, "--profile", "-p", metavar="NAME", help="Use the config file's [profiles.NAME] table (above the rest of the file, below env and flags) [env BASEAGENT_PROFILE; default: the file's `profile` key].")
REASONING_EFFORT = typer.Option(None, "--reasoning-effort", help="low | medium | high (also minimal, xhigh): reasoning asked of reasoning models.")
APPROVAL = typer.Option(
    None, "--ask-for-approval", "-a", metavar="POLICY",
    help="When you are asked before a command runs: untrusted | on-failure | on-request | "
         "never. Default: on-request when a person is at the terminal (with --sandbox "
         "workspace-write); never headless (piped, --json, exec: nobody to ask).")
FULL_AUTO = typer.Option(False, "--full-auto", help="Work without asking: --sandbox workspace-write with --ask-for-approval on-request (asks only to leave the sandbox).")
YOLO = typer.Option(False, "--yolo", "--dangerously-bypass-approvals-and-sandbox", help="No sandbox and no approvals (--sandbox danger-full-access, --ask-for-approval never). Only where the machine is disposable.")
IMAGE = typer.Option(None, "--image", metavar="FILE", help="Attach an image (png, jpeg, gif, webp) to the task, for vision models (repeatable; FILE,FILE too).")
SET = typer.Option(None, "-c", metavar="KEY=VALUE", help="A setting for this run, as Codex's -c: a settings name (-c model=openai/gpt-4.1, -c sandbox_network=true) or a Codex key (model_reasoning_effort, sandbox_mode, approval_policy, openai_base_url, mcp_servers.NAME.KEY); repeatable; flags win.")
SANDBOX_NETWORK = typer.Option(False, "--sandbox-network", help="Let commands use the network under workspace-write and read-only (off by default).")
TOOLS = typer.Option(None, "--tools", metavar="NAME,...", help="Only these built-in tools or groups (read, edit, shell, plan; 'none' for no built-in tool), or [toolsets.NAME] of the config (then the MCP/OpenAPI tools too are only theirs).")
DISABLE_TOOLS = typer.Option(None, "--disable-tools", metavar="NAME,...", help="Leave out these built-in tools or groups (or [toolsets.NAME]).")
TOOL_CHOICE = typer.Option(None, "--tool-choice", metavar="auto|required|none|NAME", help="Sent to the provider; required/NAME hold until the model has called a tool.")
SYSTEM_PROMPT_FILE = typer.Option(None, "--system-prompt-file", help="Replace the system prompt with this file's text.")
APPEND_SYSTEM_PROMPT = typer.Option(None, "--append-system-prompt", metavar="TEXT|@FILE", help="Add TEXT (or FILE's text) after the system prompt.")
OSS = typer.Option(False, "--oss", help="Use a local model server: Ollama at http://localhost:11434 unless --api-base names another (LM Studio, llama-server); model openai/<oss_model> [qwen2.5-coder:7b] unless --model.")
PROMPT_PROFILE = typer.Option(None, "--prompt-profile", metavar="auto|full|compact", help="full: the whole prompt and every tool; compact: short prompt, shell/read_file/write_file, whole-file edits; auto (default): compact for local models.")


def load_run_settings(config: Optional[Path], profile: Optional[str], **flags: object) -> "Settings":
    """Settings from flags > env > the profile > TOML > defaults; a bad value is a usage
    error."""
    from baseagent.config.load import ConfigError, load_settings

    try:
        return load_settings(flags, config_file=config, profile=profile)
    except ConfigError as exc:
        raise fail_usage(str(exc)) from None


def read_instruction(instruction: Optional[str]) -> str:
    """The flag's text; `-` or no flag with piped stdin reads stdin; otherwise a usage error."""
    if instruction is None or instruction == "-":
        if instruction is None and sys.stdin.isatty():
            raise fail_usage("no instruction: pass --instruction TEXT or pipe it on stdin")
        text = read_stdin("the instruction")
    else:
        text = instruction
    if not text.strip():
        raise fail_usage("the instruction is empty")
    return text


# Run options that the main command and `batch` share, passed to Settings under their names.
SHARED_RUN_OPTIONS = ("model", "api_base", "max_iterations", "cost_limit", "temperature",
                       "max_tokens", "context_window", "sandbox", "reasoning_effort",
                       "tool_choice", "system_prompt_file", "append_system_prompt",
                       "prompt_profile", "attempts", "attempts_parallel")


def run_flags(params: Mapping[str, Any]) -> dict[str, Any]:
    """The Settings overrides of the shared run options, from a command's parsed parameters.
    A flag not given is None, so the environment, the config file or the default applies."""
    return {
        **{name: params.get(name) for name in SHARED_RUN_OPTIONS},
        "sandbox_network": True if params.get("sandbox_network") else None,
        "verify": False if params.get("no_verify") else None,
        "oss": True if params.get("oss") else None,
        "enabled_toolsets": comma_list(params.get("tools")),
        "disabled_toolsets": comma_list(params.get("disable_tools")),
    }


def comma_list(value: Optional[str]) -> Optional[list[str]]:
    """A comma-separated flag value as a list (None when the flag is absent)."""
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]



def read_text(path: Path, flag: str) -> str:
    """A file a flag names ('-': stdin), or a usage error saying why it cannot be read
    (bounded, regular files only: fsutil.read_regular)."""
    from baseagent.fsutil import read_regular

    if str(path) == "-":
        return read_stdin(flag)
    try:
        return read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise fail_usage(f"{flag}: cannot read {path}: {reason}") from None


def read_stdin(what: str) -> str:
    from baseagent.fsutil import read_stream

    try:
        return read_stream(sys.stdin.buffer)
    except OSError as exc:
        raise fail_usage(f"{what} on stdin is {exc.strerror}") from None


def read_json(path: Path, flag: str, kind: type, what: str) -> Any:
    import json

    try:
        data = json.loads(read_text(path, flag))
    except ValueError as exc:
        raise fail_usage(f"{flag}: {path} is not valid JSON: {exc}") from None
    if not isinstance(data, kind):
        raise fail_usage(f"{flag}: {path} must hold {what}")
    return data

