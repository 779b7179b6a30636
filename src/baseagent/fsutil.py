"""Durable file replacement, shared by every writer (write_file, apply_patch, the CLI's
--output-last-message, exports), so there is one way to write a file that never tears; and
bounded reading of the files (and the stdin) the user points the agent at, so that
`/dev/zero`, a FIFO or a 2 GB file is one clear error, not a hang or a MemoryError.
"""
from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path
from typing import BinaryIO

# What the CLI reads of an instruction, a prompt file or a JSON file it is given.
MAX_INPUT_BYTES = 16 * 1024 * 1024


def read_regular(path: Path, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file at `path`, or OSError whose strerror says why not: not
    a regular file (a FIFO, a device such as /dev/zero, a directory: opened without
    blocking, never read), or larger than `max_bytes`."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return _bounded(handle, max_bytes)


def read_stream(stream: BinaryIO, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """All of `stream` (stdin's bytes) as text, as text-mode stdin reads it (UTF-8,
    universal newlines), or OSError when it holds more than `max_bytes`."""
    text = _bounded(stream, max_bytes).decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _bounded(stream: BinaryIO, max_bytes: int) -> bytes:
    data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(errno.EFBIG, f"larger than {max_bytes:,} bytes")
    return data

# Characters of the target's name kept in the temporary name: enough to recognise a leftover,
# short enough that a 255-byte file name still leaves room for the random suffix.
TEMP_NAME_KEEP = 64


def temp_path_for(path: Path) -> Path:
    """A fresh hidden name beside `path` (same directory, so the rename is atomic)."""
    stem = os.fsencode(path.name)[:TEMP_NAME_KEEP].decode("utf-8", "ignore")
    return path.parent / f".{stem}.{secrets.token_hex(4)}.tmp"


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` with `data`: readers see the old or the new file, never a torn one.

    The data is written to an unnamed file in the target's directory (O_TMPFILE), fsynced,
    and only then given a temporary name and renamed over `path`, so a process killed while
    writing (SIGKILL, a second Ctrl-C) leaves nothing behind. File systems without O_TMPFILE
    get a named temporary file, removed on any failure this process survives. The directory
    is fsynced after the rename, so a crash leaves either version on disk. `mode` None means
    the default for a new file (umask applies).
    """
    fd = _open_unnamed(path.parent)
    if fd is None:
        _write_named(path, data, mode)
    else:
        tmp: Path | None = None
        try:
            _fill(fd, data, mode)
            tmp = temp_path_for(path)
            if _name_unnamed(fd, tmp):
                os.replace(tmp, path)
            else:  # no /proc to name it through: the classic way
                tmp = None
                _write_named(path, data, mode)
        except BaseException:
            if tmp is not None:
                _unlink_quietly(tmp)
            raise
        finally:
            os.close(fd)
    fsync_dir(path.parent)


def _open_unnamed(directory: Path) -> int | None:
    """An O_TMPFILE descriptor in `directory`, or None where the file system has none."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag:
        return None
    try:
        return os.open(directory, flag | os.O_WRONLY | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            return None
        raise


def _name_unnamed(fd: int, name: Path) -> bool:
    """Give the O_TMPFILE file `fd` a name (linkat through /proc, which needs no privilege;
    a plain os.link would not follow the magic link). False when /proc is not mounted."""
    try:
        fd_dir = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        os.link(str(fd), name, src_dir_fd=fd_dir, follow_symlinks=True)
    finally:
        os.close(fd_dir)
    return True


def _fill(fd: int, data: bytes, mode: int | None) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    if mode is not None:
        os.fchmod(fd, mode)
    os.fsync(fd)


def _write_named(path: Path, data: bytes, mode: int | None) -> None:
    tmp = temp_path_for(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        try:
            _fill(fd, data, mode)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def fsync_dir(directory: Path) -> None:
    """Make a rename in `directory` durable; best effort (not every filesystem allows it)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
