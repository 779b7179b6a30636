"""bench/exercises.py `record`: rows measured apart recorded as one run only when nothing
that decides the outcome differs."""
from __future__ import annotations

import sys

import pytest

from helpers import REPO

sys.path.insert(0, str(REPO / "bench"))
from exercises import Run, combine_runs, peer_harness  # noqa: E402


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


@pytest.mark.parametrize("key,value", [("model", "openai/other"),
                                       ("server", "ollama"), ("exercises", "heldout"),
                                       ("extra", ["--prompt-profile", "full"])])
def test_runs_that_differ_in_what_decides_the_outcome_are_refused(key, value):
    with pytest.raises(ValueError, match=key):
        combine_runs([run({"agent": []}), run({"alone": []}, **{key: value})])


def test_a_row_measured_twice_is_refused():
    with pytest.raises(ValueError, match="agent row"):
        combine_runs([run({"agent": []}), run({"agent": []})])


def test_the_report_details_the_dev_set_and_shows_a_held_out_run_apart():
    from exercises import render

    solved = [{"name": "x", "solved": True, "status": "passed", "model_calls": 2,
               "input_tokens": 1, "output_tokens": 1, "wall_s": 1.0, "why": "", "tests": ""}]
    failed = [{**solved[0], "name": "y", "solved": False, "why": "tests fail"}]
    text = render([run({"agent": solved}, exercises="dev", commit="dev1"),
                   run({"agent": failed, "alone": failed}, exercises="/tmp/heldout",
                       commit="held1")])
    detail, held = text.split("## Held-out set")
    assert "commit dev1" in detail and "| x | solved |" in detail
    assert "commit held1" in held.split("## Every run")[0]
    assert "| y | ✗ tests fail | ✗ tests fail |" in held
    assert "| /tmp/heldout |" in text  # the run is listed with its set


def test_peer_rows_may_come_from_another_commit_with_the_same_code_for_them():
    harness = {"abc123": "h1", "def456": "h1", "fff000": "h2"}.get
    agent = [{"name": "x", "solved": True}]
    mini = [{"name": "x", "solved": False}]
    combined = combine_runs([run({"mini-tool": mini}, commit="def456"),
                             run({"agent": agent})], harness_at=harness)
    assert combined.commit == "abc123"  # the agent row's
    assert "mini-tool at def456, the same code for those rows" in combined.note
    with pytest.raises(ValueError, match="peer rows' code"):
        combine_runs([run({"agent": agent}), run({"mini-tool": mini}, commit="fff000")],
                     harness_at=harness)
    with pytest.raises(ValueError, match="commit differs .* for the agent2 row"):
        combine_runs([run({"agent": agent}), run({"agent2": agent}, commit="def456")],
                     harness_at=harness)


def test_a_note_given_at_record_keeps_where_the_rows_came_from():
    harness = {"abc123": "h1", "def456": "h1"}.get
    agent = [{"name": "x", "solved": True}]
    alone = [{"name": "x", "solved": False}]
    combined = combine_runs([run({"agent": agent}), run({"alone": alone}, commit="def456")],
                            harness_at=harness, note="mine")
    assert combined.note.startswith("mine (rows run in 2 invocations")
    assert "alone at def456, the same code for those rows" in combined.note
    assert combine_runs([run({"agent": agent})], note="mine").note == "mine"


def test_the_peer_harness_fingerprint_follows_the_code_the_peer_rows_reach():
    source = (REPO / "bench" / "exercises.py").read_text()
    same = peer_harness(source)
    assert peer_harness(source.replace("def render(", "def render_other(")) == same
    assert peer_harness(source.replace("TEST_OUTPUT_LINES = 50", "TEST_OUTPUT_LINES = 49")) != same
    assert peer_harness(source.replace("See the testing errors above.", "See above.")) != same


def test_model_calls_count_the_probes_calls_too(tmp_path):
    """The probe's calls never reach the history: the session's usage record counts every
    call; a record without one counts its assistant messages."""
    import json

    from exercises import session_calls
    session = tmp_path / "s.jsonl"
    lines = [{"kind": "message", "message": {"role": "assistant", "content": "x"}},
             {"kind": "usage", "input_tokens": 10, "calls": 7}]
    session.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    assert session_calls(session) == 7
    session.write_text(json.dumps(lines[0]) + "\n" + json.dumps(lines[0]) + "\n")
    assert session_calls(session) == 2
    assert session_calls(tmp_path / "missing.jsonl") == 0
