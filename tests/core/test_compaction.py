"""Compaction: pruning selection, the history rebuild, and the Compactor's decisions.

Token counts here are one token per character of message text (a fake tokenizer), so the
arithmetic in the tables can be read off the sizes.
"""
from __future__ import annotations

import copy

import pytest

from baseagent.core.context.compaction import (PRUNED_PREFIX, Budget, Compactor,
                                       drop_oldest, is_pruned, orphans, prune, rebuild,
                                       select_prunable, turn_groups, user_messages_to_keep)
from baseagent.core.context.tokens import TokenCounter
from baseagent.llm.errors import ContextOverflowError, CostLimitError, ModelError
from baseagent.llm.types import ModelTurn
from baseagent.prompts.system import SUMMARY_PREFIX, SUMMARY_PROMPT

SYSTEM = {"role": "system", "content": "S" * 100}
CONTEXT = {"role": "user", "content": "C" * 100}
TASK = {"role": "user", "content": "do the task"}


def call(n: int, text: str | None = None) -> dict:
    return {"role": "assistant", "content": text, "tool_calls": [
        {"id": f"c{n}", "type": "function", "function": {"name": "shell", "arguments": "{}"}}]}


def result(n: int, size: int) -> dict:
    return {"role": "tool", "tool_call_id": f"c{n}", "content": "x" * size}


def session(sizes: list[int], text: str | None = None) -> list[dict]:
    """head + task + one shell call and its output per size."""
    messages = [SYSTEM, CONTEXT, TASK]
    for n, size in enumerate(sizes):
        messages += [call(n, text), result(n, size)]
    return messages


def counts(messages: list[dict]) -> list[int]:
    return [len(m.get("content") or "") for m in messages]


# -- pure functions ----------------------------------------------------------------------------

def test_select_prunable_protects_recent_output():
    messages = session([1000, 1000, 1000, 1000, 1000])
    tools = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    # latest (always) + one more fit in 2500; the third from the end crosses: it and older go
    assert select_prunable(messages, counts(messages), 2500) == tools[:3]
    assert select_prunable(messages, counts(messages), 10_000) == []
    # the latest step is protected even with no protection budget at all
    assert select_prunable(messages, counts(messages), 0) == tools[:4]
    assert select_prunable(messages, counts(messages), 0, keep_latest=False) == tools


def test_select_prunable_skips_small_and_already_pruned_outputs():
    messages = session([1000, 50, 1000, 1000])
    tools = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    messages[tools[2]] = {**messages[tools[2]],
                          "content": PRUNED_PREFIX + " earlier]" + " " * 500}
    assert select_prunable(messages, counts(messages), 0) == [tools[0]]


def test_select_prunable_protects_every_result_of_the_latest_step():
    messages = [SYSTEM, CONTEXT, TASK, call(0), result(0, 900),
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "x", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "x", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "y" * 900},
                {"role": "tool", "tool_call_id": "b", "content": "z" * 900}]
    assert select_prunable(messages, counts(messages), 0) == [4]


def test_prune_replaces_output_and_keeps_the_pairing():
    messages = session([1000, 1000])
    before = copy.deepcopy(messages)
    out = prune(messages, [4], counts(messages))
    assert messages == before  # pure
    assert out[4]["role"] == "tool" and out[4]["tool_call_id"] == "c0" and is_pruned(out[4])
    assert "1,000 tokens" in out[4]["content"]
    assert all(out[i] is messages[i] for i in range(len(out)) if i != 4)
    assert orphans(out) == []


def test_turn_groups_keep_calls_with_their_results():
    reminder = {"role": "user", "content": "verify"}
    messages = session([10, 10]) + [reminder] + [call(9), result(9, 10)]
    assert turn_groups(messages) == [(3, 5), (5, 7), (8, 10)]


def test_drop_oldest_removes_whole_turns_and_never_user_messages():
    reminder = {"role": "user", "content": "verify"}
    messages = session([500, 500]) + [reminder] + [call(9), result(9, 500)]
    out, dropped = drop_oldest(messages, counts(messages), target=800)
    assert dropped == 4  # two oldest (call, result) pairs
    assert orphans(out) == []
    assert TASK in out and reminder in out
    assert out[-2:] == messages[-2:]  # the latest turn stays
    everything, dropped = drop_oldest(messages, counts(messages), target=0, keep_last=False)
    assert [m["role"] for m in everything] == ["system", "user", "user", "user"]
    assert dropped == 6


