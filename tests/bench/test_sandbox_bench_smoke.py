"""bench/sandbox_bench.py runs and writes its report (no timing is asserted: the figures
live in bench/SANDBOX_RESULTS.md)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import REPO



def test_sandbox_bench_smoke(tmp_path: Path) -> None:
    out = tmp_path / "sandbox.md"
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "sandbox_bench.py"), "--runs", "2", "--out",
         str(out)], cwd=REPO, capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text(encoding="utf-8")
    for section in ("## Summary", "## Shell tool on `true`", "## Method", "## Reproduce"):
        assert section in text
    assert "The kernel sandbox adds" in text and "supervised, read-only" in text
