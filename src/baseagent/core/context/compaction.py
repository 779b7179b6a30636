"""Keep the prompt inside the model's window, and cheap: pruning, summarising, cache markers.

Before each model call the loop asks `Compactor.prepare(history)`. While the prompt is
under the limit (default 85% of window minus max output tokens) the history goes out as it
is: append-only, so the provider's prefix cache keeps serving it. Above the limit:

1. Prune: old tool outputs are replaced by a short marker, keeping the latest step's results
   and the most recent `protect` tokens of tool output. Pruning runs only when it frees at
   least `minimum` tokens and brings the prompt back under the limit, so it happens in rare
   large batches: each batch invalidates the cache once, from the first pruned message on.
2. Summarise: otherwise the model writes a handoff summary (prompts.system.SUMMARY_PROMPT)
   from the whole history, and the history is rebuilt as head (system prompt, environment
   context) + the user's instructions (the first always, later ones newest-first within a
   budget) + the summary.
3. Fallback: if the summary call fails, prune every older tool output and drop the oldest
   assistant/tool turns until the prompt fits, rather than fail the run.

The model's plan (its update_plan calls) outlives every rewrite: when a summary or a drop
removes the call that set the current plan, the plan comes back as a message of its own
(records/plan.py), so the next request still shows it.

Tool calls and their results are never split: pruning keeps every message (only a tool
result's text changes), and dropping removes an assistant message together with its results.
If the provider still answers "context length exceeded", `on_overflow` shrinks the limit for
the rest of the run (our count was low) and compacts harder, one level per attempt.

The selection and rebuild steps are pure functions over (messages, per-message counts) so
they can be tested as tables; the Compactor only adds state, model calls and notices.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable

from baseagent.core.context.caching import add_cache_markers
from baseagent.records.plan import carry_plan, is_plan_message
from baseagent.core.context.tokens import CHARS_PER_TOKEN, TokenCounter
from baseagent.llm.errors import ContextOverflowError, CostLimitError, ModelError, ModelInterrupted
from baseagent.prompts.system import SUMMARY_PREFIX, SUMMARY_PROMPT

Message = dict[str, Any]
NoticeFn = Callable[[str], None]
RewriteFn = Callable[[list[Message], str], None]

# Leading messages that are context, not conversation: system prompt, environment context.
HEAD_MESSAGES = 2
PRUNED_PREFIX = "[tool output pruned"
PRUNED_MARKER = (PRUNED_PREFIX + " to save context: {tokens:,} tokens from an earlier step were "
                 "removed. Run the tool again if you need this output.]")
# Outputs smaller than this are never pruned: the marker itself costs ~30 tokens, and
# changing a message for nothing would only move the cache break point earlier.
MIN_PRUNE_TOKENS = 100
# Small windows scale the token settings down so pruning still leaves room to work; the
# fractions equal the 40K / 20K / 20K defaults at a 128K window (limit ~100K).
PROTECT_FRACTION = 0.4
MINIMUM_FRACTION = 0.2
USER_MESSAGES_TOKENS = 20_000  # real user messages kept by a rebuild (Codex keeps ~20K)
USER_MESSAGES_FRACTION = 0.25
# A summary longer than this share of the limit is cut: it must leave room for the work.
SUMMARY_FRACTION = 0.25
# After a context-length error the real window is below the prompt we sent: the usable
# window becomes this fraction of that prompt for the rest of the run.
OVERFLOW_SCALE = 0.85
# The learned usable window never goes below this: under it no agent work fits anyway.
MIN_LIMIT_TOKENS = 1_024
# The fallback (summary failed) aims this far under the limit so it is not needed again at
# the very next step.
FALLBACK_TARGET = 0.6


@dataclass(frozen=True)
class Budget:
    """The token figures compaction works with, derived from the model's window."""

    window: int
    max_output: int
    threshold: float = 0.85
    protect: int = 40_000
    minimum: int = 20_000

    @property
    def usable(self) -> int:
        """What the prompt may use: the window minus the room kept for the answer."""
        return max(1, self.window - self.max_output)

    @property
    def limit(self) -> int:
        """Compact when the prompt would exceed this."""
        return max(1, int(self.threshold * self.usable))

    def protect_tokens(self, limit: int | None = None) -> int:
        """Recent tool output kept by pruning, for a limit (default: this budget's)."""
        return min(self.protect, int(PROTECT_FRACTION * (limit or self.limit)))

    def minimum_tokens(self, limit: int | None = None) -> int:
        """Pruning that frees less than this is not worth a cache invalidation."""
        return min(self.minimum, int(MINIMUM_FRACTION * (limit or self.limit)))

    def user_tokens(self, limit: int | None = None) -> int:
        """Real user messages a rebuild keeps."""
        return min(USER_MESSAGES_TOKENS, int(USER_MESSAGES_FRACTION * (limit or self.limit)))


