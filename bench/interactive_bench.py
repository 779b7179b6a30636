"""Interactive-mode latencies, measured on a pseudo-terminal as a person meets them.

    python bench/interactive_bench.py [--runs 5] [--write]

- header: launch of `agent.py` (no instruction, on a pty) → the header's second line
  (`model ... workspace ... sandbox ...`) has arrived on the terminal. Target: < 0.3 s.
- first turn: Enter on the first instruction → the scripted server has the request's
  headers. It includes whatever is left of litellm's background import.
- second turn: Enter on the second instruction of the same session → the request's
  headers at the server. Target: < 100 ms.

The model is the scripted server (tests' stand-in provider) in this process, answering at
once, so the figures are the agent's own. Beside each wall time, the CPU time the agent
process used (all threads, from /proc, 10 ms ticks): on a shared machine whose load
average is several times its core count, wall times measure the queue for a core; the CPU
time is what the same work takes on a free core. `--write` writes bench/INTERACTIVE_RESULTS.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pexpect

REPO = Path(__file__).resolve().parent.parent
AGENT = REPO / "agent.py"
sys.path.insert(0, str(REPO / "src"))

from baseagent.testing.scripted_server import ScriptedServer  # noqa: E402

TIMEOUT = 120


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BASEAGENT_")}
    env.update({"HOME": str(home), "OPENAI_API_KEY": "sk-bench", "TERM": "xterm-256color",
                "PROMPT_TOOLKIT_NO_CPR": "1", "PYTHONPATH": str(REPO / "src")})
    return env


def _spawn(server: ScriptedServer, work: Path) -> tuple[pexpect.spawn, float]:
    started = time.perf_counter()
    child = pexpect.spawn(sys.executable, [str(AGENT), "--model", "openai/bench",
                                           "--api-base", server.api_base],
                          cwd=str(work), env=_env(work / "home"), dimensions=(40, 160),
                          timeout=TIMEOUT, encoding="utf-8")
    return child, started


def _cpu(pid: int) -> float:
    """CPU seconds (user + system, all threads) the process has used: on a shared, loaded
    machine this is what the wall time would be on an idle core (10 ms resolution)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_request(server: ScriptedServer, count: int) -> float:
    deadline = time.monotonic() + TIMEOUT
    while len(server.request_times) < count:
        if time.monotonic() > deadline:
            raise TimeoutError("the request never arrived")
        time.sleep(0.001)
    return server.request_times[count - 1]


def one_session() -> dict[str, float]:
    steps = [{"content": "One."}, {"content": "One verified."},
             {"content": "Two."}, {"content": "Two verified."}]
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(steps) as server:
        work = Path(tmp)
        (work / "home").mkdir()
        child, started = _spawn(server, work)
        child.expect("sandbox")  # the header's second line
        header = time.perf_counter() - started
        header_cpu = _cpu(child.pid)
        child.expect("› ")
        sent = time.time()
        child.send("first\r")
        first = _wait_request(server, 1) - sent
        child.expect("completed")
        child.expect("› ")
        time.sleep(0.3)  # a person reads the answer before typing the next instruction
        cpu_before = _cpu(child.pid)
        sent = time.time()
        child.send("second\r")
        second = _wait_request(server, 3) - sent
        second_cpu = _cpu(child.pid) - cpu_before
        child.expect("completed")
        child.expect("› ")
        child.sendeof()
        child.expect(pexpect.EOF)
        child.close()
    return {"header": header, "first": first, "second": second, "header_cpu": header_cpu,
            "second_cpu": second_cpu}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    runs = [one_session() for _ in range(args.runs)]
    load = os.getloadavg()
    rows = []
    for key, label, target in (
            ("header", "launch → header on screen (wall)", "< 0.3 s"),
            ("header_cpu", "  CPU the process used until then", "< 0.3 s"),
            ("first", "Enter → 1st turn's first request (wall)", "(the import)"),
            ("second", "Enter → 2nd turn's first request (wall)", "< 100 ms"),
            ("second_cpu", "  CPU the process used meanwhile", "< 100 ms")):
        values = sorted(r[key] for r in runs)
        rows.append(f"| {label} | {statistics.median(values) * 1000:.0f} ms | "
                    f"{values[0] * 1000:.0f}–{values[-1] * 1000:.0f} ms | {target} |")
    report = "\n".join([
        "| measure | median | range | target |", "|---|---:|---:|---|", *rows, "",
        f"{args.runs} sessions, {platform.machine()} {os.cpu_count()} cores, "
        f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} during the run.",
        "Command: `python bench/interactive_bench.py --runs "
        f"{args.runs} --write`."])
    print(report)
    if args.write:
        (REPO / "bench" / "INTERACTIVE_RESULTS.md").write_text(
            "# Interactive mode latencies\n\n" + (__doc__ or "").split("\n\n", 1)[1].rsplit(
                "\n\n", 1)[0] + "\n\n" + report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