def test_user_messages_to_keep_first_always_then_newest_within_budget():
    old_summary = {"role": "user", "content": SUMMARY_PREFIX + "old"}
    messages = [SYSTEM, CONTEXT, {"role": "user", "content": "F" * 500}, old_summary,
                {"role": "user", "content": "a" * 100}, {"role": "user", "content": "b" * 100},
                {"role": "user", "content": "c" * 100}]
    # the first (500) is kept even over budget; then c, b fit in 700; a does not
    assert user_messages_to_keep(messages, counts(messages), 700) == [2, 5, 6]
    assert user_messages_to_keep(messages, counts(messages), 0) == [2]
    assert user_messages_to_keep([SYSTEM, CONTEXT], [100, 100], 1000) == []


def test_rebuild_shape():
    reminder = {"role": "user", "content": "please verify"}
    messages = session([1000, 1000], text="thinking") + [reminder, call(7), result(7, 10)]
    out = rebuild(messages, counts(messages), "SUMMARY", user_budget=1000)
    assert out == [SYSTEM, CONTEXT, TASK, reminder,
                   {"role": "user", "content": SUMMARY_PREFIX + "SUMMARY"}]
    assert out[0] is SYSTEM and out[2] is TASK  # same dicts: counts stay cached


def test_orphans_detects_both_directions():
    assert orphans(session([1, 2])) == []
    lone_result = [SYSTEM, CONTEXT, TASK, result(0, 5)]
    assert orphans(lone_result) == [3]
    lone_call = [SYSTEM, CONTEXT, TASK, call(0), TASK]
    assert orphans(lone_call) == [3]


# -- the manager -------------------------------------------------------------------------------

class FakeTokenizer:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, text: str) -> int:
        self.texts.append(text)
        return len(text)


class FakeClient:
    def __init__(self, reply: str = "SUMMARY: did things", error: Exception | None = None):
        self.reply = reply
        self.error = error
        self.calls: list[tuple[list[dict], list | None]] = []

    def complete(self, messages, tools=None, on_progress=None, estimated_input_tokens=0):
        self.calls.append((messages, tools))
        if self.error is not None:
            raise self.error
        return ModelTurn(text=self.reply)


# usable 16,000; limit 13,600; protect 5,440; minimum 2,720; user messages 3,400
BUDGET = Budget(window=20_000, max_output=4_000)
TOOLS = [{"type": "function", "function": {"name": "shell", "parameters": {}}}]


def manager(client: FakeClient | None = None, **kwargs) -> tuple[Compactor, list, list]:
    notices: list[str] = []
    rewrites: list[tuple[list, str]] = []
    tokenizer = kwargs.pop("tokenizer", None) or FakeTokenizer()
    cm = Compactor(client=client or FakeClient(),
                        counter=TokenCounter("fake", text_counter=tokenizer),
                        budget=kwargs.pop("budget", BUDGET), tools=TOOLS,
                        notice=notices.append,
                        on_rewrite=lambda h, reason: rewrites.append((h, reason)), **kwargs)
    return cm, notices, rewrites


def test_budget_scales_settings_to_small_windows():
    assert BUDGET.usable == 16_000 and BUDGET.limit == 13_600
    assert BUDGET.protect_tokens() == 5_440 and BUDGET.minimum_tokens() == 2_720
    big = Budget(window=200_000, max_output=8_000)
    assert big.protect_tokens() == 40_000 and big.minimum_tokens() == 20_000
    assert big.user_tokens() == 20_000


def test_under_the_limit_nothing_changes_and_nothing_is_tokenised():
    tokenizer = FakeTokenizer()
    cm, notices, _ = manager(tokenizer=tokenizer)
    history = session([1000, 1000])
    messages, estimate = cm.prepare(history)
    assert messages is history and estimate > 0
    assert notices == [] and tokenizer.texts == []  # the byte bound sufficed


def test_accounting_counts_only_new_messages():
    tokenizer = FakeTokenizer()
    cm, _, _ = manager(tokenizer=tokenizer)
    history = session([3000, 3000, 3000])
    tokens = cm.measure(history)
    cm._go_exact(history)
    assert cm.measure(history) <= tokens
    counted = len(tokenizer.texts)
    history += [call(50), result(50, 10)]
    exact = cm.measure(history)
    assert len(tokenizer.texts) == counted + 2  # just the two new messages
    assert exact == sum(cm.counter.count(m) for m in history) + cm._tools_size()


