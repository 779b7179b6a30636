"""The benchmark end to end at N=5, without the peer: it must run and report sane figures.

No timing is asserted (timing targets live in bench/RESULTS.md); what is checked is that
every instrument produced numbers of the right kind and that the report has its sections.
It launches the agent twice and litellm twice (~30 s): the price of testing the real thing.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

from helpers import REPO

SECTIONS = ("# Benchmark results", "## Targets", "## Startup", "## Per-step overhead",
            "## Memory", "## litellm floor", "## Misses", "## Method", "## Commands")
SMOKE_STEPS = 5


def _finite_positive(x: object) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def test_bench_smoke_writes_results(tmp_path: Path) -> None:
    out, raw = tmp_path / "RESULTS.md", tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "run.py"), "--smoke", "--no-peer",
         "--out", str(out), "--json", str(raw)],
        cwd=REPO, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]

    text = out.read_text(encoding="utf-8")
    positions = [text.find(section) for section in SECTIONS]
    assert -1 not in positions, [s for s, p in zip(SECTIONS, positions) if p == -1]
    assert positions == sorted(positions), "sections out of order"
    assert "FAILED" not in text
    assert "mini-swe-agent 2" not in text  # --no-peer: no peer figures

    r = json.loads(raw.read_text(encoding="utf-8"))
    start = r["startup"]
    assert start["help_imports_litellm"] is False  # `--help` must stay litellm-free
    for key in ("python", "import_litellm", "help:baseagent"):
        assert start[key]["ok"] and _finite_positive(start[key]["median_s"]), key
    # The interpreter alone is cheaper than importing litellm with it.
    assert start["python"]["median_s"] < start["import_litellm"]["median_s"]

    sessions = r["sessions"] + r["memory"]
    assert [s["command"] for s in sessions] == ["true", "seq -f %099g 1 100"]
    for s in sessions:
        assert s["ok"] and s["agent"] == "baseagent" and s["steps_served"] == SMOKE_STEPS
        assert len(s["own_ms"]) == SMOKE_STEPS == len(s["server_ms"])
        assert all(isinstance(x, float) and math.isfinite(x) for x in s["own_ms"])
        # The shell tool ran SMOKE_STEPS times, as its JSONL events show.
        assert len(s["stream_tool_ms"]) == SMOKE_STEPS
        assert 0 < s["ttfr_s"] < s["wall_s"]
        assert 20 < s["maxrss_mb"] < 4096
        assert _finite_positive(s["tool_ms"])

    floor = r["floor"]
    assert set(floor) == {"stream", "no_stream"}
    assert all(_finite_positive(v) for mode in floor.values() for v in mode.values())
