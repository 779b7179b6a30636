"""bench/exercises.py's agent row against the scripted server: the batch runs at one fixed
path whatever the run's work directory (the prompt shows that path, and a small model's
reply changes with it), and ends in the work directory."""
from __future__ import annotations

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
    server = scripted_server([{"content": wrong}] * 10 + [
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
