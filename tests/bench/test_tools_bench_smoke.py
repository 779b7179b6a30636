"""bench/tools_bench.py end to end on a 300-file tree: it must run and write its report.

No timing is asserted (the figures live in bench/TOOLS_RESULTS.md); what is checked is that
the script exits cleanly (its agreement checks passed), and that the report has its sections
and a grep_files/rg ratio line, whether or not rg is installed.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import REPO

SECTIONS = ("# Tools benchmark results", "## Summary", "## Machine", "## Tree",
            "## grep_files vs raw rg", "## Python fallback and naive walk",
            "## read_file (10 MB file)", "## apply_patch (10 MB file)", "## Agreement checks",
            "## Method", "## Reproduce")


def test_tools_bench_smoke(tmp_path: Path) -> None:
    out = tmp_path / "x.md"
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "tools_bench.py"), "--files", "300", "--runs",
         "1", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]

    text = out.read_text(encoding="utf-8")
    positions = [text.find(section) for section in SECTIONS]
    assert -1 not in positions, [s for s, p in zip(SECTIONS, positions) if p == -1]
    assert positions == sorted(positions), "sections out of order"
    assert "grep_files/rg ratio" in text
    assert "FAILED" not in text
    assert "300 files" in text
