"""Spawn to first model request three ways: the direct path, litellm, and a warm process.

    python bench/startup_paths.py [--runs 7]

The choice issue #26 asked to make with numbers (bench/README.md, "Reaching the first
request"): how a run gets its first request out fast.

- direct: `agent.py` as shipped, `openai/` model against the scripted server: the direct
  path (llm/route.py), litellm never imported.
- litellm: the same with BASEAGENT_MODEL_TRANSPORT=litellm: the first request waits for
  litellm's import (started in the background at once).
- warm fork: a resident process has imported litellm and the agent already; a run is a
  fork of it (what a warm daemon serving later runs would do, minus its client's own
  start-up and the socket in between, so a lower bound for that design). Timed from the
  moment the run is asked for to its first request; the resident process's RSS is shown.

Every process talks to one scripted server in this process; runs are interleaved.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT / "src")]

from baseagent.testing.scripted_server import ScriptedServer  # noqa: E402

WARM = r"""
import json, os, sys
sys.path.insert(0, SRC)  # this checkout, whatever is installed
sys.argv = ["baseagent"]
from baseagent.llm.client import load_litellm
load_litellm()
import baseagent.cli, baseagent.runner, baseagent.agent, baseagent.compose.builder
print("ready", flush=True)
for line in sys.stdin:
    argv = json.loads(line)
    pid = os.fork()
    if pid == 0:
        sys.argv = argv
        try:
            baseagent.cli.main()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    print("done", flush=True)
"""


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    server = ScriptedServer(lambda _b, _i: {"content": "Done."}).start()
    work = BENCH / ".cache" / "startup-paths"
    (work / "home").mkdir(parents=True, exist_ok=True)
    (work / "ws").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BASEAGENT_", "OPENAI_"))}
    env.update(HOME=str(work / "home"), OPENAI_API_KEY="dummy",
               LITELLM_LOCAL_MODEL_COST_MAP="True")
    argv = ["--json", "--no-verify", "--no-session", "--model", "openai/bench-model",
            "--api-base", server.api_base, "--cwd", str(work / "ws"), "-i", "hi"]
    warm = subprocess.Popen([sys.executable, "-c", f"SRC = {str(ROOT / 'src')!r}\n" + WARM], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            text=True, cwd=work)
    assert warm.stdout is not None and warm.stdin is not None
    warm.stdout.readline()
    warm_rss = rss_mb(warm.pid)
    times: dict[str, list[float]] = {"direct": [], "litellm": [], "warm fork": []}

    def first_after(t0: float, before: int) -> float:
        deadline = time.time() + 60
        while time.time() < deadline:
            arrived = server.request_times[before:]
            if arrived:
                return arrived[0] - t0
            time.sleep(0.002)
        raise RuntimeError("no request")

    for _ in range(args.runs):
        for name in times:
            before = len(server.request_times)
            t0 = time.time()
            if name == "warm fork":
                warm.stdin.write(json.dumps(["baseagent", *argv]) + "\n")
                warm.stdin.flush()
                times[name].append(first_after(t0, before))
                warm.stdout.readline()
                continue
            run_env = dict(env, **({"BASEAGENT_MODEL_TRANSPORT": "litellm"}
                                   if name == "litellm" else {}))
            proc = subprocess.Popen([sys.executable, str(ROOT / "agent.py"), *argv],
                                    env=run_env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, cwd=work)
            times[name].append(first_after(t0, before))
            proc.wait()
    warm.stdin.close()
    warm.wait()
    server.stop()
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f}")
    for name, values in times.items():
        print(f"{name:10s} spawn to first request: median {statistics.median(values):.3f} s "
              f"(min {min(values):.3f}, max {max(values):.3f}, n={len(values)})")
    print(f"warm process resident (litellm and the agent imported): {warm_rss:.0f} MB RSS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