# -- pure helpers --------------------------------------------------------------------------

def is_pruned(message: Message) -> bool:
    content = message.get("content")
    return (message.get("role") == "tool" and isinstance(content, str)
            and content.startswith(PRUNED_PREFIX))


def is_summary(message: Message) -> bool:
    content = message.get("content")
    return (message.get("role") == "user" and isinstance(content, str)
            and content.startswith(SUMMARY_PREFIX))


def pruned_message(message: Message, tokens: int) -> Message:
    """The same tool result (same tool_call_id) with its output replaced by the marker."""
    return {**message, "content": PRUNED_MARKER.format(tokens=tokens)}


def latest_step_start(messages: list[Message], head: int = HEAD_MESSAGES) -> int:
    """Index of the last assistant message (its tool results are the latest step)."""
    for index in range(len(messages) - 1, head - 1, -1):
        if messages[index].get("role") == "assistant":
            return index
    return len(messages)


def select_prunable(messages: list[Message], counts: list[int], protect: int,
                    head: int = HEAD_MESSAGES, keep_latest: bool = True) -> list[int]:
    """Indices (ascending) of tool outputs to replace by a marker.

    Walking back from the newest, tool outputs are protected while they fit in `protect`
    tokens; the first that does not fit and every older one are prunable. The latest
    step's results are always protected when `keep_latest` (the model has not seen them
    yet), and count against `protect`. Already pruned and small outputs are left alone.
    """
    latest = latest_step_start(messages, head) if keep_latest else len(messages)
    protected = 0
    crossed = False
    chosen: list[int] = []
    for index in range(len(messages) - 1, head - 1, -1):
        message = messages[index]
        if message.get("role") != "tool" or is_pruned(message):
            continue
        tokens = counts[index]
        if index > latest:
            protected += tokens
            continue
        if not crossed and protected + tokens <= protect:
            protected += tokens
            continue
        crossed = True
        if tokens >= MIN_PRUNE_TOKENS:
            chosen.append(index)
    chosen.reverse()
    return chosen


def prune(messages: list[Message], indices: list[int], counts: list[int]) -> list[Message]:
    """A new list with the chosen tool outputs replaced by markers; other dicts shared."""
    out = list(messages)
    for index in indices:
        out[index] = pruned_message(messages[index], counts[index])
    return out


def turn_groups(messages: list[Message], head: int = HEAD_MESSAGES) -> list[tuple[int, int]]:
    """[start, end) spans of assistant messages with the tool results that follow them.

    User messages are never part of a group: they are instructions, not droppable work.
    A tool message with no assistant before it (should not happen) is a group of its own,
    so dropping it can only repair a history.
    """
    groups: list[tuple[int, int]] = []
    index = head
    while index < len(messages):
        role = messages[index].get("role")
        if role == "assistant" or role == "tool":
            end = index + 1
            while end < len(messages) and messages[end].get("role") == "tool":
                end += 1
            groups.append((index, end))
            index = end
        else:
            index += 1
    return groups


def drop_oldest(messages: list[Message], counts: list[int], target: int, base: int = 0,
                head: int = HEAD_MESSAGES, keep_last: bool = True) -> tuple[list[Message], int]:
    """Drop whole assistant/tool groups, oldest first, until sum(counts) + base <= target.

    Returns (new list, number of messages dropped). With `keep_last` the latest group stays.
    """
    total = sum(counts) + base
    groups = turn_groups(messages, head)
    if keep_last and groups:
        groups = groups[:-1]
    drop: set[int] = set()
    for start, end in groups:
        if total <= target:
            break
        drop.update(range(start, end))
        total -= sum(counts[start:end])
    if not drop:
        return list(messages), 0
    return [m for i, m in enumerate(messages) if i not in drop], len(drop)


