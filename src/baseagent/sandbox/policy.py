"""What a run's commands and file writes may touch, and applying it to one thread.

`Policy` is derived once from the settings (mode, workspace, extra roots, the temp dirs of
the child environment, whether commands get the network). `confine(policy, fn)` runs `fn`
on a new thread that first restricts itself with Landlock (writes) and seccomp (network);
a process `fn` starts inherits the restriction, and a file `fn` writes is checked by the
kernel at the moment it is opened, so a symlink swapped in after the tool's own path check
cannot carry the write outside. The thread ends with `fn`: the agent's process, its other
threads and any program hosting the library stay unrestricted. Nothing runs between fork
and exec (no preexec_fn), so this is safe in a multi-threaded process.
"""
from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

from baseagent.sandbox import SandboxMode, landlock, seccomp

T = TypeVar("T")

# Shared memory (POSIX semaphores, multiprocessing) is scratch space like the temp dir.
SCRATCH_DIRS = ("/dev/shm",)


@dataclass(frozen=True)
class Policy:
    mode: SandboxMode
    writable: tuple[Path, ...] = ()
    network: bool = True

    @property
    def restricted(self) -> bool:
        return self.mode != "danger-full-access"

    @property
    def enforced(self) -> bool:
        """Whether the kernel enforces it here (a restricted mode and Landlock present)."""
        return self.restricted and available()

    @classmethod
    def build(cls, mode: SandboxMode, cwd: Path, extra_roots: Sequence[Path] = (),
              env: Mapping[str, str] | None = None, network: bool = False) -> "Policy":
        """workspace-write: the workspace, the extra roots and the temp dirs are writable
        (the commands' $TMPDIR, else the system temp dir, and /dev/shm); read-only: nothing
        is. `network` lets commands use it in those modes (danger-full-access always has
        it)."""
        if mode == "danger-full-access":
            return cls(mode)
        roots: list[Path] = []
        if mode == "workspace-write":
            tmpdir = (env or {}).get("TMPDIR") or tempfile.gettempdir()
            candidates = [cwd, *extra_roots, Path(tmpdir), *(Path(d) for d in SCRATCH_DIRS)]
            for root in candidates:
                real = Path(os.path.realpath(root))
                if real not in roots:
                    roots.append(real)
        return cls(mode, tuple(roots), network)

    def allows_write(self, path: Path) -> bool:
        """The same rule the kernel applies, for a clear error before trying."""
        if not self.restricted:
            return True
        real = Path(os.path.realpath(path))
        return any(real == root or root in real.parents for root in self.writable)


def available() -> bool:
    """Landlock present (the kernel sandbox works here)."""
    return landlock.abi() >= 1


def unavailable_notice(mode: SandboxMode) -> str | None:
    """The one line an entry point prints when a restricted mode cannot be enforced."""
    if mode == "danger-full-access" or available():
        return None
    return (f"this kernel has no Landlock: --sandbox {mode} binds the file tools only, "
            "not commands")


def apply_to_current_thread(policy: Policy) -> None:
    """Restrict the calling thread for good: only on a thread made for it."""
    landlock.restrict_thread(policy.writable, block_tcp=not policy.network)
    if not policy.network and seccomp.supported():
        seccomp.install_network_filter()


def confine(policy: Policy, fn: Callable[[], T]) -> T:
    """`fn()` on a fresh thread restricted by `policy` (as it is when the kernel cannot
    enforce it: danger-full-access, or no Landlock)."""
    if not policy.enforced:
        return fn()
    outcome: list[tuple[bool, object]] = []

    def work() -> None:
        try:
            apply_to_current_thread(policy)
            outcome.append((True, fn()))
        except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread
            outcome.append((False, exc))

    thread = threading.Thread(target=work, name="baseagent-sandboxed", daemon=True)
    thread.start()
    thread.join()
    ok, value = outcome[0]
    if not ok:
        raise value  # type: ignore[misc]
    return value  # type: ignore[return-value]
