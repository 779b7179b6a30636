"""Dropping every capability of the calling thread (and what it starts), for commands in a
sandbox mode that start without the supervisor (which does the same in C before it runs a
command, sandbox/supervisor.c).

Root keeps its capabilities across exec unless they are gone from every set: the bounding
set (else exec gives them back to uid 0), the ambient set, and the effective, permitted and
inheritable sets. Without them root reads and writes by ownership and permission bits like
any user: no CAP_SYS_PTRACE to read other processes' memory or environment, no
CAP_DAC_OVERRIDE, CAP_FOWNER or CAP_CHOWN to change what it does not own, no CAP_SYS_ADMIN.
Capabilities are per thread in Linux, so this touches only the throwaway thread it runs on.
"""
from __future__ import annotations

import ctypes
import os

PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAP_VERSION_3 = 0x20080522
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
_LAST_CAP_FILE = "/proc/sys/kernel/cap_last_cap"


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def last_cap() -> int:
    try:
        with open(_LAST_CAP_FILE, encoding="ascii") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return 63


def drop_all() -> None:
    """Empty every capability set of the calling thread. Dropping from the bounding set
    needs CAP_SETPCAP: without it (not root) there is nothing there to give back anyway."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(last_cap() + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _Header(_CAP_VERSION_3, 0)
    data = (_Data * 2)()
    number = _SYS_CAPSET.get(os.uname().machine)
    if number is None:
        return
    if libc.syscall(number, ctypes.byref(header), data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"capset: {os.strerror(err)}")
