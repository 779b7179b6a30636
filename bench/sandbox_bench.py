"""Sandbox benchmark: what the kernel sandbox and the command supervisor add per command.

    python bench/sandbox_bench.py [--runs 300] [--out bench/SANDBOX_RESULTS.md]

Runs the shell tool in-process on `true` (so the command itself costs ~1 ms and the
overhead is what is left) under four set-ups, interleaved round-robin so a neighbour's load
spike on a shared machine lands on all of them: bash started directly (no supervisor, the
behaviour before issue 14), and under the supervisor in danger-full-access,
workspace-write and read-only. The sandbox's cost is the median of a restricted mode minus
the median of danger-full-access, both supervised; the supervisor's is supervised
danger-full-access minus direct. `confine()` alone (a thread that applies Landlock and
seccomp, then returns) is timed too. Each set-up gets warm-up runs first.

Since issue 23 a sandboxed command's cost includes what the supervisor's child does before
it executes bash: a mount namespace (everything read-only but the writable roots, `.git`
read-only in them; a user namespace too when not root), dropping every capability, and
Landlock from the run's ruleset, which is built once per run (before, a ruleset was built
per command). Before issue 23 the same machine measured +3.38 ms (2026-11-23).

Since issue 39 the supervisor runs from a sealed memfd (`/proc/self/fd/N`), its fds are
close-on-exec from its first instruction, every sandboxed command's thread installs one more
seccomp filter (the kernel keyrings), and the run's Landlock ruleset grants read to the
siblings of `~/.baseagent` and of its ancestors rather than to `/`. Once per process (not
per command) the supervisor is either read from the package's `_bin/` and checked against
its recorded SHA-256, or compiled into the memfd; both are timed (`per process`), and so is
building the run's policy and ruleset (`per run`).
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# This checkout's code, not another one installed in the environment (an editable install
# of a different checkout would be measured instead); PYTHONPATH chooses another on purpose
# (the code before a change, as in Reproduce).
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

from stats import median, percentile  # noqa: E402

from baseagent.credentials import child_env  # noqa: E402
from baseagent.sandbox import landlock  # noqa: E402
from baseagent.sandbox.policy import Policy, confine  # noqa: E402
from baseagent.tools import shell  # noqa: E402
from baseagent.tools.context import ToolContext
from baseagent.tools.procs import ProcessTracker  # noqa: E402

SETUPS = [("direct bash (no supervisor)", "danger-full-access", False),
          ("supervised, danger-full-access", "danger-full-access", True),
          ("supervised, workspace-write", "workspace-write", True),
          ("supervised, read-only", "read-only", True)]


def cpu_ms() -> float:
    """CPU time of this process and its waited-for descendants (the supervisor, bash)."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return (me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime) * 1000


def measure(runs: int, workspace: Path) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    env = child_env(os.environ)
    contexts = {name: ToolContext(cwd=workspace, env=env, sandbox=mode,
                                  processes=ProcessTracker(supervisor=supervised))
                for name, mode, supervised in SETUPS}
    args = shell.Args(command="true")
    samples: dict[str, list[float]] = {name: [] for name in contexts}
    cpu: dict[str, list[float]] = {name: [] for name in contexts}
    for _ in range(10):  # warm-up: binaries mapped, the supervisor built
        for ctx in contexts.values():
            shell.run(args, ctx)
    for i in range(runs):
        order = list(contexts.items())
        if i % 2:
            order.reverse()
        for name, ctx in order:
            started, spent = time.perf_counter(), cpu_ms()
            result = shell.run(args, ctx)
            samples[name].append((time.perf_counter() - started) * 1000)
            cpu[name].append(cpu_ms() - spent)
            assert result.item["exit_code"] == 0, result.output
    return samples, cpu


def confine_alone(runs: int, workspace: Path) -> list[float]:
    policy = Policy.build("workspace-write", workspace)
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        confine(policy, lambda: None)
        out.append((time.perf_counter() - started) * 1000)
    return out


