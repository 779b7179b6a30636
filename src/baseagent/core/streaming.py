"""The items a turn shows as it goes: streamed text and tool-call pieces (StreamItems), and
the items that live as long as the turn (TurnItems: Codex's todo_list).

Streaming text updates are throttled: consumers need liveness, not one event per token.
"""
from __future__ import annotations

import time
from typing import Any

from baseagent.emitting import events as engine
from baseagent.core.items import turn_item
from baseagent.llm.types import CallProgress
from baseagent.emitting.interface import EventEmitter

STREAM_UPDATE_INTERVAL_S = 0.05
# Each item.updated carries the whole text so far, so an update goes out only once the
# text has grown by this factor since the last one: the bytes one message puts in the JSONL
# (and the record) stay under ~6x its length instead of growing with its square.
STREAM_TEXT_GROWTH = 1.25


# How a tool call written as text begins (llm/text_tool_calls.py): streamed text that starts
# like this is not shown as an agent message until the answer is complete and the call
# taken out of it, so no empty agent_message is left behind by a call.
_CALL_OPENERS = ("```", "<tool_call>", "{", "[")


def _may_be_call(text: str) -> bool:
    head = text.lstrip()[:len("<tool_call>")]
    return any(head.startswith(o) or o.startswith(head) for o in _CALL_OPENERS)


class StreamItems:
    """Turns streamed text into reasoning / agent_message item events, and streamed tool
    calls into ToolCallDelta events (their arguments piece by piece), throttled.

    Every item it starts it also completes, whatever happens to the call: a consumer that
    saw `item.started` must see `item.completed`, even when the call then fails. With
    `hold_calls` (the request offered tools), text that starts like a tool call written as
    text waits for the end of the answer."""

    def __init__(self, emitter: EventEmitter, hold_calls: bool = False) -> None:
        self.emitter = emitter
        self.hold_calls = hold_calls
        self.ids: dict[str, str] = {}
        self.latest: dict[str, str] = {}
        self.sent: dict[str, int] = {}  # length of the text the last event carried
        self.last_sent = 0.0
        self.calls: dict[int, CallProgress] = {}  # each streamed call as it stands
        self.call_sent: dict[int, str] = {}  # the arguments its pieces have carried so far
        self.call_last_sent = 0.0

    def progress(self, text: str, reasoning: str, calls: tuple[CallProgress, ...] = ()) -> None:
        if calls:
            self._call_pieces(calls)
        now = time.monotonic()
        throttled = now - self.last_sent < STREAM_UPDATE_INTERVAL_S
        for kind, value in (("reasoning", reasoning), ("agent_message", text)):
            if not value:
                continue
            if kind == "agent_message" and self.hold_calls and kind not in self.ids \
                    and _may_be_call(value):
                continue
            self.latest[kind] = value
            if kind not in self.ids:
                self.ids[kind] = self.emitter.new_item_id()
                self.sent[kind] = len(value)
                self.emitter.send(engine.ItemStarted(text_item(kind, self.ids[kind], value)))
            elif not throttled and len(value) >= self.sent.get(kind, 0) * STREAM_TEXT_GROWTH:
                self.sent[kind] = len(value)
                self.emitter.send(engine.ItemUpdated(text_item(kind, self.ids[kind], value)))
        if not throttled:
            self.last_sent = now

    def _call_pieces(self, calls: tuple[CallProgress, ...], flush: bool = False) -> None:
        """A piece of each call's arguments that is new since its last one: the first piece
        of a call at once (it names the call), later ones at most every
        STREAM_UPDATE_INTERVAL_S (all that is left with `flush`). A retried stream starts
        its calls afresh: its pieces go on only once they extend what was sent (the
        completed calls are whole in ModelResponded either way)."""
        now = time.monotonic()
        throttled = not flush and now - self.call_last_sent < STREAM_UPDATE_INTERVAL_S
        for call in calls:
            if call.index not in self.call_sent and self.calls:
                # A new call: the model is done with the earlier ones (calls stream one
                # after another), so what is left of them goes first, in order.
                self._call_pieces(tuple(self.calls.values()), flush=True)
            self.calls[call.index] = call
            sent = self.call_sent.get(call.index)
            if sent is None:
                sent = self.call_sent[call.index] = ""
            elif throttled or len(call.arguments) <= len(sent) \
                    or not call.arguments.startswith(sent):
                continue
            self.call_sent[call.index] = call.arguments
            self.call_last_sent = now
            self.emitter.send(engine.ToolCallDelta(
                index=call.index, call_id=call.id, name=call.name,
                delta=call.arguments[len(sent):], text=self.latest.get("agent_message", "")))

    def finish(self, text: str, reasoning: str) -> None:
        """Complete the items with the final text; start-and-complete any never streamed;
        send what is left of the calls' arguments."""
        for kind, value in (("reasoning", reasoning), ("agent_message", text)):
            if kind in self.ids:
                self.emitter.send(engine.ItemCompleted(text_item(kind, self.ids.pop(kind),
                                                                  value)))
            elif value.strip():
                item_id = self.emitter.new_item_id()
                self.emitter.send(engine.ItemCompleted(text_item(kind, item_id, value)))
        if self.calls:
            self._call_pieces(tuple(self.calls.values()), flush=True)

    def abandon(self) -> None:
        """The call failed: close what was started with the text streamed so far."""
        for kind, item_id in list(self.ids.items()):
            self.emitter.send(engine.ItemCompleted(
                text_item(kind, item_id, self.latest.get(kind, ""))))
        self.ids.clear()


class TurnItems:
    """Items that live as long as the turn (Codex's todo_list: the plan). The first update
    starts one, each later update is an item.updated of the same item, and the turn's close
    completes it, however the turn ends."""

    def __init__(self, emitter: EventEmitter) -> None:
        self.emitter = emitter
        self.items: dict[str, engine.TurnScopedItem] = {}

    def show(self, kind: str, payload: dict[str, Any]) -> None:
        current = self.items.get(kind)
        if current is None:
            self.items[kind] = turn_item(kind, self.emitter.new_item_id(), payload)
            self.emitter.send(engine.ItemStarted(self.items[kind]))
        else:
            self.items[kind] = turn_item(kind, current.id, payload)
            self.emitter.send(engine.ItemUpdated(self.items[kind]))

    def has(self, kind: str) -> bool:
        return kind in self.items

    def complete(self) -> None:
        items, self.items = self.items, {}
        for item in items.values():
            self.emitter.send(engine.ItemCompleted(item))


def text_item(kind: str, item_id: str, text: str) -> engine.TextItem:
    return engine.TextItem(id=item_id, kind="reasoning" if kind == "reasoning" else "message",
                           text=text)
