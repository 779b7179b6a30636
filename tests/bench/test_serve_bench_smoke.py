"""bench/serve_bench.py runs and writes its report (no timing is asserted: the figures live
in bench/SERVE_RESULTS.md)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import REPO, require


def test_serve_bench_smoke(tmp_path: Path) -> None:
    from baseagent.serve import extra_missing

    missing = extra_missing()
    require(missing is None, f"{missing} (pip install -e '.[serve]')")
    out = tmp_path / "serve.md"
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "serve_bench.py"), "--threads", "2", "--idle",
         "5", "--no-browser", "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text(encoding="utf-8")
    assert "| 1 |" in text and "| 2 |" in text and "Memory per idle event stream" in text
