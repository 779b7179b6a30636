"""Library benchmark: how fast a warm process reaches the model, and what an agent costs in
memory when several run at once in one process.

    python bench/library_bench.py [--runs 20] [--agents 1,2,4,8] [--out bench/LIBRARY_RESULTS.md]

1. Time to the model, warm: in one process, after a first run has imported litellm, each
   further `Agent(...).run()` (a new thread, as a batch worker makes one per task) and each
   further turn of the same agent (`agent.run()` again) is timed from the call to the
   arrival of its first request at the scripted server (the server stamps arrival when the
   request's headers are read).
2. Memory per concurrent agent: for K agents, a fresh process imports baseagent, runs one
   agent once (warm-up), then starts K agents in K threads whose model answers after a
   delay, so all K are alive at once with a command in their history; the peak RSS
   (VmHWM) of that process is recorded. The cost of an extra agent is the slope of peak
   RSS over K (least squares).

The targets (issue "An embeddable agent"): the second run() reaches the model in under
50 ms; each extra concurrent agent adds under 10 MB.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

TIME_TARGET_MS = 50.0
MEMORY_TARGET_MB = 10.0

# Runs in a fresh interpreter: prints one JSON object.
LATENCY_CHILD = textwrap.dedent("""
    import json, os, sys, tempfile, time
    from pathlib import Path
    from baseagent import Agent
    from baseagent.testing.scripted_server import ScriptedServer

    runs = int(sys.argv[1])
    server = ScriptedServer(lambda body, i: {"content": "ok"}).start()
    root = Path(tempfile.mkdtemp())
    common = dict(model="openai/bench", api_base=server.api_base, api_key="sk-bench",
                  verify=False, session=False)

    def timed(call):
        sent = len(server.request_times)
        start = time.time()
        result = call()
        assert result.ok, result.error
        return (server.request_times[sent] - start) * 1000

    first = timed(lambda: Agent(cwd=root, **common).run("warm up"))
    fresh, again = [], []
    agent = Agent(cwd=root, **common)
    agent.run("first turn")
    for n in range(runs):
        fresh.append(timed(lambda: Agent(cwd=root, **common).run(f"task {n}")))
        again.append(timed(lambda: agent.run(f"turn {n}")))
    server.stop()
    print(json.dumps({"first_ms": first, "fresh_ms": fresh, "same_agent_ms": again}))
""")

MEMORY_CHILD = textwrap.dedent("""
    import json, sys, tempfile, threading
    from pathlib import Path
    from baseagent import Agent
    from baseagent.testing.scripted_server import ScriptedServer

    def hwm_kib():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])

    agents_n = int(sys.argv[1])
    steps = {}
    def respond(body, index):
        tools = [m for m in body["messages"] if m["role"] == "tool"]
        if not tools:
            return {"tool_calls": [{"name": "shell",
                                    "arguments": {"command": "seq -f %099g 1 100"}}]}
        return {"content": "done", "delay": 1.0}
    server = ScriptedServer(respond).start()
    common = dict(model="openai/bench", api_base=server.api_base, api_key="sk-bench",
                  verify=False, session=False)
    root = Path(tempfile.mkdtemp())
    Agent(cwd=root, **common).run("warm up")
    base = hwm_kib()
    agents = [Agent(cwd=root, **common) for _ in range(agents_n)]
    results = [None] * agents_n
    def work(i):
        results[i] = agents[i].run(f"agent {i}")
    threads = [threading.Thread(target=work, args=(i,)) for i in range(agents_n)]
    for t in threads: t.start()
    for t in threads: t.join()
    assert all(r.ok for r in results), [r.error for r in results]
    server.stop()
    print(json.dumps({"agents": agents_n, "warm_kib": base, "peak_kib": hwm_kib()}))
""")


def child(code: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         env=env, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def slope(xs: list[float], ys: list[float]) -> float:
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--agents", default="1,2,4,8")
    parser.add_argument("--repeats", type=int, default=3, help="memory runs per K")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "LIBRARY_RESULTS.md")
    args = parser.parse_args()

    latency = child(LATENCY_CHILD, str(args.runs))
    fresh, same = latency["fresh_ms"], latency["same_agent_ms"]
    counts = [int(k) for k in args.agents.split(",")]
    memory: dict[int, list[dict]] = {k: [child(MEMORY_CHILD, str(k)) for _ in range(args.repeats)]
                                     for k in counts}
    peaks = {k: statistics.median(r["peak_kib"] for r in rs) / 1024 for k, rs in memory.items()}
    per_agent = slope([float(k) for k in counts], [peaks[k] for k in counts])

    cmd = f"python bench/library_bench.py --runs {args.runs} --agents {args.agents} " \
          f"--repeats {args.repeats}"
    verdict = lambda ok: "pass" if ok else "MISS"  # noqa: E731
    lines = [
        "# Library benchmark", "",
        f"`{cmd}` on {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}. Scripted model "
        "server in-process, zero model latency for the timing runs.", "",
        "| measure | median | min – max | target | verdict |", "|---|---|---|---|---|",
        f"| first run in a fresh process (imports the agent; litellm only on its route) | {latency['first_ms']:.0f} ms | | | |",
        f"| later `Agent(...).run()` in the same process → first request | "
        f"{statistics.median(fresh):.1f} ms | {min(fresh):.1f} – {max(fresh):.1f} ms | "
        f"< {TIME_TARGET_MS:.0f} ms | {verdict(statistics.median(fresh) < TIME_TARGET_MS)} |",
        f"| next turn of the same agent → first request | {statistics.median(same):.1f} ms | "
        f"{min(same):.1f} – {max(same):.1f} ms | < {TIME_TARGET_MS:.0f} ms | "
        f"{verdict(statistics.median(same) < TIME_TARGET_MS)} |",
        f"| peak RSS added per concurrent agent (slope over K = {args.agents}) | "
        f"{per_agent:.2f} MB | | < {MEMORY_TARGET_MB:.0f} MB | "
        f"{verdict(per_agent < MEMORY_TARGET_MB)} |", "",
        "| concurrent agents K | peak RSS (median of " + str(args.repeats) + ") |", "|---|---|",
        *[f"| {k} | {peaks[k]:.1f} MB |" for k in counts], "",
        "Each memory run: one warm-up run, then K agents in K threads, each running a `seq` "
        "command of 10 KB output and then waiting 1 s for the model's answer, so all K hold "
        "their history at the same time. Peak RSS is the process's VmHWM.", "",
    ]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
