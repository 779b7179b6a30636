"""What a run's commands and file writes may touch, and applying it to a thread or a command.

`Policy.build` is called once per run (compose/): it opens every writable root (the
workspace, the extra roots, the commands' temp dir, /dev/shm) and keeps the directory fds
for the life of the run, and every later decision is made from those fds, never from the
paths again. A root renamed, or replaced by a symlink to `/`, by an earlier command still
means the directory that was opened (the Landlock ruleset holds the directories, the
supervisor's bind mounts are checked against them).

Two ways to apply it:
- `confine(policy, fn)` runs `fn` on a new thread that first restricts itself (Landlock,
  seccomp): how file tools write, and how commands start when the supervisor is missing
  (then the thread also drops its capabilities).
- `confine(policy, fn, supervised=True)`: the thread sets only no_new_privs and the seccomp
  filters, and `fn` starts the supervisor with `policy.supervisor_args()`; the supervisor's
  child builds the command's mount namespace (the file system read-only but for the roots,
  `.git` read-only inside them), drops every capability and restricts itself with the run's
  Landlock ruleset before it executes the command. The supervisor itself stays outside the
  command's Landlock domain, where the command cannot signal or inspect it.
The agent's process, its other threads and any program hosting the library stay
unrestricted. Nothing runs between fork and exec in Python (no preexec_fn), so this is safe
in a multi-threaded process.
"""
from __future__ import annotations

import os
import platform
import stat
import tempfile
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

from baseagent.sandbox import SandboxMode, caps, landlock, seccomp
from baseagent.sandbox.paths import PROTECTED_NAMES, protected_paths  # noqa: F401

T = TypeVar("T")

# Shared memory (POSIX semaphores, multiprocessing) is scratch space like the temp dir.
SCRATCH_DIRS = ("/dev/shm",)
# What stays read-only inside the writable roots (PROTECTED_NAMES), for commands and file
# tools alike, is defined once in sandbox/paths.py.


@dataclass(frozen=True)
class Root:
    """A writable root as opened when the run started: its path then, and an O_PATH fd that
    holds the directory itself for the rest of the run."""

    path: Path
    fd: int

    def location(self) -> Path:
        """Where the directory is now (it may have been renamed since)."""
        try:
            return Path(os.readlink(f"/proc/self/fd/{self.fd}"))
        except OSError:
            return self.path


