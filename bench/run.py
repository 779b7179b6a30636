"""Regenerate bench/RESULTS.md: startup, per-step overhead and memory, ours beside the peer.

    python bench/run.py                 # everything, peer included (~10-15 min on 2 cores)
    python bench/run.py --no-peer       # baseagent only
    python bench/run.py --smoke --no-peer --out /tmp/R.md   # N=5, one run each (the test)

Every figure comes from processes launched here against the scripted model server running
in this process (zero model latency). The method is written into RESULTS.md itself.
"""
from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent / "src")]

import agents  # noqa: E402
import harness  # noqa: E402
import report  # noqa: E402
from stats import median  # noqa: E402

# `true` is the cheapest possible tool call: what is left of a step is the agent itself.
STEP_COMMAND = "true"
# 100 lines of 100 bytes: exactly 10,000 bytes of tool output per step.
BIG_OUTPUT_COMMAND = "seq -f %099g 1 100"
OUT_DIR = BENCH / "out"
SPAWN_CALIBRATION_RUNS = 20
# The bare-import floor; the child prints when the import has finished.
IMPORT_PROBE = "import litellm, time; print(repr(time.time()))"


@dataclass
class Plan:
    """How many runs of what. The full plan is sized to fit 15 minutes on 2 cores with the
    peer (each process pays ~7 s for `import litellm`; the peer's 500-step runs dominate)."""

    steps: tuple[int, ...] = (10, 100, 500)
    session_runs: tuple[int, ...] = (3, 2, 1)   # runs per agent for each entry of `steps`
    memory_steps: int = 500
    import_runs: int = 5
    help_runs_ours: int = 10
    help_runs_peer: int = 3
    floor_sizes: tuple[int, ...] = (0, 100, 500)
    floor_calls: int = 5

    @classmethod
    def smoke(cls) -> "Plan":
        return cls(steps=(5,), session_runs=(1,), memory_steps=5, import_runs=1,
                   help_runs_ours=2, help_runs_peer=1, floor_sizes=(0, 5), floor_calls=2)


