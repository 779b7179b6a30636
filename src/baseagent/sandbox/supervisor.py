"""The command supervisor (supervisor.c): building it, and holding the bytes that run.

Every command runs under a tiny C supervisor that is its own child subreaper and watches a
lifeline pipe from the agent (see supervisor.c), so an interrupt ends everything a command
started, even what left its process group (setsid, double fork), and a SIGKILLed agent
takes its commands with it. A C program, not Python: it starts in about a millisecond
(Python's own start is 20-40 ms per command) and needs no memory worth mentioning.

What runs is never a path a command could have written. Once per process, `executable()`
takes the supervisor's bytes from one of two places and copies them into a sealed memfd
(no path, no writer: F_SEAL_WRITE), and every later exec (commands, the CLI's watchdog) is
of that fd, `/proc/self/fd/N` passed to the child:
- the package's `_bin/` directory, `supervisor-<hash>` beside `supervisor-<hash>.sha256`,
  the SHA-256 recorded when it was built: used when the directory and both files belong to
  this user or root and nobody else may write them, and only if the bytes read match the
  record (a binary whose digest differs is refused and rebuilt). The package directory is
  the one place whose integrity the agent already rests on (its own Python code runs from
  it, unsandboxed); a sandbox mode keeps `_bin/` read-only for commands when it lies in a
  writable root (policy.py, PROTECTED);
- else a build of this process's own: the system C compiler writes straight into the memfd
  (`-o /proc/self/fd/N`), about 0.15 s of compiler time once per process, then recorded in
  `_bin/` when that directory is this user's to write.
Nothing is read from or built into a temp directory or the user's cache (both are writable
roots of some run: /tmp of every workspace-write run, ~ of a run whose workspace is home).
A launcher that cannot pass fds (the MCP SDK's) gets the verified file in `_bin/` or no
supervisor. Without a compiler (or memfd, or an executable memfd: vm.memfd_noexec=2 and no
verified file), commands start without the supervisor (what an interrupt can still stop is
their session) and `executable()` returns None; .ci/run installs a compiler.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import shutil
import stat
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

SOURCE = Path(__file__).with_name("supervisor.c")
CACHE_DIR = Path(__file__).with_name("_bin")
COMPILE_TIMEOUT_S = 120
MAX_BINARY_BYTES = 8 << 20  # what the supervisor is, many times over

_MFD_EXEC = 0x10  # Linux 6.3+: an executable memfd even where vm.memfd_noexec would seal it
_SEALS = ("F_SEAL_SEAL", "F_SEAL_SHRINK", "F_SEAL_GROW", "F_SEAL_WRITE")

_lock = threading.Lock()
_resolved: list["Binary | None"] = []  # [the binary or None] once looked up


@dataclass(frozen=True)
class Binary:
    """The supervisor this process runs: `path` to execute, with `fds` passed to the child
    that executes it (the memfd `path` names; the supervisor marks every fd above 2
    close-on-exec at once, so its command never holds it), and `file`, the verified copy in
    the package's `_bin/` for a launcher that cannot pass fds (None when there is none)."""

    path: str
    fds: tuple[int, ...] = ()
    file: str | None = None
    sha256: str = ""


def _name() -> str:
    digest = hashlib.sha256(SOURCE.read_bytes() + platform.machine().encode()).hexdigest()
    return f"supervisor-{digest[:16]}"


def _owned(st: os.stat_result) -> bool:
    """This user's or root's, and writable by nobody else."""
    return st.st_uid in (os.getuid(), 0) and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _read_verified(binary: Path, record: Path) -> bytes | None:
    """The binary's bytes if the directory and both files are trusted (see _owned) and the
    bytes' SHA-256 is the one recorded at build; None otherwise."""
    try:
        if not _owned(os.lstat(binary.parent)):
            return None
        expected = _read_trusted(record, 256).decode("ascii").strip()
        data = _read_trusted(binary, MAX_BINARY_BYTES)
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if hashlib.sha256(data).hexdigest() == expected else None


