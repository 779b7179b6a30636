"""bench/exercises.py's agent row against the scripted server: the batch runs at one fixed
path whatever the run's work directory (the prompt shows that path, and a small model's
reply changes with it), and ends in the work directory."""
from __future__ import annotations

import json
import sys

import pytest

from helpers import REPO

sys.path.insert(0, str(REPO / "bench"))
import exercises  # noqa: E402

SOLVED = ("def distance(strand_a, strand_b):\n    if len(strand_a) != len(strand_b):\n"
          "        raise ValueError(\"Strands must be of equal length.\")\n"
          "    return sum(a != b for a, b in zip(strand_a, strand_b))\n")


@pytest.mark.parametrize("run_name", ["r6", "another-run"])
def test_the_agent_row_runs_at_a_fixed_path_and_keeps_its_batch(scripted_server, tmp_path,
                                                                 monkeypatch, run_name):
    fixed = tmp_path / "fixed" / "batch"
    monkeypatch.setattr(exercises, "AGENT_BATCH", fixed)
    wrong = "hamming.py\n```python\ndef distance(strand_a, strand_b):\n    return 0\n```"
    # both probe messages fail, a repair round that sends the same file back (asked once
    # more for a change), and two search rounds of three candidates that send it back too
    # (each asked once more for a change)
    server = scripted_server([{"content": wrong}] * 16 + [
                              {"content": f"hamming.py\n```python\n{SOLVED}```"},
                              {"content": "Done."}, {"content": "Verified: the tests pass."}])
    [hamming] = exercises.load_exercises(exercises.EXERCISES, ["hamming"])
    work = tmp_path / run_name
    [result] = exercises.run_agent([hamming], "openai/scripted", server.api_base, work, [],
                                   lambda _message: None)
    assert result.solved, result
    agent_request = next(r for r in server.requests if r.get("tools"))
    prompt = str(agent_request["messages"])
    assert f"<cwd>{fixed / 'work' / 'hamming'}</cwd>" in prompt and run_name not in prompt
    assert not fixed.exists() and (work / "agent" / "batch" / "results.jsonl").is_file()
    assert (work / "agent" / "batch" / "tasks" / "hamming" / "events.jsonl").is_file()


PANGRAM = ("def is_pangram(sentence):\n"
           "    return set('abcdefghijklmnopqrstuvwxyz') <= set(sentence.lower())\n")


def test_a_stopped_agent_row_goes_on_with_resume_where_its_batch_left_off(
        scripted_server, tmp_path, monkeypatch):
    """The first invocation measured hamming only (a session that ended part way); with
    --resume the batch it left in the work directory goes on: hamming is kept as it was
    measured (no model call for it), pangram runs, and the row has both."""
    monkeypatch.setattr(exercises, "AGENT_BATCH", tmp_path / "fixed" / "batch")
    hamming, pangram = exercises.load_exercises(exercises.EXERCISES, ["hamming", "pangram"])
    work = tmp_path / "run"
    first = scripted_server([{"content": f"hamming.py\n```python\n{SOLVED}```"}])
    [done] = exercises.run_agent([hamming], "openai/scripted", first.api_base, work, [],
                                 lambda _message: None)
    assert done.solved
    second = scripted_server([{"content": f"pangram.py\n```python\n{PANGRAM}```"}])
    results = exercises.run_agent([hamming, pangram], "openai/scripted", second.api_base,
                                  work, [], lambda _message: None, resume=True)
    assert [(r.name, r.solved) for r in results] == [("hamming", True), ("pangram", True)]
    assert len(second.requests) == 1 and "pangram" in str(second.requests[0]["messages"])
    assert results[0].wall_s == done.wall_s  # as the first invocation measured it


def test_an_agent_row_measured_another_way_is_not_resumed(tmp_path):
    stamp = {"commit": "abc", "extra": [], "model": "m", "server": "s", "exercises": "dev"}
    path = tmp_path / "stamp.json"
    exercises.check_agent_stamp(path, stamp)  # nothing to resume: nothing to refuse
    path.write_text(json.dumps(stamp))
    exercises.check_agent_stamp(path, stamp)
    for key, other in (("commit", "def"), ("extra", ["--prompt-profile", "full"])):
        with pytest.raises(ValueError, match=f"another {key}"):
            exercises.check_agent_stamp(path, {**stamp, key: other})


def test_the_usage_proxy_journal_counts_an_earlier_invocations_calls(tmp_path):
    from usage_proxy import UsageProxy

    journal = tmp_path / "served.jsonl"
    earlier = UsageProxy("http://127.0.0.1:9/v1")
    earlier.journal = journal
    earlier.record("agent/", (100, 60, 10), "p" * 10, "<assistant>a")
    earlier.record("agent/", (100, 90, 10), "p" * 10 + "<assistant>a" + "q" * 9, "")
    earlier.record("agent/", None)
    with journal.open("a") as handle:  # a line journaled before the ceiling was counted
        handle.write('["agent/", [10, 0, 1]]\n')
    later = UsageProxy("http://127.0.0.1:9/v1")
    assert later.replay(journal) == 4 and later.replay(tmp_path / "none.jsonl") == 0
    later.record("agent/", (50, 40, 5))
    # fresh: all of the first call, 9 of the second's 31 characters (29 tokens), all of the
    # old line's and of the call whose prompt was not read
    assert later.totals("agent/") == {"calls": 5, "input_tokens": 260, "cached_tokens": 190,
                                      "output_tokens": 26, "fresh_tokens": 100 + 29 + 10 + 50,
                                      "unseen_tokens": 100 + 29 + 10 + 50}
