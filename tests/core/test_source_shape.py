"""The source stays readable in one sitting (issue 43): no module under src/baseagent is
over 800 lines. A module that grows past it is split by what it does (as cli.py, agent.py
and llm/client.py were), not allowed here.
"""
from __future__ import annotations

from helpers import REPO

SRC = REPO / "src" / "baseagent"
LIMIT = 800
# Modules still over the limit while another branch splits them (issue 43); each line goes
# when its module is split. A module on this list that is gone or back under the limit
# fails the test too, so the list cannot outlive its reason.
BEING_SPLIT = {"core/assembly.py"}


def module_lengths() -> dict[str, int]:
    return {path.relative_to(SRC).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
            for path in sorted(SRC.rglob("*.py"))}


def test_no_module_is_over_800_lines():
    lengths = module_lengths()
    over = [f"{name}: {lines} lines" for name, lines in lengths.items()
            if lines > LIMIT and name not in BEING_SPLIT]
    assert not over, f"over {LIMIT} lines (split it by what it does): {over}"


def test_the_list_of_modules_being_split_is_current():
    lengths = module_lengths()
    done = sorted(name for name in BEING_SPLIT if lengths.get(name, 0) <= LIMIT)
    assert not done, f"no longer over {LIMIT} lines (or moved): take off BEING_SPLIT: {done}"
