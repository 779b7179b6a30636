"""The CLI's JSONL stays what it was: five scripted runs compared with tests/golden/*.jsonl
(ids, paths, timings and the machine-dependent prompt size normalised; see scenarios.py)."""
from __future__ import annotations

import difflib
import sys
from pathlib import Path

import pytest

from helpers import TESTS

GOLDEN = TESTS / "golden"
sys.path.insert(0, str(GOLDEN))

import scenarios  # noqa: E402


@pytest.mark.parametrize("name", sorted(scenarios.SCENARIOS))
def test_cli_output_matches_the_golden_file(name: str, tmp_path: Path) -> None:
    got = scenarios.run_scenario(name, tmp_path)
    want = (GOLDEN / f"{name}.jsonl").read_text()
    assert got == want, "".join(difflib.unified_diff(
        want.splitlines(True), got.splitlines(True), "golden", "now"))