def user_messages_to_keep(messages: list[Message], counts: list[int], budget: int,
                          head: int = HEAD_MESSAGES) -> list[int]:
    """Indices of user messages a rebuild keeps: the first instruction always, then later
    ones newest-first while they fit in `budget` tokens. Earlier summaries are not kept:
    the new summary was written from them; nor are plan messages (the latest plan is put
    back on its own)."""
    candidates = [i for i in range(head, len(messages))
                  if messages[i].get("role") == "user" and not is_summary(messages[i])
                  and not is_plan_message(messages[i])]
    if not candidates:
        return []
    keep = [candidates[0]]
    used = counts[candidates[0]]
    for index in reversed(candidates[1:]):
        if used + counts[index] <= budget:
            keep.append(index)
            used += counts[index]
    return sorted(keep)


def summary_message(text: str) -> Message:
    return {"role": "user", "content": SUMMARY_PREFIX + text}


def rebuild(messages: list[Message], counts: list[int], summary: str, user_budget: int,
            head: int = HEAD_MESSAGES) -> list[Message]:
    """head + kept user instructions (in their order) + the summary, as a user message."""
    kept = user_messages_to_keep(messages, counts, user_budget, head)
    return list(messages[:head]) + [messages[i] for i in kept] + [summary_message(summary)]


def has_work(messages: list[Message], head: int = HEAD_MESSAGES) -> bool:
    """Whether there is anything a summary could replace (assistant or tool messages)."""
    return any(m.get("role") in ("assistant", "tool") for m in messages[head:])


def orphans(messages: list[Message]) -> list[int]:
    """Indices breaking tool-call pairing: a tool result whose call is not in the assistant
    message before it, or a call without its result. Providers reject both."""
    bad: list[int] = []
    open_calls: dict[str, int] = {}
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") in open_calls:
                del open_calls[message["tool_call_id"]]
            else:
                bad.append(index)
            continue
        bad.extend(open_calls.values())
        open_calls = {}
        if role == "assistant":
            open_calls = {c.get("id"): index for c in message.get("tool_calls") or ()}
    bad.extend(open_calls.values())
    return sorted(set(bad))


# -- the manager ---------------------------------------------------------------------------

@dataclass
class CompactionStats:
    """What compaction did in a run (bench, tests, session records)."""

    prunes: int = 0
    summaries: int = 0
    fallbacks: int = 0
    summary_failures: int = 0
    overflows: int = 0
    pruned_outputs: int = 0
    events: list[tuple[str, int, int]] = field(default_factory=list)  # (kind, before, after)