class Bench:
    def __init__(self, plan: Plan, with_peer: bool, work: Path) -> None:
        self.plan = plan
        self.with_peer = with_peer
        self.work = work
        self.started = time.monotonic()
        self.home = work / "home"
        self.home.mkdir()

    def log(self, message: str) -> None:
        print(f"[{time.monotonic() - self.started:6.1f}s] {message}", file=sys.stderr, flush=True)

    def agents(self) -> list[agents.Agent]:
        return [agents.ours()] + ([agents.peer()] if self.with_peer else [])

    def env(self, agent: agents.Agent | None = None) -> dict[str, str]:
        return agents.base_env(self.home) | (agent.extra_env if agent else {})

    # -- startup -----------------------------------------------------------------------------

    def startup(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        py = sys.executable
        self.log("startup: bare interpreter and bare `import litellm`")
        out["python"] = _walls(harness.timed_runs([py, "-c", "pass"], env=self.env(),
                                                  cwd=self.work, repeats=self.plan.help_runs_ours))
        runs = [harness.run_process([py, "-c", IMPORT_PROBE], env=self.env(), cwd=self.work,
                                    timeout=120) for _ in range(self.plan.import_runs)]
        out["import_litellm"] = _walls(runs)
        # Spawn to "import finished" (the child stamps it): the moment comparable to the first
        # request, without the interpreter's teardown that the wall time also contains.
        out["import_litellm"]["imported_s"] = median(
            [float(r.lines[-1][1]) - r.started for r in runs if r.lines])
        for agent in self.agents():
            runs = self.plan.help_runs_ours if agent.name == "baseagent" else self.plan.help_runs_peer
            self.log(f"startup: {agent.name} --help x{runs}")
            results = harness.timed_runs(agent.help_cmd, env=self.env(agent), cwd=self.work,
                                         repeats=runs)
            out[f"help:{agent.name}"] = _walls(results)
        out["help_imports_litellm"] = _imports_litellm(agents.ours().help_cmd, self.env(), self.work)
        return out

    # -- sessions ----------------------------------------------------------------------------

    def session(self, agent: agents.Agent, steps: int, command: str) -> dict[str, Any]:
        """One scripted session: `steps` tool calls of `command`, then the agent's ending."""
        workdir = Path(tempfile.mkdtemp(prefix=f"{agent.name}-", dir=self.work))
        spawn_argv, spawn_shell = agent.spawn
        tool_s = harness.spawn_cost(spawn_argv, shell=spawn_shell, cwd=workdir,
                                    repeats=SPAWN_CALIBRATION_RUNS)
        server = harness.TimedServer(agent.responder(steps, command)).start()
        try:
            argv = agent.session_cmd(server.api_base, steps, workdir)
            proc = harness.run_process(argv, env=self.env(agent), cwd=workdir,
                                       keep_lines=agent.name == "baseagent",
                                       stderr_path=workdir / "stderr.txt")
        finally:
            server.stop()
        ex = sorted((e for e in server.exchanges if e.done), key=lambda e: e.entered)
        own, srv = [], []
        for k in range(len(ex) - 1):
            if ex[k].kind == "step":
                own.append((ex[k + 1].entered - ex[k].done - tool_s) * 1000)
                srv.append((ex[k].done - ex[k].entered) * 1000)
        served = sum(1 for e in ex if e.kind == "step")
        ok = proc.returncode == 0 and served == steps and not proc.timed_out
        record = {
            "agent": agent.name, "steps": steps, "command": command, "argv": argv,
            "ok": ok, "returncode": proc.returncode, "timed_out": proc.timed_out,
            "steps_served": served, "requests": len(ex),
            "other_requests": sum(1 for e in ex if e.kind == "other"),
            "wall_s": proc.wall, "maxrss_mb": proc.maxrss_kb / 1024,
            "ttfr_s": (ex[0].entered - proc.started) if ex else None,
            "tool_ms": tool_s * 1000, "own_ms": own, "server_ms": srv,
            "stream_tool_ms": _stream_tool_ms(proc.lines),
            "stderr_tail": "" if ok else proc.stderr[-1500:],
        }
        state = "ok" if ok else f"FAILED rc={proc.returncode} served={served}/{steps}"
        self.log(f"  {agent.name} N={steps} {command!r}: {state}, wall {proc.wall:.1f}s, "
                 f"median own {_fmt(median(own))} ms, peak RSS {record['maxrss_mb']:.0f} MB")
        return record

    def sessions(self) -> list[dict[str, Any]]:
        records = []
        for steps, runs in zip(self.plan.steps, self.plan.session_runs):
            for run in range(runs):
                for agent in self.agents():  # interleaved: both see the same machine state
                    self.log(f"session {agent.name} N={steps} run {run + 1}/{runs}")
                    records.append(self.session(agent, steps, STEP_COMMAND))
        return records

    def memory(self) -> list[dict[str, Any]]:
        """The agents' memory sessions run side by side: peak RSS does not depend on how fast
        a session goes, and the peer's 500 steps are the longest part of the whole bench.
        Their timings are therefore not reported."""
        jobs = self.agents()
        self.log(f"memory: {', '.join(a.name for a in jobs)} in parallel, "
                 f"N={self.plan.memory_steps} with 10 KB outputs")
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            futures = [pool.submit(self.session, a, self.plan.memory_steps, BIG_OUTPUT_COMMAND)
                       for a in jobs]
            return [f.result() for f in futures]

    # -- the litellm floor -------------------------------------------------------------------

    def floor(self) -> dict[str, Any]:
        self.log("litellm floor: bare litellm.completion() per call, in its own process")
        argv = [sys.executable, str(BENCH / "litellm_floor.py"),
                "--sizes", ",".join(map(str, self.plan.floor_sizes)),
                "--calls", str(self.plan.floor_calls)]
        proc = subprocess.run(argv, env=self.env(), cwd=self.work, capture_output=True,
                              text=True, timeout=600, check=False)
        if proc.returncode != 0:
            return {"error": proc.stderr[-1500:]}
        return json.loads(proc.stdout.strip().splitlines()[-1])


def _walls(results: list[harness.ProcResult]) -> dict[str, Any]:
    walls = [r.wall for r in results]
    return {"runs": len(walls), "median_s": median(walls), "min_s": min(walls),
            "max_s": max(walls), "ok": all(r.returncode == 0 for r in results),
            "maxrss_mb": median([r.maxrss_kb / 1024 for r in results])}


def _imports_litellm(argv: list[str], env: dict[str, str], cwd: Path) -> bool:
    """Does this command import litellm at all? (python -X importtime lists every import)."""
    proc = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], env=env, cwd=cwd,
                          capture_output=True, text=True, check=False)
    return any(line.split("|")[-1].strip() == "litellm" for line in proc.stderr.splitlines())


