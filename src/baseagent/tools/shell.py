"""Run a shell command for the model, with a timeout, bounded output and no leaked secrets.

Every command gets its own process group so that a timeout or an interrupt takes down
everything it started (pipelines, background jobs), not just the bash at the top.
"""
from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from baseagent.sandbox.policy import Policy
from baseagent.tools.approval import Verdict, auto_approved, declined_text
from baseagent.tools.confined import git_override_env
from baseagent.tools.tool import ModelTool, ToolError, ToolResult
from baseagent.tools.procs import SUPERVISOR_WAIT_SECONDS, live_in_group, signal_all
from baseagent.tools.output_buffer import (
    HeadTailBuffer,
    clean_terminal_text,
    join_truncated,
    omission_marker,
    truncate_middle,
)

if TYPE_CHECKING:  # tools/context.py runs this tool (ToolContext.shell)
    from baseagent.tools.context import ToolContext

NAME = "shell"
ITEM_TYPE = "command_execution"
DESCRIPTION = (
    "Run a command with `bash -c` and return its exit code, wall time and combined "
    "stdout/stderr. Stdin is closed, so interactive prompts get end-of-file: pass flags such "
    "as `-y` or `--no-pager` instead. Each call starts a fresh shell (no state such as `cd` "
    "or exported variables carries over); use `workdir` to choose the directory. Long output "
    "is cut in the middle, so filter it (grep, head, tail) when you only need part of it. "
    "Commands are killed after `timeout_ms`."
)


class Args(BaseModel):
    command: str = Field(..., min_length=1, description="The command to run with `bash -c`.")
    workdir: str | None = Field(
        None,
        description="Directory to run in (absolute or relative to the workspace). "
        "Defaults to the workspace.",
    )
    timeout_ms: int | None = Field(
        None, ge=1, description="Kill the command after this many milliseconds."
    )


class EscalatableArgs(Args):
    """The shell's arguments when the model may ask to leave the sandbox (approval policy
    on-request, tools/approval.py): Codex's two fields for it."""

    with_escalated_permissions: bool | None = Field(
        None, description="Run outside the sandbox (network, writes outside the "
        "workspace). The user is asked first; give `justification`.")
    justification: str | None = Field(
        None, description="With with_escalated_permissions: one sentence the user reads, "
        "saying why the command needs it.")


# What the model sees of the output: ~10k characters keeps a failing build's head and its
# final errors while costing only a few thousand tokens per call.
MODEL_OUTPUT_MAX_CHARS = 10_000
# The lines around the output in a result (exit code, wall time, a timeout's note).
FRAMING_CHARS = 160
# Bytes per read: one pipe buffer's worth, so a busy writer is drained in a single call.
READ_CHUNK = 64 * 1024
# How often the loop wakes to check the deadline and the interrupt flag.
POLL_SECONDS = 0.05
# Minimum gap between progress callbacks: fast enough to feel live, rare enough to be cheap.
PROGRESS_INTERVAL_SECONDS = 0.25
# A progress event shows only the newest output (the completed item has all that is kept):
# a command printing continuously then costs at most ~16 KB/s of events, not megabytes.
PROGRESS_TAIL_BYTES = 4096
# After bash exits, output still arriving from its children is collected for this long; if
# a background job keeps the pipe open past it, the group is killed rather than waited on.
DRAIN_SECONDS = 0.3
# Between SIGTERM and SIGKILL: time for well-behaved programs to clean up.
KILL_GRACE_SECONDS = 0.5
# Conventional exit codes: 124 like coreutils `timeout`, 130 like a shell on Ctrl-C.
TIMEOUT_EXIT_CODE = 124
INTERRUPTED_EXIT_CODE = 130
# A command that runs git (the word anywhere: `cd x && git status`).
_GIT = re.compile(r"\bgit\b")


