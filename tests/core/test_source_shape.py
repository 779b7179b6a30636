"""The source stays readable in one sitting (issue 43): no module under src/baseagent is
over 800 lines. A module that grows past it is split by what it does (as cli.py, agent.py,
llm/client.py and core/assembly.py, now compose/, were), not allowed here.
"""
from __future__ import annotations

from helpers import REPO

SRC = REPO / "src" / "baseagent"
LIMIT = 800


def module_lengths() -> dict[str, int]:
    return {path.relative_to(SRC).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
            for path in sorted(SRC.rglob("*.py"))}


def test_no_module_is_over_800_lines():
    lengths = module_lengths()
    over = [f"{name}: {lines} lines" for name, lines in lengths.items()
            if lines > LIMIT]
    assert not over, f"over {LIMIT} lines (split it by what it does): {over}"



def test_the_loop_reads_in_one_sitting():
    """core/loop.py is the seed's flowchart; the helps and what they may do live elsewhere."""
    assert module_lengths()["core/loop.py"] <= 500