def per_process(runs: int) -> tuple[list[float], list[float]]:
    """(load a verified build from _bin/ into a sealed memfd, compile into a memfd) in ms."""
    from baseagent.sandbox import supervisor

    loads: list[float] = []
    builds: list[float] = []
    if not hasattr(supervisor, "_build"):  # the code before issue 39
        return loads, builds
    for _ in range(runs):
        supervisor._resolved.clear()
        started = time.perf_counter()
        binary = supervisor.executable()
        loads.append((time.perf_counter() - started) * 1000)
        for fd in binary.fds if binary else ():
            os.close(fd)
    for _ in range(max(3, runs // 20)):
        started = time.perf_counter()
        supervisor._build()
        builds.append((time.perf_counter() - started) * 1000)
    supervisor._resolved.clear()
    return loads, builds


def per_run(runs: int, workspace: Path) -> list[float]:
    """Policy.build + the run's Landlock ruleset (with ~/.baseagent hidden), in ms."""
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        policy = Policy.build("workspace-write", workspace, env=os.environ)
        policy.ruleset()
        out.append((time.perf_counter() - started) * 1000)
        policy.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "SANDBOX_RESULTS.md")
    opts = parser.parse_args()
    if landlock.abi() < 1:
        print("no Landlock on this kernel: nothing to measure", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        samples, cpu = measure(opts.runs, Path(tmp))
        alone = confine_alone(opts.runs, Path(tmp))
        policies = per_run(max(20, opts.runs // 3), Path(tmp))
    loads, builds = per_process(max(20, opts.runs // 3))
    base = median(samples[SETUPS[1][0]])
    direct = median(samples[SETUPS[0][0]])
    lines = ["# Sandbox benchmark results", "",
             f"{dt.date.today().isoformat()}, {platform.machine()}, {os.cpu_count()} cores, "
             f"kernel {platform.release()} (Landlock ABI {landlock.abi()}), "
             f"load average {os.getloadavg()[0]:.1f} at the end; {opts.runs} runs per set-up.",
             "", "## Summary", ""]
    worst = max(median(samples[name]) - base for name, _, _ in SETUPS[2:])
    cpu_base = median(cpu[SETUPS[1][0]])
    cpu_worst = max(median(cpu[name]) - cpu_base for name, _, _ in SETUPS[2:])
    lines += [f"- The kernel sandbox adds **{worst:+.2f} ms** per command (median, worst "
              f"restricted mode, over supervised danger-full-access): target < 5 ms, "
              f"{'pass' if worst < 5 else 'miss'}.",
              f"- In CPU time (this process and the command's, which a neighbour's load "
              f"disturbs far less than wall time): the sandbox adds {cpu_worst:+.2f} ms per "
              "command (median, worst restricted mode).",
              f"- The supervisor adds {base - direct:+.2f} ms per command over starting bash "
              "directly.",
              f"- `confine()` alone (thread + Landlock + seccomp): median "
              f"{median(alone):.3f} ms, p90 {percentile(alone, 90):.3f} ms.",
              f"- Per run: the policy and its Landlock ruleset (`~/.baseagent` hidden), median "
              f"{median(policies):.3f} ms."]
    if loads:
        lines += [f"- Per process: the supervisor read from `_bin/` and checked against its "
                  f"SHA-256 into a sealed memfd, median {median(loads):.3f} ms; compiled into "
                  f"a memfd instead (no verified build), median {median(builds):.0f} ms."]
    lines += ["",
              "## Shell tool on `true`", "",
              "| set-up | median ms | p10 | p90 | vs supervised danger-full-access | "
              "CPU ms (median) | CPU vs supervised danger-full-access |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for name, _, _ in SETUPS:
        xs = samples[name]
        lines.append(f"| {name} | {median(xs):.2f} | {percentile(xs, 10):.2f} | "
                     f"{percentile(xs, 90):.2f} | {median(xs) - base:+.2f} | "
                     f"{median(cpu[name]):.2f} | {median(cpu[name]) - cpu_base:+.2f} |")
    lines += ["", "## Method", "", "\n\n".join((__doc__ or "").strip().split("\n\n")[2:]), "",
              "## Reproduce", "", "```", "python bench/sandbox_bench.py --runs 300", "```", ""]
    opts.out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