def run(args: Args, ctx: ToolContext) -> ToolResult:
    """Run the command; a non-zero exit is a normal result with ``success=False``. With the
    run's approvals (tools/approval.py), a command may first wait for a person's answer,
    run outside the sandbox once approved, or be declined."""
    workdir = _resolve_workdir(args.workdir, ctx)
    approvals = ctx.approvals
    if approvals is None:
        return _run(args, ctx, workdir, ctx.policy())
    policy = ctx.policy()
    escalate = bool(getattr(args, "with_escalated_permissions", False))
    verdict = approvals.before(args.command, str(workdir), confined=policy.restricted,
                               escalate=escalate,
                               justification=getattr(args, "justification", None) or "")
    if not verdict.run:
        return _declined(args.command, verdict)
    # Approved by nobody (known safe under `untrusted`): its git runs none of the
    # repository's programs (a config the model wrote earlier could name one).
    env = git_override_env(ctx.env, cwd=workdir) \
        if _GIT.search(args.command) and auto_approved(approvals, args.command) else None
    result = _run(args, ctx, workdir, _unconfined(ctx) if verdict.unconfined else policy,
                  env)
    if verdict.note:
        result.output += f"\n{verdict.note}"
    if policy.restricted and not verdict.unconfined:
        retry = approvals.retry_unconfined(args.command, str(workdir),
                                           output=result.item.get("aggregated_output", ""),
                                           exit_code=result.item.get("exit_code"))
        if retry is not None:
            if not retry.run:
                result.output += ("\nThe user declined to run it outside the sandbox"
                                  + (f": {retry.note}" if retry.note else "."))
                return result
            return _run(args, ctx, workdir, _unconfined(ctx))
    return result


def _declined(command: str, verdict: Verdict) -> ToolResult:
    """A command the person said no to: it never ran, and the model is told why."""
    return ToolResult(
        output=declined_text(verdict.note), success=False,
        item={"command": command, "aggregated_output": "", "exit_code": None,
              "status": "declined"})


def _unconfined(ctx: ToolContext) -> Policy:
    """The policy of an approved command outside the sandbox: the person's yes stands in
    for the kernel's limits, for this one command."""
    return Policy.build("danger-full-access", ctx.cwd)


def _run(args: Args, ctx: ToolContext, workdir: Path, policy: Policy,
         env: dict[str, str] | None = None) -> ToolResult:
    timeout_ms = args.timeout_ms if args.timeout_ms is not None else ctx.shell_timeout_ms
    started = time.monotonic()
    # Under the run's supervisor (tools/procs.py): everything the command starts can be
    # ended, and dies with a killed agent; in a sandbox mode it runs confined by the run's
    # policy (sandbox/policy.py). The agent itself stays unrestricted.
    try:
        proc, launch = ctx.processes.start(
            ["bash", "-c", args.command], policy, cwd=workdir,
            env=ctx.env if env is None else env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            bufsize=0)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the command
        raise ToolError(f"failed to start command: {exc}") from exc
    command = _Command(proc, launch.status_fd)

    buffer = HeadTailBuffer()
    try:
        outcome = _pump(command, buffer, ctx, started + timeout_ms / 1000)
    except BaseException:
        # A failing progress callback or a KeyboardInterrupt must not leave the command (or
        # anything it started) running unsupervised.
        _kill(command)
        raise
    finally:
        command.close()
    wall = time.monotonic() - started

    if outcome == "timeout":
        exit_code = TIMEOUT_EXIT_CODE
        note = f"command timed out after {timeout_ms} milliseconds"
    elif outcome == "cancelled":
        exit_code = INTERRUPTED_EXIT_CODE
        note = "command interrupted"
    else:
        exit_code = _exit_code(command.returncode)
        note = ""
    # A cap set for the run holds for the whole result: the exit code, wall time and note
    # lines are taken out of it.
    cap = MODEL_OUTPUT_MAX_CHARS if ctx.output_max_chars is None \
        else max(ctx.output_max_chars - FRAMING_CHARS, FRAMING_CHARS)
    aggregated, model_output = _render(buffer, note, cap)
    return ToolResult(
        output=f"Exit code: {exit_code}\nWall time: {wall:.1f} seconds\nOutput:\n{model_output}",
        success=exit_code == 0,
        item={"command": args.command, "aggregated_output": aggregated, "exit_code": exit_code},
    )