def test_prune_when_it_frees_enough():
    client = FakeClient()
    cm, notices, rewrites = manager(client)
    history = session([3000] * 5)  # ~15.4K > 13.6K
    before = cm.measure(history)
    messages, estimate = cm.prepare(history)
    assert client.calls == []  # no summary needed
    assert sum(is_pruned(m) for m in history) == 4  # only the latest fits in 5,440
    assert estimate == cm.measure(history) <= cm.limit < before
    assert notices == [f"context compacted: pruned 4 tool outputs, {before:,} → "
                       f"{estimate:,} tokens"]
    assert rewrites[0][1] == "prune" and rewrites[0][0] == history
    assert orphans(history) == [] and TASK in history


def test_no_prune_below_the_minimum_saving_summarises_instead():
    client = FakeClient()
    cm, notices, rewrites = manager(client)
    # lots of assistant text (not prunable) and small outputs: pruning frees < 2,720
    history = session([400] * 12, text="t" * 800)
    assert cm.measure(history) > cm.limit
    messages, estimate = cm.prepare(history)
    assert len(client.calls) == 1
    request, tools = client.calls[0]
    assert request[-1] == {"role": "user", "content": SUMMARY_PROMPT}
    assert request[:-1] == session([400] * 12, text="t" * 800)  # the whole, unpruned history
    assert tools == TOOLS  # same prefix as the loop's requests: a cache hit
    assert history == [SYSTEM, CONTEXT, TASK,
                       {"role": "user", "content": SUMMARY_PREFIX + "SUMMARY: did things"}]
    assert messages is history and estimate < 1000
    assert "summarised" in notices[0] and rewrites[0][1] == "summary"


def test_a_history_too_big_to_summarise_is_shrunk_first():
    client = FakeClient()
    cm, _, _ = manager(client)
    history = session([3000] * 8, text="t" * 500)  # ~28K: more than the usable 16K
    cm.on_overflow(history, 2)  # level 2: summarise straight away
    request = client.calls[0][0]
    assert request[-1]["content"] == SUMMARY_PROMPT
    assert sum(len(m.get("content") or "") for m in request) <= BUDGET.usable
    assert orphans(request) == [] and TASK in request
    assert history[-1]["content"].startswith(SUMMARY_PREFIX)


@pytest.mark.parametrize("client", [FakeClient(error=ModelError("model call failed: 400")),
                                    FakeClient(reply="   ")])
def test_failed_summary_falls_back_to_pruning_and_dropping(client):
    cm, notices, rewrites = manager(client)
    history = session([400] * 12, text="t" * 800)
    cm.prepare(history)
    assert len(client.calls) == 1
    assert cm.measure(history) <= cm.limit
    assert orphans(history) == [] and history[:3] == [SYSTEM, CONTEXT, TASK]
    assert history[-2:] == session([400] * 12, text="t" * 800)[-2:]  # latest turn kept
    assert "dropped" in notices[0] and rewrites[0][1] == "fallback"
    assert cm.stats.summary_failures == 1


def test_cost_limit_during_the_summary_stops_the_run():
    cm, _, _ = manager(FakeClient(error=CostLimitError("cost limit reached")))
    with pytest.raises(CostLimitError):
        cm.prepare(session([400] * 12, text="t" * 800))


def test_overflow_lowers_the_limit_and_compacts_harder():
    client = FakeClient()
    cm, _, _ = manager(client)
    history = session([2000] * 5)  # ~10.4K: under our limit, yet the provider refused it
    before = cm.measure(history)
    cm.on_overflow(history, 1)
    assert cm.limit < before  # learned: the real window is smaller than that prompt
    assert cm.measure(history) <= cm.limit
    assert orphans(history) == []


def test_overflow_with_nothing_left_to_compact_is_an_error():
    cm, _, _ = manager(budget=Budget(window=2_000, max_output=500))
    history = [SYSTEM, CONTEXT, {"role": "user", "content": "q" * 3000}]
    with pytest.raises(ContextOverflowError):
        cm.on_overflow(history, 1)
    assert history[2]["content"] == "q" * 3000  # the instruction is never cut


def test_cache_markers_go_on_the_request_copy_only():
    cm, _, _ = manager(cache_markers=True)
    history = session([10, 10])
    messages, _ = cm.prepare(history)
    assert messages is not history
    assert [i for i, m in enumerate(messages) if "cache_control" in m] == [0, 4, 6]
    assert not any("cache_control" in m for m in history)
