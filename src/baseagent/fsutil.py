"""Durable file replacement, shared by every writer (write_file, apply_patch, the CLI's
--output-last-message, exports), so there is one way to write a file that never tears.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path

# Characters of the target's name kept in the temporary name: enough to recognise a leftover,
# short enough that a 255-byte file name still leaves room for the random suffix.
TEMP_NAME_KEEP = 64


def temp_path_for(path: Path) -> Path:
    """A fresh hidden name beside `path` (same directory, so the rename is atomic)."""
    stem = os.fsencode(path.name)[:TEMP_NAME_KEEP].decode("utf-8", "ignore")
    return path.parent / f".{stem}.{secrets.token_hex(4)}.tmp"


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` with `data`: readers see the old or the new file, never a torn one.

    The data is fsynced before the rename and the directory after it, so a crash leaves
    either version on disk. `mode` None means the default for a new file (umask applies).
    A failure removes the temporary file and re-raises.
    """
    tmp = temp_path_for(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(path.parent)


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
