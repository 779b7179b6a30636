"""Landlock (Linux 5.13+) through its three system calls, for one thread at a time.

Landlock lets an unprivileged thread give up file system (and, from ABI 4, TCP) access for
itself and every process it starts afterwards; it can never be undone. baseagent applies it
on a short-lived thread that then starts a command or does one file write (see
`sandbox.policy.confine`), so the agent's own process, and any program hosting the library,
is never restricted.

What it enforces here: everything under "/" may be read and executed but the hidden paths
(the agent's own configuration and sessions, ~/.baseagent: `build_ruleset`'s `hidden`);
only the writable roots (and /dev/null) may be written, created, removed, renamed into or
truncated. From
ABI 4 with the network off, TCP bind and connect are refused too (UDP and other families
are seccomp's job, sandbox/seccomp.py). From ABI 6 the domain is also scoped: a process in
it cannot signal, or connect to an abstract unix socket of, a process outside it (the
command supervisor, the agent, other commands' processes).

A ruleset is built once per run from directory fds opened when the run started
(`build_ruleset`), so renaming a root or swapping a symlink in its place later changes
nothing: the rules hold the directories themselves, not their paths. The same ruleset fd
restricts every command (in the supervisor's child, sandbox/supervisor.c) and every file
tool's thread (`restrict_thread`).
"""
from __future__ import annotations

import ctypes
import errno
import os
import platform
import stat
from collections.abc import Iterable
from pathlib import Path

# The syscall numbers are the same on every architecture (they came after the unification).
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

# File system rights, by the ABI that introduced them.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, 3, 5
_ABI1_FS = (1 << 13) - 1
# TCP rights (ABI 4).
BIND_TCP, CONNECT_TCP = 1 << 0, 1 << 1
# Scopes (ABI 6): what a process in the domain may not reach outside it.
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

READ_ONLY = EXECUTE | READ_FILE | READ_DIR
# An ancestor of a hidden path with more entries than this: the path is not hidden (each
# entry is one rule, built per run).
MAX_SIBLINGS = 4096
# Rights that make sense on a regular file (a rule on a file may hold no others).
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV


class LandlockError(OSError):
    """The kernel refused a step of building or applying a ruleset."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


# Looked up when first called, not at import: a libc without them (macOS has no prctl)
# must still import this module (every tool does), where abi() is 0 and nothing calls them.
_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_NO_NEW_PRIVS = 38


def _syscall(*args: object) -> int:
    function = getattr(_libc, "syscall")
    function.restype = ctypes.c_long
    return int(function(*args))


def _prctl(*args: object) -> int:
    function = getattr(_libc, "prctl", None)
    if function is None:
        raise LandlockError(errno.ENOSYS, "prctl is not available on this platform")
    return int(function(*args))

_abi_cache: int | None = None


def abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    global _abi_cache
    if _abi_cache is None:
        if platform.system() != "Linux":
            _abi_cache = 0
        else:
            version = _syscall(_CREATE_RULESET, None, ctypes.c_size_t(0),
                               ctypes.c_uint32(_CREATE_RULESET_VERSION))
            _abi_cache = max(int(version), 0)
    return _abi_cache


def handled_fs(version: int) -> int:
    rights = _ABI1_FS
    if version >= 2:
        rights |= REFER
    if version >= 3:
        rights |= TRUNCATE
    if version >= 5:
        rights |= IOCTL_DEV
    return rights


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, f"landlock {what}: {os.strerror(err)}")
    return result


def set_no_new_privs() -> None:
    """Required before an unprivileged thread may restrict itself (and by seccomp)."""
    _check(_prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def build_ruleset(writable_fds: Iterable[int], *, block_tcp: bool,
                  hidden: Iterable[Path] = ()) -> int:
    """A ruleset fd: read and execute everywhere but beneath `hidden` (see readable_paths),
    write only beneath the directories (or files) the fds hold and /dev/null; TCP refused
    when `block_tcp` (ABI 4); signals and abstract unix sockets scoped to the domain
    (ABI 6). The caller owns the fd."""
    version = abi()
    if version < 1:
        raise LandlockError(0, "landlock is not available on this kernel")
    fs = handled_fs(version)
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if version >= 6 else 0
    attr = _RulesetAttr(fs, BIND_TCP | CONNECT_TCP if block_tcp and version >= 4 else 0, scoped)
    size = 24 if version >= 6 else 16 if version >= 4 else 8
    ruleset = _check(_syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                              ctypes.c_uint32(0)), "create_ruleset")
    try:
        for path, rights in readable_paths(hidden):
            _add_path(ruleset, path, rights & fs)
        _add_path(ruleset, "/dev/null", (READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV) & fs)
        for fd in writable_fds:
            _add_fd(ruleset, fd, fs)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def readable_paths(hidden: Iterable[Path]) -> list[tuple[str, int]]:
    """(path, rights) rules that make everything readable but what lies beneath a hidden
    path. Landlock only grants, so a hidden path is left out by granting its siblings: each
    of its ancestors gets READ_DIR alone (it may be listed, a name seen), and every entry
    of an ancestor that is neither another ancestor nor the hidden path (nor a symlink
    leading to one of them) gets READ_ONLY. What appears in an ancestor after the ruleset
    is built is not readable by the domain. A hidden path whose ancestor cannot be listed,
    or has more than MAX_SIBLINGS entries, is not hidden."""
    ancestors: set[str] = set()
    secret: list[str] = []
    for path in hidden:
        real = os.path.realpath(path)
        chain = [os.path.dirname(real)]
        while chain[-1] != "/":
            chain.append(os.path.dirname(chain[-1]))
        try:
            listed = {a: os.listdir(a) for a in chain}
        except OSError:
            continue
        if any(len(names) > MAX_SIBLINGS for names in listed.values()):
            continue
        ancestors.update(chain)
        secret.append(real)
    if not secret:
        return [("/", READ_ONLY)]

    def leads_in(real: str) -> bool:
        return real in ancestors or any(real == s or real.startswith(s + "/") for s in secret)

    rules = [(a, READ_DIR) for a in sorted(ancestors)]
    for ancestor in sorted(ancestors):
        try:
            names = os.listdir(ancestor)
        except OSError:
            continue
        for name in sorted(names):
            entry = os.path.join(ancestor, name)
            if entry in ancestors or entry in secret or leads_in(os.path.realpath(entry)):
                continue
            rules.append((entry, READ_ONLY))
    return rules


def restrict_thread(ruleset: int) -> None:
    """Restrict the calling thread (and what it starts) to `ruleset` for good."""
    set_no_new_privs()
    _check(_syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)), "restrict_self")


def _add_path(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a path that does not exist grants nothing
    try:
        _add_fd(ruleset, fd, rights)
    finally:
        os.close(fd)


def _add_fd(ruleset: int, fd: int, rights: int) -> None:
    if not stat.S_ISDIR(os.fstat(fd).st_mode):
        rights &= _FILE_RIGHTS
    rule = _PathBeneathAttr(rights, fd)
    _check(_syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                    ctypes.byref(rule), ctypes.c_uint32(0)), f"add_rule fd {fd}")
