"""Which live processes belong to a process group or a session (Linux /proc).

Both the shell tool (is a timed-out command's group gone yet?) and the interrupt path (what
did the commands of this run leave behind?) need to tell live processes from zombies:
`killpg(pgid, 0)` also succeeds for zombies, and orphans whose new parent never reaps them
(a container's init) would otherwise look alive forever.
"""
from __future__ import annotations

import os

# Fields of /proc/<pid>/stat after the parenthesised command name: state ppid pgrp session.
_PGRP, _SESSION = 2, 3


def live_in_group(pgid: int) -> list[int]:
    """Pids of live (non-zombie) processes whose process group is `pgid`."""
    return _live_where(_PGRP, pgid)


def live_in_session(session_id: int) -> list[int]:
    """Pids of live (non-zombie) processes in session `session_id`."""
    return _live_where(_SESSION, session_id)


def _live_where(index: int, value: int) -> list[int]:
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > index and fields[0] not in (b"Z", b"X") and int(fields[index]) == value:
            found.append(int(name))
    return found
