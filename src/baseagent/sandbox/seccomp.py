"""A seccomp filter that takes the network away from a thread and what it starts.

Like Codex's Linux sandbox: socket() and socketpair() fail with EPERM for every address
family but AF_UNIX (local sockets keep working: build tools talk to their workers over
them), and io_uring is refused (it can open sockets without socket()). A system call made
through a foreign ABI (32-bit code on x86_64) is refused whole, since its numbers differ.
The filter is installed on the calling thread only, never on the agent's process.
"""
from __future__ import annotations

import ctypes
import errno
import platform
import os
import socket

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# socket, socketpair, io_uring_setup, io_uring_enter, io_uring_register
_SYSCALLS = {"x86_64": (41, 53, 425, 426, 427), "aarch64": (198, 199, 425, 426, 427)}

_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | errno.EPERM
_X32_BIT = 0x40000000
_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16  # struct seccomp_data (arg0's low half)

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def supported() -> bool:
    return platform.system() == "Linux" and platform.machine() in _AUDIT_ARCH


def network_filter() -> list[tuple[int, int, int, int]]:
    """The BPF program as (code, jt, jf, k) tuples (exposed for tests)."""
    machine = platform.machine()
    sock, pair, *uring = _SYSCALLS[machine]
    program = [
        (_LD_W_ABS, 0, 0, _OFF_ARCH),
        (_JEQ_K, 1, 0, _AUDIT_ARCH[machine]),
        (_RET_K, 0, 0, _RET_EPERM),              # a foreign ABI: refused
        (_LD_W_ABS, 0, 0, _OFF_NR),
    ]
    if machine == "x86_64":
        program += [(_JGE_K, 0, 1, _X32_BIT), (_RET_K, 0, 0, _RET_EPERM)]  # x32
    program += [
        (_JEQ_K, 2, 0, sock),                    # -> check the family
        (_JEQ_K, 1, 0, pair),                    # -> check the family
        (_JEQ_K, 5, 3, uring[0]),                # -> refuse / next
        (_LD_W_ABS, 0, 0, _OFF_ARG0),
        (_JEQ_K, 4, 0, socket.AF_UNIX),          # -> allow
        (_RET_K, 0, 0, _RET_EPERM),
        (_JEQ_K, 1, 0, uring[1]),                # -> refuse
        (_JEQ_K, 0, 1, uring[2]),                # -> refuse / allow
        (_RET_K, 0, 0, _RET_EPERM),
        (_RET_K, 0, 0, _RET_ALLOW),
    ]
    return program


def install_network_filter() -> None:
    """Install the filter on the calling thread (no_new_privs must already be set)."""
    program = network_filter()
    filters = (_Filter * len(program))(*[_Filter(*ins) for ins in program])
    prog = _Program(len(program), ctypes.cast(filters, ctypes.POINTER(_Filter)))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp: {os.strerror(err)}")