class Policy:
    """A run's sandbox: the mode, the writable roots (held open) and the network switch."""

    def __init__(self, mode: SandboxMode, roots: Sequence[Root] = (), network: bool = True,
                 git_root: Path | None = None, hidden: Sequence[Path] = (),
                 workspace: Path | None = None) -> None:
        self.mode = mode
        self.roots = tuple(roots)
        self.network = network
        # What commands may not read (the agent's configuration and sessions): left out of
        # the Landlock ruleset's read rules, and read-only where a writable root holds it.
        self.hidden = tuple(hidden)
        # The repository the workspace is in, if any: its .git is protected when it lies in
        # a writable root (the workspace may be a subdirectory of it).
        self.git_root = git_root
        # The workspace, resolved: in danger-full-access (no roots) its `.git` is still
        # what approval policy `untrusted` asks about before a file tool writes it.
        self.workspace = workspace
        self._ruleset: int | None = None
        self._lock = threading.Lock()
        self._fds: list[int] = [root.fd for root in self.roots]
        self._finalizer = weakref.finalize(self, _close_all, self._fds)

    @property
    def writable(self) -> tuple[Path, ...]:
        """The writable roots, as resolved when the run started."""
        return tuple(root.path for root in self.roots)

    @property
    def restricted(self) -> bool:
        return self.mode != "danger-full-access"

    @property
    def enforced(self) -> bool:
        """Whether the kernel enforces it here (a restricted mode and Landlock present)."""
        return self.restricted and available()

    @classmethod
    def build(cls, mode: SandboxMode, cwd: Path, extra_roots: Sequence[Path] = (),
              env: Mapping[str, str] | None = None, network: bool = False,
              hidden: Sequence[Path] | None = None) -> "Policy":
        """workspace-write: the workspace, the extra roots and the temp dirs are writable
        (the commands' $TMPDIR, else the system temp dir, and /dev/shm); read-only: nothing
        is. `network` lets commands use it in those modes (danger-full-access always has
        it). Roots that do not exist are left out; each is opened here, once. `hidden`:
        what commands may not read, by default the agent's own directory (agent_home: its
        config.toml, with an api_key, and its sessions)."""
        if mode == "danger-full-access":
            # Nothing is refused; the repository is still known, for the questions approval
            # policy `untrusted` asks before a write into its metadata (tools/paths.py).
            return cls(mode, git_root=_git_root(cwd), workspace=Path(os.path.realpath(cwd)))
        if hidden is None:
            hidden = [agent_home(env)]
        roots: list[Root] = []
        if mode == "workspace-write":
            tmpdir = (env or {}).get("TMPDIR") or tempfile.gettempdir()
            seen: set[tuple[int, int]] = set()
            for candidate in [cwd, *extra_roots, Path(tmpdir), *(Path(d) for d in SCRATCH_DIRS)]:
                root = _open_root(candidate)
                if root is None:
                    continue
                st = os.fstat(root.fd)
                if (st.st_dev, st.st_ino) in seen:
                    os.close(root.fd)
                    continue
                seen.add((st.st_dev, st.st_ino))
                roots.append(root)
        return cls(mode, roots, network, git_root=_git_root(cwd), hidden=hidden,
                   workspace=Path(os.path.realpath(cwd)))

    def close(self) -> None:
        """Release the held directories (the end of the run)."""
        self._finalizer()

    def allows_write(self, path: Path) -> bool:
        """The same rule the kernel applies, for a clear error before trying."""
        if not self.restricted:
            return True
        real = Path(os.path.realpath(path))
        return any(real == loc or loc in real.parents
                   for loc in (root.location() for root in self.roots))

    def protected_paths(self) -> list[Path]:
        """What stays read-only inside the writable roots (sandbox/paths.py), resolved,
        existing or not, as the roots are now: what the file tools refuse in
        workspace-write, and (those that exist) the commands' read-only mounts."""
        roots = [root.location() for root in self.roots] \
            or ([self.workspace] if self.workspace is not None else [])
        # Beside the repositories' metadata: the supervisor's recorded build (what a later
        # run executes: sandbox/supervisor.py) and the agent's own files (its configuration
        # runs commands: MCP servers, the model's endpoint), where a writable root holds them.
        extra = [supervisor_cache(), *self.hidden]
        return [path for path in [*protected_paths(roots, self.git_root), *extra]
                if not self.restricted or self.allows_write(path)]

    def ruleset(self) -> int:
        """The run's Landlock ruleset fd, built on first use from the held roots."""
        with self._lock:
            if self._ruleset is None:
                self._ruleset = landlock.build_ruleset(
                    [r.fd for r in self.roots], block_tcp=not self.network,
                    hidden=[p for p in self.hidden if not self.allows_write(p)])
                self._fds.append(self._ruleset)
            return self._ruleset

    def supervisor_args(self) -> "SupervisorArgs":
        """How the supervisor confines a command: the ruleset to restrict it with, the roots
        its mount namespace keeps writable and the paths in them kept read-only. Close the
        result once the supervisor has started (it holds fds for it)."""
        if not self.enforced:
            return SupervisorArgs([], ())
        ruleset = self.ruleset()
        args = ["--landlock", str(ruleset)]
        fds = [ruleset]
        opened: list[int] = []
        for root in self.roots:
            args += ["--rw", str(root.fd), str(root.location())]
            fds.append(root.fd)
        for path, fd in self._protected():
            opened.append(fd)
            args += ["--ro", str(fd), str(path)]
            fds.append(fd)
        for path, fd in self._hidden_in_roots():
            opened.append(fd)
            args += ["--hide", str(fd), str(path)]
            fds.append(fd)
        return SupervisorArgs(args, tuple(fds), opened)

    def _hidden_in_roots(self) -> list[tuple[Path, int]]:
        """The hidden directories a writable root holds, opened now: Landlock cannot leave
        them out of a root's rights, so the command's mount namespace covers each with an
        empty read-only tmpfs (supervisor.c --hide)."""
        found = []
        for path in self.hidden:
            if not self.allows_write(path):
                continue  # outside the roots: the ruleset's read rules leave it out
            try:
                fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError:
                continue
            found.append((path, fd))
        return found

    def _protected(self) -> list[tuple[Path, int]]:
        """The protected paths (`protected_paths`) that exist, opened now (a repository
        made by an earlier command counts)."""
        found: list[tuple[Path, int]] = []
        seen: set[tuple[int, int]] = set()
        for path in self.protected_paths():
            try:
                fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) in seen or stat.S_ISLNK(st.st_mode):
                os.close(fd)
                continue
            seen.add((st.st_dev, st.st_ino))
            found.append((path, fd))
        return found