def _resolve_workdir(workdir: str | None, ctx: ToolContext) -> Path:
    path = ctx.resolve(workdir) if workdir else ctx.cwd
    if not path.exists():
        raise ToolError(f"workdir does not exist: {path}")
    if not path.is_dir():
        raise ToolError(f"workdir is not a directory: {path}")
    return path


class _Command:
    """A started command: bash, directly or under the supervisor, whose report of bash's
    exit status arrives on `status_fd` (the supervisor itself lives on while background
    jobs of the command do)."""

    def __init__(self, proc: subprocess.Popen[bytes], status_fd: int | None) -> None:
        self.proc = proc
        self.status_fd = status_fd
        self.supervised = status_fd is not None
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """bash's return code (negative: killed by that signal) once it has exited."""
        if self.returncode is not None:
            return self.returncode
        if self.status_fd is None:
            self.returncode = self.proc.poll()
            return self.returncode
        supervisor_done = self.proc.poll() is not None
        try:
            data = os.read(self.status_fd, 64)
        except BlockingIOError:
            data = None
        if data:
            self.returncode = os.waitstatus_to_exitcode(int(data.split()[0]))
        elif supervisor_done or data == b"":
            # The supervisor ended without a report (it was killed): its own status stands.
            self.returncode = self.proc.wait()
        return self.returncode

    def wait_briefly(self, seconds: float) -> None:
        if self.status_fd is None:
            try:
                self.proc.wait(seconds)
            except subprocess.TimeoutExpired:
                pass
        else:
            selectors_wait(self.status_fd, seconds)

    def close(self) -> None:
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if self.status_fd is not None:
            os.close(self.status_fd)
            self.status_fd = None


def selectors_wait(fd: int, seconds: float) -> None:
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        selector.select(seconds)


def _pump(command: _Command, buffer: HeadTailBuffer, ctx: ToolContext,
          deadline: float) -> str:
    """Move output into ``buffer`` until the command is done; return how it ended.

    Returns "exited", "timeout" or "cancelled". Everything it started is already killed for
    the last two.
    """
    proc = command.proc
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    eof = False
    exited_at: float | None = None
    last_progress = 0.0
    reported_total = 0
    try:
        while True:
            if not eof:
                if selector.select(POLL_SECONDS):
                    eof = _read_available(fd, buffer)
            else:
                # Output closed but the process lives on (e.g. `exec >&-`): just wait.
                command.wait_briefly(POLL_SECONDS)
            now = time.monotonic()
            if exited_at is None and command.poll() is not None:
                exited_at = now
            if exited_at is not None:
                if eof:
                    return "exited"
                if now - exited_at >= DRAIN_SECONDS:
                    # A background child holds the pipe: its output is not waited for.
                    _kill(command)
                    _drain_briefly(selector, fd, buffer)
                    return "exited"
            elif now >= deadline:
                _kill(command)
                _drain_briefly(selector, fd, buffer)
                return "timeout"
            elif ctx.cancelled():
                _kill(command)
                _drain_briefly(selector, fd, buffer)
                return "cancelled"
            if buffer.total != reported_total and now - last_progress >= PROGRESS_INTERVAL_SECONDS:
                ctx.progress({"aggregated_output": _progress_text(buffer)})
                last_progress = now
                reported_total = buffer.total
    finally:
        selector.close()


def _read_available(fd: int, buffer: HeadTailBuffer) -> bool:
    """Read what is ready; True at end of file."""
    try:
        chunk = os.read(fd, READ_CHUNK)
    except BlockingIOError:
        return False
    if not chunk:
        return True
    buffer.write(chunk)
    return False


def _drain_briefly(selector: selectors.BaseSelector, fd: int, buffer: HeadTailBuffer) -> None:
    """Collect output already written before a kill, without waiting on stragglers."""
    end = time.monotonic() + 0.1
    while time.monotonic() < end:
        if not selector.select(0.02):
            continue
        if _read_available(fd, buffer):
            return


