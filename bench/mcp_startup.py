"""Do MCP servers start while litellm imports? Spawn → first model request, with 0, 1 and 3
stdio servers configured, beside the time one server takes to come up on its own.

    python bench/mcp_startup.py [--repeats 5] [--write]

If servers started after the import, each configuration would add a server's start-up to
the first request; started in parallel with it, they add only what outlasts the import
(plus the CPU they take from it on a small machine). Runs are interleaved so load drifts
hit every configuration alike. --write updates bench/MCP_RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from baseagent.testing.scripted_server import ScriptedServer  # noqa: E402
from mcp_helpers import DEMO_SERVER, write_config  # noqa: E402

TIME_SERVER = {"command": sys.executable, "args": ["-m", "mcp_server_time"],
               "startup_timeout_sec": 120}
DEMO = {"command": sys.executable, "args": [str(DEMO_SERVER)], "startup_timeout_sec": 120}
CONFIGS = {
    "no MCP server": {},
    "1 server (mcp-server-time)": {"time": TIME_SERVER},
    "3 servers (time + 2 SDK servers)": {"time": TIME_SERVER, "a": DEMO, "b": DEMO},
}
CONNECT_ALONE = """
import asyncio, sys, time
t = time.time()
from mcp import Client, StdioServerParameters
async def main():
    async with Client(StdioServerParameters(command=sys.executable,
                                            args=["-m", "mcp_server_time"])) as c:
        await c.list_tools()
        print(time.time() - t)
asyncio.run(main())
"""


def first_request(servers: dict, work: Path) -> float:
    config = write_config(work / "config.toml", {"mcp_servers": servers} if servers else {})
    with ScriptedServer([{"content": "done"}]) as model:
        env = {**os.environ, "HOME": str(work), "OPENAI_API_KEY": "sk-bench"}
        started = time.time()
        proc = subprocess.run([sys.executable, str(ROOT / "agent.py"), "--model",
                               "openai/bench", "--api-base", model.api_base, "--no-verify",
                               "--no-session", "--config", str(config), "-i", "go"],
                              cwd=work, env=env, capture_output=True, timeout=300)
        if proc.returncode != 0:
            raise SystemExit(f"agent failed: {proc.stderr.decode()[-500:]}")
        if b'"type":"error"' in proc.stdout:
            raise SystemExit(f"a server failed: {proc.stdout.decode()[:500]}")
        return model.request_times[0] - started


def connect_alone() -> float:
    out = subprocess.run([sys.executable, "-c", CONNECT_ALONE], capture_output=True,
                         text=True, timeout=300, check=True)
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    samples: dict[str, list[float]] = {name: [] for name in CONFIGS}
    alone: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for _ in range(args.repeats):
            for name, servers in CONFIGS.items():
                samples[name].append(first_request(servers, work))
            alone.append(connect_alone())
    base = statistics.median(samples["no MCP server"])
    rows = [f"| {name} | {statistics.median(v):.2f} s | +{statistics.median(v) - base:.2f} s |"
            for name, v in samples.items()]
    load = os.getloadavg()[0]
    report = "\n".join([
        "# MCP servers at start-up", "",
        f"`python bench/mcp_startup.py --repeats {args.repeats}` "
        f"({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, load average {load:.1f} "
        "when it finished). Medians; spawn of `agent.py` to the first model request at the "
        "scripted server.", "",
        "| configuration | spawn → first request | over no server |", "|---|---|---|", *rows,
        "", f"One mcp-server-time alone (spawn, SDK import, handshake, tools/list, in a fresh "
        f"process): {statistics.median(alone):.2f} s.", "",
        "Raw samples (s): " + json.dumps({k: [round(x, 2) for x in v]
                                          for k, v in samples.items()}), ""])
    print(report)
    if args.write:
        (ROOT / "bench" / "MCP_RESULTS.md").write_text(report)


if __name__ == "__main__":
    main()
