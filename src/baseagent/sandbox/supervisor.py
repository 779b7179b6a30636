"""The command supervisor (supervisor.c): where its executable is, building it on first use.

Every command runs under a tiny C supervisor that is its own child subreaper and watches a
lifeline pipe from the agent (see supervisor.c), so an interrupt ends everything a command
started, even what left its process group (setsid, double fork), and a SIGKILLed agent
takes its commands with it. A C program, not Python: it starts in about a millisecond
(Python's own start is 20-40 ms per command) and needs no memory worth mentioning.

It is compiled with the system C compiler the first time it is needed, into the first
writable of: this package's `_bin/` directory, the user's cache directory, a private
directory under /tmp; named by a hash of its source, so an update rebuilds it. Without a
compiler, commands start without it (what an interrupt can still stop is their session)
and `executable()` returns None; .ci/run installs one.
"""
from __future__ import annotations

import hashlib
import os
import platform
import shutil
import stat
import subprocess
import tempfile
import threading
from pathlib import Path

SOURCE = Path(__file__).with_name("supervisor.c")
COMPILE_TIMEOUT_S = 120

_lock = threading.Lock()
_resolved: list[str | None] = []  # [path or None] once looked up


def _name() -> str:
    digest = hashlib.sha256(SOURCE.read_bytes() + platform.machine().encode()).hexdigest()
    return f"supervisor-{digest[:16]}"


def _candidate_dirs() -> list[Path]:
    dirs = [Path(__file__).with_name("_bin")]
    try:
        dirs.append(Path.home() / ".cache" / "baseagent")
    except RuntimeError:  # no home directory
        pass
    dirs.append(Path(tempfile.gettempdir()) / f"baseagent-{os.getuid()}")
    return dirs


def _trusted(path: Path) -> bool:
    """Ours to run: a regular executable file owned by this user, not writable by others."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid()
            and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and os.access(path, os.X_OK))


def _usable_dir(directory: Path) -> bool:
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(directory)
    except OSError:
        return False
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
            and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and os.access(directory, os.W_OK))


def _compile(target: Path) -> bool:
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        return False
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        done = subprocess.run([compiler, "-O2", "-o", str(tmp), str(SOURCE)],
                              stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=COMPILE_TIMEOUT_S)
        if done.returncode != 0:
            return False
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)  # atomic: a concurrent build by another run is harmless
        return True
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def executable() -> str | None:
    """Path of the built supervisor, building it if needed; None when it cannot be built."""
    with _lock:
        if _resolved:
            return _resolved[0]
        name = _name()
        found: str | None = None
        for directory in _candidate_dirs():
            if _trusted(directory / name):
                found = str(directory / name)
                break
        if found is None:
            for directory in _candidate_dirs():
                if _usable_dir(directory) and _compile(directory / name):
                    found = str(directory / name)
                    break
        _resolved.append(found)
        return found