class Compactor:
    """The loop's context hook: accounting per step, compaction when needed, cache markers.

    client: the run's ModelClient (summaries go through it, so they count in usage and
    cost). tools: the tool specs sent with every request (counted once; also sent with the
    summary request so its prefix is a cache hit). notice: where the compaction notice goes
    (the emitter's non-fatal `error` event). on_rewrite(history, reason): called after the
    history was rewritten (the session's `history` record).
    """

    def __init__(self, *, client: Any, counter: TokenCounter, budget: Budget,
                 tools: list[dict[str, Any]] | None = None, head: int = HEAD_MESSAGES,
                 cache_markers: bool = False, notice: NoticeFn = lambda _m: None,
                 on_rewrite: RewriteFn | None = None) -> None:
        self.client = client
        self.counter = counter
        self.budget = budget
        self.tools = tools or None
        self.head = head
        self.cache_markers = cache_markers
        self.notice = notice
        self.on_rewrite = on_rewrite
        self.stats = CompactionStats()
        # What the prompt may use; lowered when the provider proves it smaller (on_overflow).
        self._usable = budget.usable
        # Until the prompt may be near the limit, a free upper bound (bytes) stands in for
        # exact counts, so short runs never load a tokenizer; then exact counts, for good.
        self._exact = False
        self._tools_tokens: int | None = None
        self._tools_bound = len(json.dumps(self.tools)) if self.tools else 0
        self._stuck_noticed = False
        # Incremental total: the history is append-only between rewrites, so only messages
        # after the last one seen are counted (per-step cost independent of history length).
        self._sum = 0
        self._seen_len = 0
        self._seen_first: Message | None = None
        self._seen_last: Message | None = None

    @property
    def limit(self) -> int:
        return max(1, int(self.budget.threshold * self._usable))

    # -- the loop's protocol -----------------------------------------------------------------

    def prepare(self, history: list[Message]) -> tuple[list[Message], int]:
        tokens = self.measure(history)
        if tokens > self.limit:
            self._compact(history, level=0)
            tokens = self.measure(history)
        estimate = tokens if self._exact else math.ceil(tokens / CHARS_PER_TOKEN)
        messages = add_cache_markers(history) if self.cache_markers else history
        return messages, estimate

    def on_overflow(self, history: list[Message], attempt: int) -> None:
        self.stats.overflows += 1
        self._go_exact(history)
        before = self.measure(history)
        # The provider's window is below `before`: believe it for the rest of the run.
        self._usable = max(MIN_LIMIT_TOKENS, int(OVERFLOW_SCALE * min(self._usable, before)))
        self._compact(history, level=max(1, attempt))
        if self.measure(history) >= before:
            raise ContextOverflowError(
                "the prompt is too long for the model's context window even after compaction "
                f"({before:,} tokens; the instructions and context alone may not fit)")

    # -- on request (the interactive /compact and /status) -------------------------------------

    def compact_now(self, history: list[Message]) -> str:
        """Summarise the history now, whatever its size (the person asked: /compact); says
        what happened. CostLimitError and ModelInterrupted propagate, as in a turn."""
        if not has_work(history, self.head):
            return "nothing to compact yet"
        self._go_exact(history)
        before = self.measure(history)
        reason = self._summarise(history, self._counts(history), self._tools_size(), before)
        if reason:
            return f"not compacted: {reason}"
        return f"compacted: {before:,} → {self.measure(history):,} tokens"

    def occupancy(self, history: list[Message]) -> tuple[int, int]:
        """(tokens the next prompt holds, as the loop estimates them; tokens a prompt may
        use)."""
        tokens = self.measure(history)
        return (tokens if self._exact else math.ceil(tokens / CHARS_PER_TOKEN)), self._usable

    # -- accounting --------------------------------------------------------------------------

    def measure(self, history: list[Message]) -> int:
        """Prompt tokens of `history` plus tools: exact, or the byte bound while far below."""
        n = len(history)
        if (self._seen_len and n >= self._seen_len and history[0] is self._seen_first
                and history[self._seen_len - 1] is self._seen_last):
            new = history[self._seen_len:]
        else:
            self._sum, new = 0, history
        one = self.counter.count if self._exact else self.counter.bound
        for message in new:
            self._sum += one(message)
        self._seen_len = n
        self._seen_first = history[0] if n else None
        self._seen_last = history[-1] if n else None
        total = self._sum + self._tools_size()
        if not self._exact and total > self.limit:
            self._go_exact(history)
            total = self._sum + self._tools_size()
        return total

    def _go_exact(self, history: list[Message]) -> None:
        if self._exact:
            return
        self._exact = True
        self._sum = sum(self.counter.count(m) for m in history)
        self._seen_len = len(history)
        self._seen_first = history[0] if history else None
        self._seen_last = history[-1] if history else None

    def _tools_size(self) -> int:
        if not self.tools:
            return 0
        if not self._exact:
            return self._tools_bound  # JSON length: an upper bound, like bound()
        if self._tools_tokens is None:
            self._tools_tokens = self.counter.count_json(self.tools)
        return self._tools_tokens

    def _counts(self, messages: list[Message]) -> list[int]:
        return [self.counter.count(m) for m in messages]

    # -- compaction --------------------------------------------------------------------------

    def _compact(self, history: list[Message], level: int) -> None:
        """level 0: normal (prepare). 1: after a context error: halve the protection and
        drop the minimum. 2: summarise straight away. 3+: emergency fallback only."""
        self._go_exact(history)
        before = self.measure(history)
        counts = self._counts(history)
        tools = self._tools_size()
        if level < 2:
            protect = self.budget.protect_tokens(self.limit) >> level
            minimum = self.budget.minimum_tokens(self.limit) if level == 0 else 0
            chosen = select_prunable(history, counts, protect, self.head)
            freed = sum(counts[i] for i in chosen) - self._marker_tokens(history, chosen, counts)
            if chosen and freed >= minimum and before - freed <= self.limit:
                self._replace(history, prune(history, chosen, counts))
                self.stats.prunes += 1
                self.stats.pruned_outputs += len(chosen)
                self._rewritten(history, "prune", f"pruned {len(chosen)} tool outputs", before)
                return
        reason = "nothing to summarise"
        if level < 3 and has_work(history, self.head):
            reason = self._summarise(history, counts, tools, before)
            if not reason:
                return
            self.stats.summary_failures += 1
        self._fallback(history, before, reason, emergency=level >= 3)

    def _marker_tokens(self, history: list[Message], chosen: list[int],
                       counts: list[int]) -> int:
        return sum(self.counter.count(pruned_message(history[i], counts[i]), cache=False)
                   for i in chosen)

    def _summarise(self, history: list[Message], counts: list[int], tools: int,
                   before: int) -> str:
        """Replace the history by instructions + a model-written summary; '' on success,
        else the reason it failed (the caller falls back)."""
        prompt = {"role": "user", "content": SUMMARY_PROMPT}
        room = self._usable - self.counter.count(prompt)
        request = list(history)
        if before > room:  # the history itself is too big to summarise: shrink a copy
            chosen = select_prunable(request, counts, 0, self.head)
            request = prune(request, chosen, counts)
            request, _ = drop_oldest(request, self._counts(request), room, tools, self.head)
        messages = request + [prompt]
        if self.cache_markers:
            messages = add_cache_markers(messages)
        try:
            turn = self.client.complete(messages, self.tools,
                                        estimated_input_tokens=sum(self._counts(messages)) + tools)
        except (CostLimitError, ModelInterrupted):
            raise  # the run must stop: not a summary problem
        except ModelError as exc:
            return f"the summary request failed: {exc}"
        text = (turn.text or "").strip()
        if not text:
            return "the model returned an empty summary"
        text = self._cap_summary(text)
        new = rebuild(history, counts, text, self.budget.user_tokens(self.limit), self.head)
        replaced = len(history) - len(new) + 1
        self._replace(history, new)
        self.stats.summaries += 1
        self._rewritten(history, "summary", f"summarised {replaced} messages", before)
        return ""

    def _cap_summary(self, text: str) -> str:
        cap = max(1, int(SUMMARY_FRACTION * self.limit))
        if self.counter.count_text(text) <= cap:
            return text
        return text[:cap * CHARS_PER_TOKEN].rstrip() + "\n[summary truncated]"

    def _fallback(self, history: list[Message], before: int, reason: str,
                  emergency: bool) -> None:
        """No summary: prune every older tool output, then drop the oldest turns."""
        counts = self._counts(history)
        chosen = select_prunable(history, counts, 0, self.head, keep_latest=not emergency)
        new = prune(history, chosen, counts)
        target = int(self.limit * FALLBACK_TARGET)
        new, dropped = drop_oldest(new, self._counts(new), target, self._tools_size(),
                                   self.head, keep_last=not emergency)
        if not chosen and not dropped:
            if not self._stuck_noticed:  # once: prepare() would repeat it every step
                self._stuck_noticed = True
                self.notice(f"context compaction could not shrink the prompt ({reason})")
            return
        self._replace(history, new)
        self.stats.fallbacks += 1
        self.stats.pruned_outputs += len(chosen)
        self._rewritten(history, "fallback", f"{reason}; pruned {len(chosen)} tool outputs "
                        f"and dropped {dropped} older messages", before)

    def _replace(self, history: list[Message], new: list[Message]) -> None:
        """Rewrite the history in place, the latest plan kept whatever the rewrite removed."""
        history[:] = carry_plan(history, new, self.head)

    def _rewritten(self, history: list[Message], kind: str, what: str, before: int) -> None:
        self.counter.retain(history)
        self._seen_len = 0  # rewritten in the middle: the incremental total is void
        after = self.measure(history)
        self.stats.events.append((kind, before, after))
        self.notice(f"context compacted: {what}, {before:,} → {after:,} tokens")
        if self.on_rewrite is not None:
            self.on_rewrite(list(history), kind)
