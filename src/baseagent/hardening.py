"""Process-wide hardening of the agent's own process, for entry points only (CLI, exec).

The agent holds provider keys in its environment and memory. A command it runs as the same
user could read them through /proc/<agent pid>/environ or /proc/<pid>/mem, or find them in
a core dump. Like Codex on Linux, the CLI makes its process non-dumpable (PR_SET_DUMPABLE 0:
/proc/<pid>/environ, mem, maps and ptrace are refused to other processes of the user that
lack CAP_SYS_PTRACE) and turns core dumps off (RLIMIT_CORE 0). These are properties of the
whole process, so the library never sets them: a program embedding `Agent` decides for
itself (it can call `harden_process()`).

What it does not stop: a root command (CAP_SYS_PTRACE) can still read the process, unless
the sandbox is on (Landlock refuses ptrace-style access across its boundary). See
docs/RELIABILITY.md.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import resource
import sys

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3


def harden_process() -> list[str]:
    """Apply both measures; returns what could not be applied (empty when all worked).

    Never raises: a platform without prctl (not Linux) keeps working unhardened."""
    failed: list[str] = []
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ValueError, OSError):
        failed.append("RLIMIT_CORE 0")
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
                failed.append("PR_SET_DUMPABLE 0")
        except OSError:
            failed.append("PR_SET_DUMPABLE 0")
    return failed


def is_dumpable() -> bool:
    """Whether this process can be dumped or inspected by others (for tests and checks)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return bool(libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0))