def _stream_tool_ms(lines: list[tuple[float, str]]) -> list[float]:
    """Shell tool time as our JSONL stream shows it: item.started -> item.completed."""
    started: dict[str, float] = {}
    out = []
    for stamp, line in lines:
        if '"command_execution"' not in line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        item = event.get("item") or {}
        if event.get("type") == "item.started":
            started[item.get("id", "")] = stamp
        elif event.get("type") == "item.completed" and item.get("id") in started:
            out.append((stamp - started.pop(item["id"])) * 1000)
    return out


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem_gb = round(kb / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    import importlib.metadata as md

    return {"date": time.strftime("%Y-%m-%d %H:%M %Z"), "cpu": cpu, "cores": os.cpu_count(),
            "mem_gb": mem_gb, "os": platform.platform(), "python": platform.python_version(),
            "litellm": md.version("litellm"), "openai": md.version("openai"),
            "loadavg": os.getloadavg()}


def precompile() -> dict[str, Any]:
    """Bytecode for our sources, as any installed copy has after its first run.

    PYTHONDONTWRITEBYTECODE stops Python from caching it on its own; pip compiled the
    peer's and litellm's at install time, so without this only our code would be parsed
    from source on every start.
    """
    src = BENCH.parent / "src" / "baseagent"
    ok = compileall.compile_dir(str(src), quiet=1, force=False)
    import importlib.util

    spec = importlib.util.find_spec("litellm")
    origin = Path(spec.origin) if spec and spec.origin else None
    has_pyc = bool(origin and Path(importlib.util.cache_from_source(str(origin))).exists())
    return {"src_compiled": bool(ok), "litellm_has_bytecode": has_pyc}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="N=5, one run of each (a test)")
    parser.add_argument("--no-peer", action="store_true", help="skip mini-swe-agent")
    parser.add_argument("--out", type=Path, default=BENCH / "RESULTS.md")
    parser.add_argument("--json", type=Path, default=None,
                        help="raw results [default: bench/out/results.json]")
    parser.add_argument("--steps", help="session lengths, e.g. 10,100,500")
    parser.add_argument("--runs", help="runs per agent for each session length, e.g. 3,2,1")
    args = parser.parse_args(argv)
    plan = Plan.smoke() if args.smoke else Plan()
    if args.steps:
        plan.steps = tuple(int(x) for x in args.steps.split(","))
        plan.memory_steps = max(plan.steps)
    if args.runs:
        plan.session_runs = tuple(int(x) for x in args.runs.split(","))
    if len(plan.session_runs) != len(plan.steps):
        parser.error("--runs needs one count per entry of --steps")
    results: dict[str, Any] = {"plan": plan.__dict__, "smoke": args.smoke,
                               "spawn_runs": SPAWN_CALIBRATION_RUNS,
                               "command": "python bench/run.py " + " ".join(argv or sys.argv[1:])}
    with tempfile.TemporaryDirectory(prefix="baseagent-bench-") as tmp:
        bench = Bench(plan, with_peer=not args.no_peer, work=Path(tmp))
        results["machine"] = machine()
        results["bytecode"] = precompile()
        if bench.with_peer:
            bench.log("peer: checking bench/.peer-venv")
            results["peer"] = dict(zip(("mini-swe-agent", "litellm"), agents.ensure_peer(bench.log)))
        steps: list[tuple[str, Callable[[], Any]]] = [
            ("startup", bench.startup), ("sessions", bench.sessions),
            ("memory", bench.memory), ("floor", bench.floor)]
        for key, fn in steps:
            results[key] = fn()
        results["machine"]["loadavg_end"] = os.getloadavg()
        results["elapsed_s"] = time.monotonic() - bench.started
    json_path = args.json or OUT_DIR / "results.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report.render(results), encoding="utf-8")
    bench.log(f"wrote {args.out} and {json_path}")
    failed = [s for s in results["sessions"] + results["memory"] if not s["ok"]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