@dataclass
class SupervisorArgs:
    """Arguments for the supervisor (before its LIFELINE), the fds they name (to pass to it),
    and the ones opened for this command alone (closed by `close()`)."""

    args: list[str]
    fds: tuple[int, ...]
    opened: list[int] | None = None

    def close(self) -> None:
        for fd in self.opened or ():
            try:
                os.close(fd)
            except OSError:
                pass
        self.opened = []


AGENT_DIR = ".baseagent"


def agent_home(env: Mapping[str, str] | None = None) -> Path:
    """The agent's own directory (~/.baseagent: config.toml, sessions), by the HOME of the
    environment handed in, else the user's entry in the password database."""
    home = (env or {}).get("HOME")
    if not home:
        import pwd

        try:
            home = pwd.getpwuid(os.getuid()).pw_dir
        except (KeyError, OSError):
            home = "/"
    return Path(home) / AGENT_DIR


def supervisor_cache() -> Path:
    from baseagent.sandbox.supervisor import CACHE_DIR

    return CACHE_DIR


def _open_root(path: Path) -> Root | None:
    try:
        fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None  # a root that does not exist grants nothing
    try:
        real = Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        real = Path(os.path.realpath(path))
    return Root(real, fd)


def _git_root(cwd: Path) -> Path | None:
    for directory in (cwd, *cwd.parents):
        if os.path.lexists(directory / ".git"):
            return Path(os.path.realpath(directory))
    return None


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
    fds.clear()


def platform_supported() -> bool:
    """Whether this platform has the sandbox at all. Its pieces (Landlock, seccomp, mount
    and user namespaces, capabilities, the C supervisor) are Linux's; elsewhere nothing
    could confine a command. Asked of platform.system(), as landlock.abi() and
    seccomp.supported() ask it."""
    return platform.system() == "Linux"


def unsupported_mode(mode: SandboxMode) -> str | None:
    """Why a run in `mode` is refused on this platform (one line), or None. On Linux a
    restricted mode always runs (without Landlock: unavailable_notice); elsewhere only
    danger-full-access does: a mode chosen to confine commands that could not would be
    a promise broken in silence."""
    if mode == "danger-full-access" or platform_supported():
        return None
    return (f"sandbox mode {mode} needs Linux (Landlock, seccomp and namespaces confine the "
            f"commands) and this is {platform.system() or 'not Linux'}: use --sandbox "
            "danger-full-access (sandbox = \"danger-full-access\" in config.toml), or run "
            "baseagent in a Linux VM or container")


def available() -> bool:
    """Landlock present (the kernel sandbox works here)."""
    return landlock.abi() >= 1


def unavailable_notice(mode: SandboxMode) -> str | None:
    """The one line an entry point prints when a restricted mode cannot be enforced."""
    if mode == "danger-full-access" or available():
        return None
    return (f"this kernel has no Landlock: --sandbox {mode} binds the file tools only, "
            "not commands")


def apply_to_current_thread(policy: Policy, *, supervised: bool = False,
                            command: bool = False) -> None:
    """Restrict the calling thread for good: only on a thread made for it. `supervised`:
    only what the supervisor cannot do after it starts (no_new_privs, seccomp); `command`
    (a command started without the supervisor): also drop every capability."""
    landlock.set_no_new_privs()
    if seccomp.supported():
        seccomp.install(seccomp.keyring_filter())
        if not policy.network:
            seccomp.install_network_filter()
        if policy.mode == "read-only":
            seccomp.install(seccomp.metadata_filter())
    if supervised:
        return
    landlock.restrict_thread(policy.ruleset())
    if command:
        caps.drop_all()


def confine(policy: Policy, fn: Callable[[], T], *, supervised: bool = False,
            command: bool = False) -> T:
    """`fn()` on a fresh thread restricted by `policy` (as it is when the kernel cannot
    enforce it: danger-full-access, or no Landlock). See apply_to_current_thread."""
    if not policy.enforced:
        return fn()
    outcome: list[tuple[bool, object]] = []

    def work() -> None:
        try:
            apply_to_current_thread(policy, supervised=supervised, command=command)
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