def _read_trusted(path: Path, limit: int) -> bytes:
    """A regular file's bytes, judged by the fd read (no symlink followed, so a swap between
    the check and the read changes nothing)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _owned(st) or st.st_size > limit:
            raise ValueError(f"{path} is not a file to trust")
        chunks, left = [], limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise ValueError(f"{path} grew")
        return data
    finally:
        os.close(fd)


def _memfd(name: str, executable: bool) -> int:
    flags = os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING
    if executable:
        try:
            return os.memfd_create(name, flags | _MFD_EXEC)
        except OSError as exc:
            if exc.errno != 22:  # EINVAL: a kernel before MFD_EXEC; EACCES: noexec enforced
                raise
    return os.memfd_create(name, flags)


def _build() -> bytes | None:
    """Compile the supervisor straight into a memfd of this process (no file a command could
    swap while the compiler writes it); its bytes, or None."""
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None or not hasattr(os, "memfd_create"):
        return None
    try:
        fd = _memfd("baseagent-supervisor-build", executable=False)
    except OSError:
        return None
    try:
        done = subprocess.run([compiler, "-O2", "-o", f"/proc/self/fd/{fd}", str(SOURCE)],
                              stdin=subprocess.DEVNULL, capture_output=True, pass_fds=(fd,),
                              timeout=COMPILE_TIMEOUT_S)
        if done.returncode != 0:
            return None
        size = os.fstat(fd).st_size
        if not 0 < size <= MAX_BINARY_BYTES:
            return None
        return os.pread(fd, size, 0)
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        os.close(fd)


def _store(data: bytes, binary: Path, record: Path) -> bool:
    """Record a build in `_bin/` (binary, then its digest) when that is this user's to write;
    atomic, so a concurrent run reads the old pair, the new one, or a mismatch (and builds)."""
    try:
        CACHE_DIR.mkdir(mode=0o755, exist_ok=True)
        st = os.lstat(CACHE_DIR)
        if not (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and _owned(st)):
            return False
        _write_atomic(binary, data, 0o755)
        _write_atomic(record, (hashlib.sha256(data).hexdigest() + "\n").encode(), 0o644)
        return True
    except OSError:
        return False


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     mode)
        try:
            os.write(fd, data)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _hold(data: bytes, file: Path | None) -> Binary | None:
    """Verified bytes as the Binary this process executes: a sealed memfd; the verified file
    when memfds cannot be executed here; None when neither can be."""
    digest = hashlib.sha256(data).hexdigest()
    try:
        fd = _memfd("baseagent-supervisor", executable=True)
    except OSError:
        return Binary(str(file), file=str(file), sha256=digest) if file else None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS,
                    sum(getattr(fcntl, seal) for seal in _SEALS))
        if not os.fstat(fd).st_mode & stat.S_IXUSR:  # sealed against exec (memfd_noexec)
            raise OSError("memfd not executable")
    except OSError:
        os.close(fd)
        return Binary(str(file), file=str(file), sha256=digest) if file else None
    return Binary(f"/proc/self/fd/{fd}", (fd,), str(file) if file else None, digest)


def executable() -> Binary | None:
    """The supervisor this process runs (see the module's docstring), building it if need
    be; None when it cannot be built or held. The same Binary for the life of the process."""
    with _lock:
        if _resolved:
            return _resolved[0]
        found: Binary | None = None
        if platform.system() == "Linux":
            name = _name()
            binary, record = CACHE_DIR / name, CACHE_DIR / f"{name}.sha256"
            data = _read_verified(binary, record)
            stored = data is not None
            if data is None:
                data = _build()
                stored = data is not None and _store(data, binary, record)
            if data is not None:
                found = _hold(data, binary if stored else None)
        _resolved.append(found)
        return found
