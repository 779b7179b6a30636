"""End to end: long sessions under a small context window, compaction, prompt caching, cost.

The scripted server enforces the window (it answers OpenAI's context_length_exceeded 400
when a prompt is too big) and simulates a provider prefix cache, so these runs prove that
the agent finishes long tasks inside the window, keeps the instruction and the tool-call
pairing in every request, and sends cacheable requests.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from baseagent.prompts.system import SUMMARY_PREFIX, SUMMARY_PROMPT
from baseagent.testing.script import estimate_prompt_tokens, prompt_parts
from helpers import run_agent

INSTRUCTION = "Survey data.txt chunk by chunk and report when done. (ctx-e2e-marker)"
LINE = "line {:05d}: the quick brown fox jumps over the lazy dog, again and again\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "data.txt").write_text("".join(LINE.format(i) for i in range(3000)))
    return ws


def is_summary_request(body: dict) -> bool:
    last = body["messages"][-1]
    return last["role"] == "user" and last["content"] == SUMMARY_PROMPT


def chunk_command(step: int) -> str:
    """A shell call printing 5-20 KB (lines are ~75 bytes), varying with the step."""
    lines = 70 + (step * 53) % 200  # 70..269 lines: ~5.3..20 KB
    start = 1 + (step * 97) % 2500
    return f"sed -n '{start},{start + lines - 1}p' data.txt"


def worker(steps: int, summary_step: Callable[[int], dict] | None = None, chatter: int = 0
           ) -> tuple[Callable[[dict, int], dict], dict[str, Any]]:
    """A responder: `steps` shell calls, then an answer; summary requests get a summary.

    chatter: characters of text the model writes with each call (pruning cannot free it,
    so only a summary or dropping turns can)."""
    state: dict[str, Any] = {"work": 0, "summaries": 0, "summary_texts": []}

    def respond(body: dict, _index: int) -> dict:
        if is_summary_request(body):
            state["summaries"] += 1
            if summary_step is not None:
                return summary_step(state["summaries"])
            text = (f"SUMMARY-{state['summaries']}: surveyed {state['work']} chunks of "
                    "data.txt; keep going.")
            state["summary_texts"].append(text)
            return {"content": text}
        if state["work"] < steps:
            state["work"] += 1
            # varied, as a model's text is (a sentence repeated would be cut as a runaway)
            text = "".join(f"Looking at chunk {state['work']}.{i}. " for i in range(chatter))
            return {"content": text[:chatter],
                    "tool_calls": [{"name": "shell",
                                    "arguments": {"command": chunk_command(state["work"])}}]}
        return {"content": f"Done: surveyed {state['work']} chunks."}

    return respond, state


def check_requests(requests: list[dict]) -> None:
    """The invariants every request must hold, whatever compaction did."""
    for number, body in enumerate(requests):
        messages = body["messages"]
        users = [m["content"] for m in messages if m["role"] == "user"]
        assert INSTRUCTION in users, f"request {number} lost the instruction"
        assert messages[0]["role"] == "system"
        open_calls: set[str] = set()
        for m in messages:
            if m["role"] == "tool":
                assert m["tool_call_id"] in open_calls, f"orphan tool result in {number}"
                open_calls.discard(m["tool_call_id"])
                continue
            assert not open_calls, f"tool call without result in request {number}"
            if m["role"] == "assistant":
                open_calls = {c["id"] for c in m.get("tool_calls") or []}
        assert not open_calls, f"tool call without result at the end of request {number}"


def session_records(home: Path) -> list[dict]:
    files = list((home / ".baseagent" / "sessions").glob("*.jsonl"))
    assert len(files) == 1
    return [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]


@pytest.mark.slow  # ~40-90 s: 300 model calls through litellm
def test_300_steps_in_a_small_window(scripted_server, workspace, home):
    window = 16_000
    respond, state = worker(300)
    server = scripted_server(respond, context_window=window, prefix_cache=True)
    run = run_agent(["-i", INSTRUCTION, "--context-window", str(window),
                     "--max-iterations", "400"],
                    cwd=workspace, home=home, api_base=server.api_base, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.events[-1]["type"] == "turn.completed"
    assert state["work"] == 300 and not server.errors
    requests = server.requests
    check_requests(requests)
    # compaction kept every request inside the window: the server never refused one
    sizes = [estimate_prompt_tokens(prompt_parts(body)) for body in requests]
    assert max(sizes) <= window

    notices = [e["message"] for e in run.of_type("error")]
    compactions = [n for n in notices if n.startswith("context compacted:")]
    assert any("pruned" in n for n in compactions)
    assert any("summarised" in n for n in compactions)

    # summary requests are made, and every later request carries the latest summary
    summary_at = [i for i, body in enumerate(requests) if is_summary_request(body)]
    assert summary_at and len(state["summary_texts"]) == len(summary_at)
    for number, body in enumerate(requests[summary_at[0] + 1:], summary_at[0] + 1):
        made = sum(1 for i in summary_at if i < number)
        carried = [m["content"] for m in body["messages"]
                   if m["role"] == "user" and m["content"].startswith(SUMMARY_PREFIX)]
        assert carried == [SUMMARY_PREFIX + state["summary_texts"][made - 1]], number
    # right after a summary, the work it replaced is gone and the head is unchanged
    after = requests[summary_at[0] + 1]["messages"]
    assert not any(m["role"] in ("assistant", "tool") for m in after)
    assert after[:2] == requests[0]["messages"][:2]

    usage = run.of_type("turn.completed")[0]["usage"]
    assert usage["cached_input_tokens"] > usage["input_tokens"] // 2

    kinds = [r.get("reason") for r in session_records(home) if r["kind"] == "history"]
    assert "prune" in kinds and "summary" in kinds


def test_provider_overflow_is_compacted_and_retried(scripted_server, workspace, home):
    # The agent believes in a 64K window; the provider's is 9K: the server refuses, the
    # agent compacts harder and retries instead of failing.
    respond, state = worker(12)
    server = scripted_server(respond, context_window=9_000)
    run = run_agent(["-i", INSTRUCTION, "--context-window", "64000", "--no-verify"],
                    cwd=workspace, home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr[-2000:]
    assert state["work"] == 12
    requests = server.requests
    sizes = [estimate_prompt_tokens(prompt_parts(body)) for body in requests]
    refused = [i for i, size in enumerate(sizes) if size > 9_000]
    assert refused, "the scenario must hit the provider's limit"
    # after the first refusal the agent works within what it learned: few refusals in all
    assert len(refused) <= 3, refused
    check_requests(requests)
    assert any(e["message"].startswith("context compacted:") for e in run.of_type("error"))


def test_failed_summary_falls_back_to_pruning(scripted_server, workspace, home):
    window = 12_000
    fault = {"fault": "status", "status": 400, "message": "summaries are broken today"}
    respond, state = worker(30, summary_step=lambda _n: fault, chatter=1500)
    server = scripted_server(respond, context_window=window)
    run = run_agent(["-i", INSTRUCTION, "--context-window", str(window), "--no-verify"],
                    cwd=workspace, home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr[-2000:]
    assert state["work"] == 30 and state["summaries"] >= 1
    check_requests(server.requests)
    notices = [e["message"] for e in run.of_type("error")]
    assert any("summary request failed" in n and "dropped" in n for n in notices), notices


def test_anthropic_style_cache_markers(scripted_server, workspace, home):
    respond, _ = worker(6)
    server = scripted_server(respond, anthropic_cache=True)
    run = run_agent(["-i", INSTRUCTION], cwd=workspace, home=home, api_base=server.api_base,
                    env_extra={"BASEAGENT_CACHE_MARKERS": "on"})
    assert run.returncode == 0, run.stderr[-2000:]
    for body in server.requests:
        messages = body["messages"]
        marked = [i for i, m in enumerate(messages) if "cache_control" in m]
        assert marked[0] == 0 and 2 <= len(marked) <= 3  # system + last two with text
        assert marked[-1] == len(messages) - 1
        assert all(messages[i]["cache_control"] == {"type": "ephemeral"} for i in marked)
    usage = run.of_type("turn.completed")[0]["usage"]
    # every request after the first reads the previous one's prefix from the cache
    assert usage["cached_input_tokens"] > usage["input_tokens"] // 2


def test_cached_tokens_are_priced_as_cached(scripted_server, workspace, home):
    # gpt-4.1: $2 per 1M input tokens, $0.50 per 1M cached input tokens (litellm's prices).
    usage = {"prompt_tokens": 1_000_000, "cached_tokens": 1_000_000, "completion_tokens": 0}
    server = scripted_server([{"tool_calls": [{"name": "shell", "arguments":
                                               {"command": "true"}}], "usage": usage},
                              {"content": "done", "usage": usage}])
    run = run_agent(["-i", "x", "--no-verify", "--cost-limit", "1.9"], cwd=workspace,
                    home=home, api_base=server.api_base, model="openai/gpt-4.1")
    assert run.returncode == 0, run.stderr[-2000:]  # $1.00 spent, not $4.00
    assert run.of_type("turn.completed")[0]["usage"]["cached_input_tokens"] == 2_000_000
    totals = [r for r in session_records(home) if r["kind"] == "usage"][-1]
    assert totals["cost_usd"] == pytest.approx(1.0, rel=0.01)
