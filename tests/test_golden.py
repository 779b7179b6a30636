"""The CLI's JSONL for five scripted runs equals the stored golden files (tests/golden/).

A change to what the CLI prints must be meant: regenerate with
`python tests/golden/scenarios.py --write` and review the diff.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from golden.scenarios import HERE, SCENARIOS, run_scenario


def _stable(text: str) -> list[str]:
    """The lines, without a command's streamed `item.updated` events: how many there are and
    where they cut the output depends on pipe timing, not on the agent."""
    kept = []
    for line in text.splitlines():
        event = json.loads(line)
        if event["type"] == "item.updated" and event["item"]["type"] == "command_execution":
            continue
        kept.append(line)
    return kept


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_cli_output_matches_the_golden_file(name: str, tmp_path: Path) -> None:
    expected = (HERE / f"{name}.jsonl").read_text()
    assert _stable(run_scenario(name, tmp_path)) == _stable(expected)
