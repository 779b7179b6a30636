"""Programs the agent runs for itself on the workspace (its `git status`), confined read-only.

A repository's configuration can name programs git runs (core.fsmonitor, filters, hooks),
and in workspace-write the model may have written it in an earlier run (a repository made
during a run is writable). So whatever the run's own mode, such a program runs as a
read-only command would: under a one-shot supervisor, in a read-only mount namespace,
without capabilities, network, metadata changes or the agent's secrets (`env` is the run's
child environment), and everything it started is killed when it returns. Where the kernel
sandbox is missing it runs with the supervisor only; `git_argv` neutralises the
configuration that names programs, so normally nothing of the repository's runs at all.
"""
from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from baseagent.sandbox.policy import Policy
from baseagent.tools.procs import ProcessTracker

# Settings that make git run a program, overridden on the command line (which wins over
# every configuration file): the file system monitor hook, hooks, pagers and editors,
# external diff, credential helpers, submodule recursion.
GIT_OVERRIDES = ("core.fsmonitor=false", "core.hooksPath=/dev/null", "core.pager=cat",
                 "core.editor=true", "sequence.editor=true", "diff.external=",
                 "credential.helper=", "core.sshCommand=false", "submodule.recurse=false",
                 "core.attributesFile=/dev/null", "status.submoduleSummary=false",
                 "log.showSignature=false", "gpg.program=false", "gpg.ssh.program=false",
                 "gpg.x509.program=false")
# No system or global configuration (neither the repository's to change, nor needed).
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_ATTR_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat",
           "GIT_OPTIONAL_LOCKS": "0"}
# How much of a program's output is kept.
MAX_OUTPUT_BYTES = 256 * 1024
# After the program exits, how long output from what it left running is still read.
DRAIN_SECONDS = 0.2


def git_argv(args: Sequence[str], filters: Sequence[str] = ()) -> list[str]:
    """`git ARGS` with every program-naming setting overridden; `filters` are the names of
    the content filters the repository's configuration defines (each turned off)."""
    argv = ["git"]
    for setting in GIT_OVERRIDES:
        argv += ["-c", setting]
    for name in filters:
        for key in ("clean", "smudge", "process"):
            argv += ["-c", f"filter.{name}.{key}="]
        argv += ["-c", f"filter.{name}.required=false"]
    return argv + ["--no-optional-locks", *args]


def run_git(args: Sequence[str], *, cwd: Path, env: Mapping[str, str],
            timeout: float) -> subprocess.CompletedProcess[str] | None:
    """`git ARGS` in `cwd`, confined and neutralised; None when it cannot run or times out.
    The configured content filters are listed first (reading configuration runs nothing)
    so that they can be turned off by name."""
    git_env = {**env, **GIT_ENV}
    filters = _drivers("filter", cwd=cwd, env=git_env, timeout=timeout)["filter"]
    return run_confined(git_argv(args, filters), cwd=cwd, env=git_env, timeout=timeout)


def _drivers(*sections: str, cwd: Path, env: Mapping[str, str],
             timeout: float) -> dict[str, list[str]]:
    """The names of the `SECTION.NAME.*` drivers the repository's configuration defines
    (content filters, diff drivers), by section, read by one confined `git config` (which
    runs nothing)."""
    pattern = "^(" + "|".join(sections) + r")\."
    listed = run_confined(git_argv(["config", "--name-only", "--get-regexp", pattern]),
                          cwd=cwd, env=env, timeout=timeout)
    names: dict[str, list[str]] = {section: [] for section in sections}
    if listed is not None and listed.returncode == 0:
        for key in listed.stdout.splitlines():
            section, _, rest = key.strip().partition(".")
            name = rest.rpartition(".")[0]
            if section in names and name and name not in names[section]:
                names[section].append(name)
    return names


