"""Seccomp filters for a sandboxed thread and what it starts: no network, no metadata changes.

The network filter is Codex's Linux sandbox's: socket() and socketpair() fail with EPERM for
every address family but AF_UNIX (local sockets keep working: build tools talk to their
workers over them), and io_uring is refused (it can open sockets without socket()).

The metadata filter is for `read-only`, where nothing may change: chmod, chown, utime and
extended-attribute calls, and the ioctls behind `chattr`, fail with EPERM whatever the
path (Landlock does not mediate metadata; the supervisor's read-only mounts refuse them too
where mount namespaces are available, this holds where they are not).

The keyring filter is for every sandbox mode: add_key, request_key and keyctl fail with
EPERM, so a command cannot read or change the kernel keyrings of the session that started
the agent (a user's login keyring may hold credentials), nor make keys of its own.

A system call made through a foreign ABI (32-bit code on x86_64) is refused whole, since
its numbers differ. Filters are installed on the calling thread only, never on the agent's
process.
"""
from __future__ import annotations

import ctypes
import errno
import os
import platform
import socket

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# socket, socketpair, io_uring_setup, io_uring_enter, io_uring_register
_NETWORK = {"x86_64": (41, 53, 425, 426, 427), "aarch64": (198, 199, 425, 426, 427)}
# chmod, fchmod, fchmodat(2), chown, fchown, lchown, fchownat, utime(s), futimesat,
# utimensat, setxattr / removexattr in all their forms (and the *xattrat of 6.13).
_METADATA = {
    "x86_64": (90, 91, 268, 452, 92, 93, 94, 260, 132, 235, 261, 280,
               188, 189, 190, 197, 198, 199, 463, 466),
    "aarch64": (52, 53, 452, 54, 55, 88, 5, 6, 7, 14, 15, 16, 463, 466),
}
# add_key, request_key, keyctl
_KEYRING = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}
_IOCTL = {"x86_64": 16, "aarch64": 29}
# FS_IOC_SETFLAGS (chattr; the 32-bit and 64-bit encodings) and FS_IOC_FSSETXATTR.
_SET_FLAGS_IOCTLS = (0x40086602, 0x40046602, 0x401C5820)

_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | errno.EPERM
_X32_BIT = 0x40000000
_OFF_NR, _OFF_ARCH, _OFF_ARG0, _OFF_ARG1 = 0, 4, 16, 24  # struct seccomp_data (low halves)

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2

Instruction = tuple[int, int, int, int]


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def supported() -> bool:
    return platform.system() == "Linux" and platform.machine() in _AUDIT_ARCH


def _prologue(machine: str) -> list[Instruction]:
    """Refuse foreign ABIs, then load the system call number."""
    program = [
        (_LD_W_ABS, 0, 0, _OFF_ARCH),
        (_JEQ_K, 1, 0, _AUDIT_ARCH[machine]),
        (_RET_K, 0, 0, _RET_EPERM),
        (_LD_W_ABS, 0, 0, _OFF_NR),
    ]
    if machine == "x86_64":
        program += [(_JGE_K, 0, 1, _X32_BIT), (_RET_K, 0, 0, _RET_EPERM)]  # x32
    return program


def network_filter() -> list[Instruction]:
    """The network filter as (code, jt, jf, k) tuples (exposed for tests)."""
    machine = platform.machine()
    sock, pair, *uring = _NETWORK[machine]
    return _prologue(machine) + [
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


def metadata_filter() -> list[Instruction]:
    """The read-only filter: metadata calls and chattr's ioctls refused (for tests too)."""
    machine = platform.machine()
    calls = _METADATA[machine]
    program = _prologue(machine)
    # Each refused call jumps to the EPERM at the end of its block: n calls, then ioctl.
    for index, number in enumerate(calls):
        program.append((_JEQ_K, len(calls) - index + 1, 0, number))
    program += [
        (_JEQ_K, 2, 0, _IOCTL[machine]),         # -> look at the request
        (_RET_K, 0, 0, _RET_ALLOW),
        (_RET_K, 0, 0, _RET_EPERM),
        (_LD_W_ABS, 0, 0, _OFF_ARG1),
    ]
    for index, request in enumerate(_SET_FLAGS_IOCTLS):
        program.append((_JEQ_K, len(_SET_FLAGS_IOCTLS) - index, 0, request))
    program += [(_RET_K, 0, 0, _RET_ALLOW), (_RET_K, 0, 0, _RET_EPERM)]
    return program


def keyring_filter() -> list[Instruction]:
    """Every sandbox mode's filter: the kernel keyring calls refused (for tests too)."""
    machine = platform.machine()
    calls = _KEYRING[machine]
    program = _prologue(machine)
    for index, number in enumerate(calls):
        program.append((_JEQ_K, len(calls) - index, 0, number))
    return program + [(_RET_K, 0, 0, _RET_ALLOW), (_RET_K, 0, 0, _RET_EPERM)]


def install(program: list[Instruction]) -> None:
    """Install a filter on the calling thread (no_new_privs must already be set)."""
    filters = (_Filter * len(program))(*[_Filter(*ins) for ins in program])
    prog = _Program(len(program), ctypes.cast(filters, ctypes.POINTER(_Filter)))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp: {os.strerror(err)}")


def install_network_filter() -> None:
    install(network_filter())
