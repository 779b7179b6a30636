"""baseagent beside OpenAI Codex CLI 0.169.0 on the same scripted work; writes CODEX_RESULTS.md.

    python bench/codex_bench.py                 # ~10 min on 2 cores, once the machine is quiet
    python bench/codex_bench.py --steps 0,20 --repeats 1 --out /tmp/C.md   # a quick look

Both agents run as black boxes against a model server in this process with zero latency:
Codex (its npm launcher, and its native binary) against bench/fake_responses.py (the
Responses API), baseagent against its scripted server (chat completions, `openai/` model:
the direct path). The work is the same for both: N shell steps `echo step-<i>`, then a
final answer. Codex comes from npm into a throwaway prefix (bench/.cache/codex/, git-
ignored); every run gets a clean HOME, and Codex a CODEX_HOME whose config points it at the
fake server with plugins and analytics off (otherwise it reaches for GitHub and
chatgpt.com at start-up).

Per run, from outside the process: spawn to the first model request (server arrival
time), total wall time, the gaps between requests, and `/usr/bin/time -v`'s peak RSS and
user+sys CPU (of the process and the children it waited for). Runs are interleaved
(repeat > N > agent, the agent order rotating per repeat). Timing needs a quiet machine:
before each run the bench waits until no llama-server runs and the 1-minute load is below
--max-load (it records the load of every run).
"""
from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(BENCH), str(ROOT / "src")]

from fake_responses import FakeResponses  # noqa: E402

from baseagent.testing.scripted_server import ScriptedServer  # noqa: E402

CODEX_VERSION = "0.169.0"
CACHE = BENCH / ".cache" / "codex"
PREFIX = CACHE / "npm"
CODEX_NPM = PREFIX / "node_modules" / ".bin" / "codex"
CODEX_NATIVE = (PREFIX / "node_modules" / "@openai" / "codex-linux-x64" / "vendor" /
                "x86_64-unknown-linux-musl" / "bin" / "codex")
PROMPT = "Run the scripted shell steps."
COMMAND = "echo step-{step}"
VARIANTS = ("codex-npm", "codex-native", "baseagent")
BASELINE = "baseagent-base"  # another checkout of baseagent (--baseline), e.g. before a change
CODEX_CONFIG = """model = "gpt-5.5"
model_provider = "fake"

[model_providers.fake]
name = "fake"
base_url = "{base_url}"
wire_api = "responses"
env_key = "FAKE_KEY"

[features]
plugins = false

[analytics]
enabled = false
"""
# Targets of the issue that asked for this bench (#26), as ratios baseagent / Codex.
TARGETS = {"first_request_s": 0.5, "first_request_ratio": 3.0, "per_step_ratio": 0.35,
           "rss_ratio": 1.2, "cpu20_ratio": 1.5, "flat": 1.15, "growth_kb": 15.0}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def install_codex() -> None:
    if CODEX_NATIVE.exists() and CODEX_NPM.exists():
        return
    log(f"installing @openai/codex@{CODEX_VERSION} into {PREFIX}")
    PREFIX.mkdir(parents=True, exist_ok=True)
    subprocess.run(["npm", "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund",
                    f"@openai/codex@{CODEX_VERSION}"], check=True)


def quiet(max_load: float, max_wait: float) -> tuple[float, bool]:
    """Wait until no llama-server runs and the 1-minute load is below `max_load` (at most
    `max_wait` seconds). Returns (the load then, whether it was quiet)."""
    deadline = time.monotonic() + max_wait
    while True:
        busy = subprocess.run(["pgrep", "-f", "llama-server"], capture_output=True).returncode == 0
        load = os.getloadavg()[0]
        if not busy and load < max_load:
            return load, True
        if time.monotonic() > deadline:
            return load, False
        time.sleep(10)