def git_override_env(env: Mapping[str, str], *, cwd: Path,
                     timeout: float = 10.0) -> dict[str, str]:
    """`env` for a command whose git must not run the repository's programs (a command the
    agent approved on its own under `untrusted`: tools/shell.py): every setting of
    GIT_OVERRIDES, and each content filter's and diff driver's programs (textconv, external
    diff) turned off, as environment configuration (`GIT_CONFIG_COUNT`, git 2.31+), which
    overrides every configuration file and reaches the git processes git itself starts
    (submodules). A driver turned off makes git say it cannot run it; nothing runs."""
    git_env = {**env, **GIT_ENV}
    settings = list(GIT_OVERRIDES)
    drivers = _drivers("filter", "diff", cwd=cwd, env=git_env, timeout=timeout)
    for name in drivers["filter"]:
        settings += [f"filter.{name}.{key}=" for key in ("clean", "smudge", "process")]
        settings.append(f"filter.{name}.required=false")
    for name in drivers["diff"]:
        settings += [f"diff.{name}.textconv=", f"diff.{name}.command="]
    out = dict(env)
    given = out.get("GIT_CONFIG_COUNT", "0")
    start = int(given) if given.isdigit() else 0
    for index, setting in enumerate(settings, start):
        key, _, value = setting.partition("=")
        out[f"GIT_CONFIG_KEY_{index}"] = key
        out[f"GIT_CONFIG_VALUE_{index}"] = value
    out["GIT_CONFIG_COUNT"] = str(start + len(settings))
    return out


def run_confined(argv: list[str], *, cwd: Path, env: Mapping[str, str],
                 timeout: float, mode: str = "read-only",
                 network: bool = False) -> subprocess.CompletedProcess[str] | None:
    """Run `argv` as a read-only command would run (see the module docstring; `mode`: as a
    command of that sandbox mode runs, `cwd` its workspace); stdout and stderr as text
    (bounded). None when it cannot be started or does not finish in time."""
    policy = Policy.build(mode, cwd, network=network)  # type: ignore[arg-type]
    tracker = ProcessTracker()
    try:
        try:
            proc, launch = tracker.start(argv, policy, cwd=cwd, env=dict(env),
                                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE)
        except (OSError, ValueError):
            return None
        try:
            code, out, err = _collect(proc, launch.status_fd, time.monotonic() + timeout)
        finally:
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
            if launch.status_fd is not None:
                os.close(launch.status_fd)
        if code is None:
            return None
        return subprocess.CompletedProcess(argv, code, out.decode("utf-8", "replace"),
                                           err.decode("utf-8", "replace"))
    finally:
        tracker.kill_all(0)  # whatever it left behind (a monitor daemon, a filter's child)
        tracker.release()
        policy.close()


def _collect(proc: subprocess.Popen[bytes], status_fd: int | None,
             deadline: float) -> tuple[int | None, bytes, bytes]:
    """(exit code, stdout, stderr) of the program itself: its status comes from the
    supervisor, which lives on while anything the program started does, so output is
    read until the program has exited and its pipes closed, or briefly after it exited."""
    assert proc.stdout is not None and proc.stderr is not None
    buffers = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    code: int | None = None
    exited_at: float | None = None
    with selectors.DefaultSelector() as selector:
        for fd in [*buffers, *([status_fd] if status_fd is not None else [])]:
            selector.register(fd, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if exited_at is not None and (len(selector.get_map()) == 0 or
                                          time.monotonic() - exited_at > DRAIN_SECONDS):
                break
            for key, _ in selector.select(0.05):
                data = os.read(key.fd, 65536)
                if key.fd == status_fd:
                    selector.unregister(key.fd)
                    if data:
                        code = os.waitstatus_to_exitcode(int(data.split()[0]))
                    exited_at = time.monotonic()  # no report: the supervisor was killed
                    continue
                if not data:
                    selector.unregister(key.fd)
                elif len(buffers[key.fd]) < MAX_OUTPUT_BYTES:
                    buffers[key.fd] += data
            if status_fd is None and exited_at is None and proc.poll() is not None:
                code, exited_at = proc.returncode, time.monotonic()
    out, err = buffers.values()
    return code, bytes(out[:MAX_OUTPUT_BYTES]), bytes(err[:MAX_OUTPUT_BYTES])
