"""End to end: what a Codex 0.169 consumer sees beyond the basics (UUIDv7 thread ids, the
five usage keys, baseagent's cost_usd extension) and how threads list by id."""
from __future__ import annotations

import json
import uuid

import pytest
from helpers import run_agent

from baseagent.core.ids import uuid7_time_ms

USAGE_KEYS = ["input_tokens", "cached_input_tokens", "cache_write_input_tokens",
              "output_tokens", "reasoning_output_tokens"]


def test_thread_ids_are_uuid7_and_sessions_list_by_id(scripted_server, workspace, home):
    ids = []
    for _ in range(2):
        server = scripted_server([{"content": "Done."}])  # a question: one call
        run = run_agent(["--instruction", "hello"], cwd=workspace, home=home,
                        api_base=server.api_base)
        assert run.returncode == 0, run.stderr
        ids.append(run.events[0]["thread_id"])
    assert all(uuid.UUID(i).version == 7 and uuid7_time_ms(i) for i in ids)
    assert ids[0] < ids[1]  # time-ordered as strings
    # the older thread is the one written to last: the list still goes by id
    older = home / ".baseagent" / "sessions" / f"{ids[0]}.jsonl"
    older.write_text(older.read_text())
    listing = run_agent(["sessions", "list", "--json"], cwd=workspace, home=home, parse=False)
    assert [json.loads(line)["thread_id"] for line in listing.stdout.splitlines()] == ids[::-1]


def test_usage_has_codex_keys_and_each_turn_its_own_cost(scripted_server, workspace, home):
    usage = {"prompt_tokens": 1000, "completion_tokens": 100, "cached_tokens": 400}
    server = scripted_server([
        {"reasoning": "Think about it first, at some length.", "content": "Done.",
         "usage": usage},
        {"content": "Again.", "usage": usage},  # questions: one call a turn
    ])
    # a model litellm prices, served by the scripted server
    first = run_agent(["--instruction", "one"], cwd=workspace, home=home,
                      api_base=server.api_base, model="openai/gpt-4.1")
    assert first.returncode == 0, first.stderr
    done = first.of_type("turn.completed")[0]
    assert list(done["usage"]) == USAGE_KEYS  # Codex 0.169's keys, in its order
    assert done["usage"]["input_tokens"] == 1000 and done["usage"]["cached_input_tokens"] == 400
    assert done["usage"]["output_tokens"] == 100
    assert 0 < done["usage"]["reasoning_output_tokens"] <= 100  # the first call's reasoning
    # gpt-4.1: $2/M input, $0.50/M cached input, $8/M output
    assert done["cost_usd"] == pytest.approx(600 * 2e-6 + 400 * 0.5e-6 + 100 * 8e-6)

    thread = first.events[0]["thread_id"]
    second = run_agent(["--resume", thread, "--instruction", "two"], cwd=workspace, home=home,
                       api_base=server.api_base, model="openai/gpt-4.1")
    assert second.returncode == 0, second.stderr
    again = second.of_type("turn.completed")[0]
    assert again["usage"]["input_tokens"] == 2000  # usage: cumulative over the thread
    assert again["cost_usd"] == pytest.approx(done["cost_usd"])  # cost: this turn only
    shown = run_agent(["sessions", "show", thread, "--json"], cwd=workspace, home=home,
                      parse=False)
    assert json.loads(shown.stdout)["cost_usd"] == pytest.approx(2 * done["cost_usd"])


def test_unpriced_model_reports_null_cost(scripted_server, workspace, home):
    server = scripted_server([{"content": "Done."}])
    run = run_agent(["--instruction", "x"], cwd=workspace, home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert run.of_type("turn.completed")[0]["cost_usd"] is None


def test_reasoning_effort_reaches_the_provider_and_reasoning_stays_home(scripted_server,
                                                                        workspace, home):
    """Codex's `-c model_reasoning_effort=...` (and --reasoning-effort) reach the request;
    the provider's reasoning_content is shown and kept, but not sent back to OpenAI."""
    server = scripted_server([
        {"reasoning": "Plan: look first.", "tool_calls": [{"name": "shell",
                                                           "arguments": {"command": "ls"}}]},
        {"content": "Done."},  # no edit, no test named: no verification round
    ])
    run = run_agent(["exec", "--json", "--skip-git-repo-check", "-m", "openai/o3-mini",
                     "-c", f'openai_base_url="{server.api_base}"',
                     "-c", 'model_reasoning_effort="high"', "look around"],
                    cwd=workspace, home=home)
    assert run.returncode == 0, run.stderr
    assert [r.get("reasoning_effort") for r in server.requests] == ["high"] * 2
    assert [i["text"] for i in run.completed_items("reasoning")] == ["Plan: look first."]
    sent_back = [m for m in server.requests[1]["messages"] if m["role"] == "assistant"]
    assert sent_back and all("reasoning_content" not in m for m in sent_back)
    record = (home / ".baseagent" / "sessions" / f"{run.events[0]['thread_id']}.jsonl")
    kept = [json.loads(line)["message"] for line in record.read_text().splitlines()
            if json.loads(line).get("kind") == "message"
            and json.loads(line)["message"]["role"] == "assistant"]
    assert kept[0]["reasoning_content"] == "Plan: look first."
