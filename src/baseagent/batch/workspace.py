"""Each task's own workspace, and the shell commands (`setup`, `check`) run in it.

A task never runs in its template: every attempt starts from a fresh copy under
`DIR/work/<key>/` (an empty directory when the task names no workspace), so tasks cannot
see each other and a retried or resumed task starts clean. Commands run with `bash -c` in
their own session, with the agent's child environment (secrets stripped), and stop when the
task is cancelled: the whole session is killed, so nothing they started outlives the task.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Mapping

from baseagent.tools.procs import live_in_session

# What a check's output keeps for results.jsonl: its end, where test runners put the verdict.
OUTPUT_KEEP_CHARS = 8_000
POLL_SECONDS = 0.05
KILL_GRACE_SECONDS = 0.5


def fresh_workspace(target: Path, template: Path | None) -> Path:
    """Replace `target` with a copy of `template` (or an empty directory); returns it.

    Whatever an earlier attempt left there (a killed batch, a retry) is removed first.
    Symlinks are copied as links, so a template cannot make the copy reach outside by
    being followed, and the copy keeps modes and times.
    """
    if target.exists() or target.is_symlink():
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    if template is None:
        target.mkdir()
    else:
        shutil.copytree(template, target, symlinks=True)
    return target


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None  # None: killed (cancelled or timed out)
    output: str


def run_command(command: str, cwd: Path, env: Mapping[str, str],
                cancelled: Callable[[], bool]) -> CommandResult:
    """`bash -c command` in `cwd`, stdout and stderr together; killed with its whole session
    when `cancelled()` turns true. The output keeps its last OUTPUT_KEEP_CHARS characters."""
    # A temporary file, not a pipe: nothing to drain while polling, no output held in memory.
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=dict(env),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            while proc.poll() is None:
                if cancelled():
                    _kill_session(proc.pid)
                    proc.wait()
                    return CommandResult(None, _tail(out) + "\n[killed: the task was cancelled]")
                time.sleep(POLL_SECONDS)
        except BaseException:
            _kill_session(proc.pid)
            proc.wait()
            raise
        # The command is done; what it left running in the background is the task's too.
        _kill_session(proc.pid)
        return CommandResult(proc.returncode, _tail(out))


def _tail(handle: BinaryIO) -> str:
    handle.flush()
    size = handle.seek(0, os.SEEK_END)
    start = max(0, size - OUTPUT_KEEP_CHARS * 4)
    handle.seek(start)
    text = handle.read().decode("utf-8", errors="replace")
    if len(text) > OUTPUT_KEEP_CHARS or start > 0:
        return "[...]" + text[-OUTPUT_KEEP_CHARS:]
    return text


def _kill_session(session_id: int) -> None:
    """SIGTERM then SIGKILL every live process of the command's session."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_SECONDS), (signal.SIGKILL, 0.0)):
        pids = live_in_session(session_id)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while wait and time.monotonic() < deadline and live_in_session(session_id):
            time.sleep(POLL_SECONDS)