def parse_time(path: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in path.read_text().splitlines():
        key, _, value = line.strip().rpartition(": ")
        if key == "Maximum resident set size (kbytes)":
            out["maxrss_kb"] = int(value)
        elif key == "User time (seconds)":
            out["user_s"] = float(value)
        elif key == "System time (seconds)":
            out["sys_s"] = float(value)
    return out


class Bench:
    def __init__(self, work: Path, max_load: float, max_wait: float,
                 baseline: Path | None = None) -> None:
        self.work = work
        self.baseline = baseline
        self.max_load, self.max_wait = max_load, max_wait
        self.fake = FakeResponses(command=COMMAND).start()
        self.steps = 0
        self.scripted = ScriptedServer(self._respond).start()
        self.codex_home = work / "codex-home"
        self.codex_home.mkdir(parents=True)
        (self.codex_home / "config.toml").write_text(
            CODEX_CONFIG.format(base_url=self.fake.base_url), encoding="utf-8")

    def _respond(self, body: dict, _index: int) -> dict:
        done = sum(1 for m in body.get("messages") or [] if m.get("role") == "tool")
        if done < self.steps:
            return {"tool_calls": [{"name": "shell",
                                    "arguments": {"command": COMMAND.format(step=done + 1)}}]}
        return {"content": "All steps done."}

    def argv(self, variant: str, ws: Path, steps: int) -> list[str]:
        codex_args = ["exec", "--json", "--skip-git-repo-check",
                      "--dangerously-bypass-approvals-and-sandbox", "-C", str(ws), PROMPT]
        if variant == "codex-npm":
            return [str(CODEX_NPM), *codex_args]
        if variant == "codex-native":
            return [str(CODEX_NATIVE), *codex_args]
        root = self.baseline if variant == BASELINE and self.baseline else ROOT
        return [sys.executable, str(root / "agent.py"), "--json", "--no-verify",
                "--model", "openai/bench-model", "--api-base", self.scripted.api_base,
                "--cwd", str(ws), "--max-iterations", str(steps + 10), "--instruction", PROMPT]

    def env(self, home: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OPENAI_", "CODEX_", "BASEAGENT_", "LITELLM_", "RUST_LOG",
                                    "ANTHROPIC_"))}
        env.update(HOME=str(home), CODEX_HOME=str(self.codex_home), FAKE_KEY="dummy",
                   OPENAI_API_KEY="dummy")
        return env

    def run(self, variant: str, steps: int, tag: str) -> dict[str, Any]:
        load, was_quiet = quiet(self.max_load, self.max_wait)
        self.steps = self.fake.steps = steps
        run_dir = self.work / "runs" / f"{tag}-{variant}-{steps}"
        home, ws = run_dir / "home", run_dir / "ws"
        home.mkdir(parents=True)
        ws.mkdir()
        time_file = run_dir / "time.txt"
        out_file = run_dir / "stdout.jsonl"
        argv = ["/usr/bin/time", "-v", "-o", str(time_file), *self.argv(variant, ws, steps)]
        scripted_before = len(self.scripted.request_times)
        with open(out_file, "wb") as out, open(run_dir / "stderr.txt", "wb") as err:
            t0 = time.time()
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                  env=self.env(home), cwd=ws, timeout=1800)
            t1 = time.time()
        if variant.startswith("codex"):
            arrivals, answers = self.fake.since(t0), self.fake.answers_since(t0)
        else:
            arrivals = self.scripted.request_times[scripted_before:]
            answers = self.scripted.answer_times[scripted_before:]
        events = [json.loads(line) for line in out_file.read_text().splitlines()
                  if line.startswith("{")]
        commands = [e for e in events if e.get("type") == "item.completed"
                    and e["item"].get("type") == "command_execution"
                    and e["item"].get("exit_code") == 0]
        answered = any(e.get("type") == "item.completed"
                       and e["item"].get("type") == "agent_message" for e in events)
        ok = (proc.returncode == 0 and len(arrivals) == steps + 1 and len(commands) == steps
              and answered)
        result: dict[str, Any] = {
            "variant": variant, "steps": steps, "tag": tag, "ok": ok, "rc": proc.returncode,
            "requests": len(arrivals), "load": round(load, 2), "quiet": was_quiet,
            "first_request_s": arrivals[0] - t0 if arrivals else None, "total_s": t1 - t0,
            "gaps_s": [b - a for a, b in zip(arrivals, arrivals[1:])],
            # from an answer written to the next request's arrival: the agent's side alone
            "agent_gaps_s": [b - a for a, b in zip(answers, arrivals[1:]) if a is not None],
            **parse_time(time_file)}
        result["cpu_s"] = result.get("user_s", 0.0) + result.get("sys_s", 0.0)
        if steps and result["first_request_s"] is not None:
            result["per_step_s"] = (result["total_s"] - result["first_request_s"]) / steps
        shutil.rmtree(run_dir)
        if not ok:
            log(f"NOT OK: {variant} N={steps} rc={proc.returncode} requests={len(arrivals)} "
                f"commands={len(commands)}")
        return result


