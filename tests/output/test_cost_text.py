"""One way to show a cost to a person, known or not (cost_text.py), in every output that
shows one: the terminal's turn summary, `/cost`, `sessions show`, the batch summary."""
from __future__ import annotations

import pytest

from baseagent.batch.summary import render
from baseagent.cost_text import cost_text
from baseagent.sessions import SessionSummary, render_show


@pytest.mark.parametrize("cost,text", [
    (None, "cost unknown"),
    (0.0, "cost $0.0000"),
    (0.025544, "cost $0.0255"),
    (12.5, "cost $12.5000"),
])
def test_cost_text(cost, text):
    assert cost_text(cost) == text


def test_sessions_show_and_the_batch_summary_say_it_the_same_way():
    shown = render_show(SessionSummary(thread_id="t", path="p", updated="", size_bytes=1,
                                       cost_usd=None), [])
    assert "usage:    0 in (0 cached), 0 out, cost unknown\n" in shown
    summary = {"tasks": 1, "passed": 1, "failed": 0, "errored": 0, "interrupted": 0,
               "not_run": 0, "tokens": {"input_tokens": 10, "cached_input_tokens": 0,
                                        "output_tokens": 2},
               "cost_usd": None, "task_time_p50_s": None, "task_time_p95_s": None,
               "batch_interrupted": False, "wall_time_s": 1.0, "ran_this_run": 1,
               "tasks_per_minute": 60.0}
    assert "tokens: 10 in (0 cached), 2 out; cost unknown\n" in render(summary)
    assert "; cost $0.5000\n" in render({**summary, "cost_usd": 0.5})