def _kill(command: _Command) -> None:
    """End the command and everything it started: under the supervisor, its whole subtree
    (setsid and double forks included); otherwise its process group. SIGTERM first, SIGKILL
    after the grace period."""
    proc = command.proc
    if not command.supervised:
        _kill_group(proc)
        command.poll()
        return
    pgid = proc.pid
    signal_all([proc.pid], signal.SIGCONT)  # a supervisor the command stopped
    signal_all([proc.pid], signal.SIGTERM)  # the supervisor: TERM, then KILL, its subtree
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(KILL_GRACE_SECONDS + SUPERVISOR_WAIT_SECONDS)
    except subprocess.TimeoutExpired:
        signal_all([proc.pid], signal.SIGUSR2)  # kill the subtree now
        try:
            proc.wait(SUPERVISOR_WAIT_SECONDS)
        except subprocess.TimeoutExpired:  # pragma: no cover - a wedged supervisor
            proc.kill()
            proc.wait(1)
    try:
        os.killpg(pgid, signal.SIGKILL)  # anything of the group the supervisor missed
    except (ProcessLookupError, PermissionError):
        pass
    command.poll()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the command's whole process group, then SIGKILL whatever is left."""
    pgid = proc.pid  # start_new_session made bash the leader of its own group
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        proc.poll()
        return
    end = time.monotonic() + KILL_GRACE_SECONDS
    while time.monotonic() < end:
        proc.poll()  # reap bash so its zombie does not count as alive
        if not _group_alive(pgid):
            return
        time.sleep(0.02)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(1)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
        pass


def _group_alive(pgid: int) -> bool:
    """True while a live (non-zombie) process remains in the group.

    ``killpg(pgid, 0)`` alone also succeeds for zombies, and orphans whose new parent never
    reaps them (a container's init) would make every kill wait out the full grace period.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return bool(live_in_group(pgid))


def _exit_code(returncode: int | None) -> int:
    """Shell convention: death by signal N reads as 128 + N."""
    if returncode is None:
        return -1
    return 128 - returncode if returncode < 0 else returncode


def _render(buffer: HeadTailBuffer, note: str,
            max_chars: int = MODEL_OUTPUT_MAX_CHARS) -> tuple[str, str]:
    """(bounded text for the event item, middle-truncated text for the model: at most
    `max_chars`, the run's cap for the shell's output)."""
    head, tail = buffer.texts()
    head, tail = clean_terminal_text(head), clean_terminal_text(tail)
    aggregated = head + (omission_marker(buffer.dropped, "bytes") if buffer.dropped else "") + tail
    if buffer.dropped:
        model = join_truncated(head, tail, max_chars, buffer.dropped)
    else:
        model = truncate_middle(head + tail, max_chars)
    if note:
        aggregated = _append_line(aggregated, note)
        model = _append_line(model, note)
    return aggregated, model


def _progress_text(buffer: HeadTailBuffer) -> str:
    """The newest output for a live view, saying how much came before it."""
    text, earlier = buffer.last_text(PROGRESS_TAIL_BYTES)
    text = clean_terminal_text(text)
    return f"[... {earlier} earlier bytes ...]\n{text}" if earlier else text


def _append_line(text: str, line: str) -> str:
    if text and not text.endswith("\n"):
        text += "\n"
    return text + line


# The tool as the registry sees it (tools/tool.py).
TOOL = ModelTool(name=NAME, description=DESCRIPTION, args_model=Args, runner=run,
                 item_type=ITEM_TYPE)
# The same tool where the model may ask to run a command outside the sandbox.
ESCALATABLE_TOOL = ModelTool(name=NAME, description=DESCRIPTION + (
    " Commands run in a sandbox; if one needs the network or writes outside the workspace, "
    "set `with_escalated_permissions` with a `justification`, and the user is asked."),
    args_model=EscalatableArgs, runner=run, item_type=ITEM_TYPE)