def _commit(root: Path) -> str:
    """The checkout's commit (short), or "?" outside git."""
    try:
        return subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians per (variant, steps), and the derived figures."""
    out: dict[str, Any] = {}
    for variant in (*VARIANTS, BASELINE):
        mine = [r for r in runs if r["variant"] == variant and r["ok"]]
        if not mine:
            continue
        by_n: dict[int, dict[str, Any]] = {}
        for n in sorted({r["steps"] for r in mine}):
            rs = [r for r in mine if r["steps"] == n]
            gaps = [g for r in rs for g in r["gaps_s"]]
            late = [g for r in rs for g in r["gaps_s"][-max(1, len(r["gaps_s"]) // 10):]]
            agent_gaps = [g for r in rs for g in r.get("agent_gaps_s", [])]
            by_n[n] = {"runs": len(rs),
                       "first_request_s": median([r["first_request_s"] for r in rs]),
                       "total_s": median([r["total_s"] for r in rs]),
                       "per_step_s": median([r.get("per_step_s") for r in rs]),
                       "gap_s": median(gaps), "late_gap_s": median(late),
                       "agent_gap_s": median(agent_gaps),
                       "cpu_s": median([r["cpu_s"] for r in rs]),
                       "maxrss_kb": median([r.get("maxrss_kb") for r in rs]),
                       "load": median([r["load"] for r in rs])}
        # CPU per step from paired runs (the N-step run minus the 0-step run of the same
        # repeat, median over repeats): the difference at N=50 is a few tenths of a second
        # on a base of ~0.4 s, so unpaired medians let drift between repeats show as growth.
        base_by_tag = {r["tag"]: r["cpu_s"] for r in mine if r["steps"] == 0}
        for n, s in by_n.items():
            pairs = [(r["cpu_s"] - base_by_tag[r["tag"]]) / n for r in mine
                     if n and r["steps"] == n and r["tag"] in base_by_tag]
            if pairs:
                s["cpu_per_step_s"] = median(pairs)
        out[variant] = {"by_steps": by_n,
                        "first_request_s": median([r["first_request_s"] for r in mine])}
    return out


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def fmt(value: float | None, unit: str = "", scale: float = 1.0, digits: int = 3) -> str:
    if value is None:
        return "–"
    return f"{value * scale:.{digits}g}{unit}"


def render(results: dict[str, Any]) -> str:
    s = results["summary"]
    ours, codex = s.get("baseagent", {}), s.get("codex-npm", {})
    native = s.get("codex-native", {})

    def at(side: dict[str, Any], n: int, key: str) -> float | None:
        return side.get("by_steps", {}).get(n, {}).get(key)

    rows = []

    def row(name: str, mine: float | None, theirs: float | None, unit: str, scale: float,
            target: str, passed: bool | None, theirs_native: float | None = None) -> None:
        verdict = "–" if passed is None else ("PASS" if passed else "MISS")
        rows.append(f"| {name} | {fmt(theirs, unit, scale)} | {fmt(theirs_native, unit, scale)} "
                    f"| {fmt(mine, unit, scale)} | {fmt(ratio(mine, theirs), 'x', 1, 3)} "
                    f"| {target} | {verdict} |")

    first, first_c = ours.get("first_request_s"), codex.get("first_request_s")
    row("spawn to first model request", first, first_c, " s", 1,
        f"≤ {TARGETS['first_request_s']} s and ≤ {TARGETS['first_request_ratio']}x",
        None if first is None or first_c is None else
        first <= TARGETS["first_request_s"] and first / first_c <= TARGETS["first_request_ratio"],
        native.get("first_request_s"))
    for n in (100, 500):
        mine, theirs = at(ours, n, "per_step_s"), at(codex, n, "per_step_s")
        r = ratio(mine, theirs)
        row(f"per step, {n} steps", mine, theirs, " ms", 1000,
            f"≤ {TARGETS['per_step_ratio']}x", None if r is None else r <= TARGETS["per_step_ratio"],
            at(native, n, "per_step_s"))
    mine, theirs = at(ours, 100, "maxrss_kb"), at(codex, 100, "maxrss_kb")
    r = ratio(mine, theirs)
    row("peak RSS, 100 steps", mine, theirs, " MB", 1 / 1024, f"≤ {TARGETS['rss_ratio']}x",
        None if r is None else r <= TARGETS["rss_ratio"], at(native, 100, "maxrss_kb"))
    mine, theirs = at(ours, 20, "cpu_s"), at(codex, 20, "cpu_s")
    r = ratio(mine, theirs)
    row("CPU (user+sys), 20 steps", mine, theirs, " s", 1, f"≤ {TARGETS['cpu20_ratio']}x",
        None if r is None else r <= TARGETS["cpu20_ratio"], at(native, 20, "cpu_s"))

    flat = []
    for side_name, side in (("baseagent", ours), ("Codex (npm)", codex)):
        gap50, gap500 = at(side, 50, "gap_s"), at(side, 500, "gap_s")
        own50, own500 = at(side, 50, "agent_gap_s"), at(side, 500, "agent_gap_s")
        cpu50, cpu500 = at(side, 50, "cpu_per_step_s"), at(side, 500, "cpu_per_step_s")
        rss100, rss500 = at(side, 100, "maxrss_kb"), at(side, 500, "maxrss_kb")
        growth = (rss500 - rss100) / 400 if rss100 is not None and rss500 is not None else None
        flat.append(f"| {side_name} | {fmt(gap50, ' ms', 1000)} | {fmt(gap500, ' ms', 1000)} "
                    f"| {fmt(ratio(gap500, gap50), 'x')} | {fmt(at(side, 500, 'late_gap_s'), ' ms', 1000)} "
                    f"| {fmt(own50, ' ms', 1000)} | {fmt(own500, ' ms', 1000)} "
                    f"| {fmt(ratio(own500, own50), 'x')} "
                    f"| {fmt(cpu50, ' ms', 1000)} | {fmt(cpu500, ' ms', 1000)} "
                    f"| {fmt(ratio(cpu500, cpu50), 'x')} | {fmt(growth, ' KB', 1)} |")

    base = s.get(BASELINE)
    before_after = []
    if base:
        for name, n, key, unit, scale in (
                ("spawn to first model request", None, "first_request_s", " s", 1),
                ("per step, 100 steps", 100, "per_step_s", " ms", 1000),
                ("per step, 500 steps", 500, "per_step_s", " ms", 1000),
                ("agent side of a step, 500 steps", 500, "agent_gap_s", " ms", 1000),
                ("CPU (user+sys), 20 steps", 20, "cpu_s", " s", 1),
                ("peak RSS, 100 steps", 100, "maxrss_kb", " MB", 1 / 1024)):
            now = ours.get(key) if n is None else at(ours, n, key)
            then = base.get(key) if n is None else at(base, n, key)
            before_after.append(f"| {name} | {fmt(then, unit, scale)} | {fmt(now, unit, scale)} "
                                f"| {fmt(ratio(now, then), 'x')} |")

    detail = []
    for variant in (*VARIANTS, BASELINE):
        for n, v in sorted(s.get(variant, {}).get("by_steps", {}).items()):
            detail.append(f"| {variant} | {n} | {v['runs']} | {fmt(v['first_request_s'], ' s')} "
                          f"| {fmt(v['total_s'], ' s')} | {fmt(v['per_step_s'], ' ms', 1000)} "
                          f"| {fmt(v['gap_s'], ' ms', 1000)} | {fmt(v['late_gap_s'], ' ms', 1000)} "
                          f"| {fmt(v['cpu_s'], ' s')} | {fmt(v['maxrss_kb'], ' MB', 1 / 1024)} "
                          f"| {fmt(v['load'], '', 1, 2)} |")
    m = results["machine"]
    bad = [r for r in results["runs"] if not r["ok"]]
    loud = [r for r in results["runs"] if not r["quiet"]]
    lines = [
        "# baseagent beside Codex CLI",
        "",
        f"Generated by `{results['command']}` on {m['date']} in "
        f"{results['elapsed_s'] / 60:.1f} min. Method: bench/codex_bench.py's docstring and "
        "the notes below.",
        "",
        f"- Machine: {m['cpu']}, {m['cores']} cores; {m['os']}; Python {m['python']}",
        f"- Codex CLI {CODEX_VERSION} (npm launcher `codex`, and its native binary); "
        f"baseagent {m['baseagent']} (`openai/` model against the scripted server: the "
        "direct path)",
        f"- Load average (1 min) at start / end: {m['loadavg'][0]:.2f} / "
        f"{m['loadavg_end'][0]:.2f}; per run: median {median([r['load'] for r in results['runs']]):.2f}, "
        f"max {max(r['load'] for r in results['runs']):.2f}; runs started while not quiet "
        f"(a llama-server up, or load ≥ {results['max_load']}): {len(loud)}",
        f"- Runs: {len(results['runs'])}, failed: {len(bad)}",
        "",
        "## Targets (ratios are baseagent ÷ Codex's npm launcher, medians of the runs)",
        "",
        "| measure | Codex (npm) | Codex (native) | baseagent | ratio | target | verdict |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        "## Flat per-step cost (history grows by one step each)",
        "",
        "Per step = median gap between consecutive model requests (the agent's whole step: "
        "answer parsed, command run, next request built and sent, plus the server's time, "
        "which grows with the history: each server parses the whole request); agent side = "
        "median time from the server having written its answer to the next request's "
        "arrival (the server's time left out); "
        "CPU per step = median over repeats of (CPU of the N-step run - CPU of the 0-step run of the same repeat) / N (9 repeats at 0 and 50 steps, where that difference is smallest); memory growth = "
        "(peak RSS at 500 steps - at 100) / 400. Targets for baseagent: 500 steps within "
        f"{TARGETS['flat']}x of 50, growth ≤ {TARGETS['growth_kb']:g} KB per step.",
        "",
        "| agent | per step, 50 | per step, 500 | 500 ÷ 50 | last 10% of 500 "
        "| agent side, 50 | agent side, 500 | 500 ÷ 50 | CPU/step, 50 "
        "| CPU/step, 500 | 500 ÷ 50 | RSS growth per step |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        *flat,
        "",
        *([f"## Before and after: this checkout beside `--baseline` ({results.get('baseline')})",
           "",
           "The same runs, interleaved with the others; medians. After ÷ before below 1 is "
           "faster or smaller.",
           "",
           "| measure | before (baseline) | after (this checkout) | after ÷ before |",
           "|---|---|---|---|",
           *before_after, ""] if before_after else []),
        "## Every session length (medians)",
        "",
        "| agent | N | runs | first request | total | (total - first) / N | gap | last-10% gap "
        "| CPU | peak RSS | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *detail,
        "",
        "## Notes",
        "",
        "- The same work for both: N tool calls running `echo step-<i>` through each agent's "
        "shell tool, then a final answer; baseagent with `--no-verify` (Codex has no "
        "verification round) and its other defaults (session record on); Codex with "
        "`exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox` "
        "(baseagent's default sandbox is off too).",
        "- Peak RSS and CPU are `/usr/bin/time -v`'s: the process and the children it "
        "waited for (for the npm launcher: node and the native codex it starts; the peak is "
        "the larger of the two, CPU their sum).",
        "- Per step in the targets table is the issue's definition: (total wall - spawn to "
        "first request) / N, so it includes the final answer and the exit.",
        "",
        "## Commands",
        "",
        *[f"- {v}: `{' '.join(results['argv'][v])}`" for v in (*VARIANTS, BASELINE) if v in results["argv"]],
        "",
    ]
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    import baseagent
    from run import machine as run_machine  # the machine as bench/run.py reports it

    return {**run_machine(), "baseagent": baseagent.__version__}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="0,20,50,100,500",
                        help="session lengths (0: the answer alone, the CPU baseline)")
    parser.add_argument("--repeats", default="9,5,9,5,3",
                        help="runs per agent for each session length")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--max-load", type=float, default=1.0,
                        help="wait before each run until the 1-min load is below this")
    parser.add_argument("--max-wait", type=float, default=1800,
                        help="seconds to wait for quiet before running anyway (recorded)")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another checkout of baseagent run beside this one (variant "
                             f"{BASELINE}), to show a change's effect in the same run")
    parser.add_argument("--out", type=Path, default=BENCH / "CODEX_RESULTS.md")
    parser.add_argument("--json", type=Path, default=BENCH / "out" / "codex_results.json")
    args = parser.parse_args(argv)
    steps = [int(x) for x in args.steps.split(",")]
    repeats = [int(x) for x in args.repeats.split(",")]
    if len(repeats) == 1:
        repeats *= len(steps)
    if len(repeats) != len(steps):
        parser.error("--repeats needs one count per entry of --steps (or just one)")
    variants = args.variants.split(",")
    if args.baseline is not None:
        if not (args.baseline / "agent.py").is_file():
            parser.error(f"--baseline {args.baseline}: no agent.py there")
        variants.append(BASELINE)
        compileall.compile_dir(str(args.baseline / "src" / "baseagent"), quiet=1)
    install_codex()
    compileall.compile_dir(str(ROOT / "src" / "baseagent"), quiet=1)
    started = time.monotonic()
    work = CACHE / "work"
    shutil.rmtree(work, ignore_errors=True)
    bench = Bench(work, args.max_load, args.max_wait, args.baseline)
    results: dict[str, Any] = {
        "command": "python bench/codex_bench.py " + " ".join(argv if argv is not None
                                                             else sys.argv[1:]),
        "machine": machine(), "max_load": args.max_load, "runs": [],
        "baseline": (None if args.baseline is None else
                     f"{args.baseline.name} at {_commit(args.baseline)}"),
        "argv": {v: [re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", str(a)).replace(
            str(work), "WORK") for a in bench.argv(v, Path("WS"), 100)] for v in variants}}
    for v in variants:  # warm-up (page cache, bytecode): not counted
        bench.run(v, 2, "warmup")
    for rep in range(max(repeats)):
        order = variants[rep % len(variants):] + variants[:rep % len(variants)]
        for n, count in zip(steps, repeats):
            if rep >= count:
                continue
            for v in order:
                r = bench.run(v, n, f"r{rep}")
                results["runs"].append(r)
                log(f"{v} N={n} rep={rep}: first {r['first_request_s'] or 0:.3f} s, total "
                    f"{r['total_s']:.2f} s, cpu {r['cpu_s']:.2f} s, rss "
                    f"{r.get('maxrss_kb', 0) / 1024:.0f} MB, load {r['load']}")
    results["machine"]["loadavg_end"] = os.getloadavg()
    results["elapsed_s"] = time.monotonic() - started
    results["summary"] = summarise(results["runs"])
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    args.out.write_text(render(results), encoding="utf-8")
    log(f"wrote {args.out} and {args.json}")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if all(r["ok"] for r in results["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
