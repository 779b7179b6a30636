"""bench/exercises.py `record`: rows measured apart recorded as one run only when nothing
that decides the outcome differs."""
from __future__ import annotations

import sys

import pytest

from helpers import REPO

sys.path.insert(0, str(REPO / "bench"))
from exercises import Run, combine_runs  # noqa: E402


def run(rows: dict, **changes) -> Run:
    fields = dict(started="2026-11-25 10:00", commit="abc123", model="openai/local",
                  server="llama-server", load="0.5", note="n", extra=[], rows=rows)
    fields.update(changes)
    return Run(**fields)


def test_rows_of_one_commit_become_one_run():
    agent = [{"name": "x", "solved": True}]
    mini = [{"name": "x", "solved": False}]
    combined = combine_runs([run({"agent": agent}), run({"mini-tool": mini}, started="later")])
    assert combined.rows == {"agent": agent, "mini-tool": mini}
    assert combined.started == "2026-11-25 10:00 + later"
    assert "2 invocations" in combined.note


@pytest.mark.parametrize("key,value", [("commit", "def456"), ("model", "openai/other"),
                                       ("server", "ollama"), ("exercises", "heldout"),
                                       ("extra", ["--prompt-profile", "full"])])
def test_runs_that_differ_in_what_decides_the_outcome_are_refused(key, value):
    with pytest.raises(ValueError, match=key):
        combine_runs([run({"agent": []}), run({"alone": []}, **{key: value})])


def test_a_row_measured_twice_is_refused():
    with pytest.raises(ValueError, match="agent row"):
        combine_runs([run({"agent": []}), run({"agent": []})])
