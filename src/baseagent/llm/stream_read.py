"""Reading one streamed answer: the chunks of litellm's stream (or the direct path's, which
yields the same chunk objects) put together into text, reasoning and tool calls, with the
clocks and caps that end an attempt early.

The stream is read on a daemon thread (`StreamPump`) and assembled on the caller's, so an
interrupt or a stall is noticed at once whatever the socket is doing. The client
(llm/client.py) opens the stream, retries what fails here and prices what comes back.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from baseagent.cancellation import CancelToken
from baseagent.llm.errors import ModelInterrupted
from baseagent.llm.limits import StreamLimitExceeded
from baseagent.llm.reasoning import merge_details
from baseagent.llm.repetition import RepetitionGuard
from baseagent.llm.retry import NoAnswerYet, StreamBroken, StreamStalled
from baseagent.llm.surrogates import scrub_surrogates
from baseagent.llm.types import (ENOUGH_FINISH, CallProgress, EnoughText, ProgressFn,
                                 ToolCall)

# How often the waiting thread looks at the interrupt flag and the clocks: an interrupt is
# noticed within this, even while the socket is silent.
POLL_SECONDS = 0.05
# Providers whose stream litellm parses outside its common path, where it never records
# the provider's finish reason: for them the chunk's finish_reason is trusted as is.
_UNTRACKED_FINISH = frozenset({"vllm", "petals", "replicate", "predibase", "aleph_alpha",
                               "nlp_cloud", "cached_response"})
# Messages between the stream pump and the caller.
_OPEN, _CHUNK, _END, _ERROR, _IDLE = (object() for _ in range(5))
# Characters of an answer past which the chunks waiting on the queue are taken together
# (one join of the text, one on_progress): below it every chunk is shown as it comes.
COALESCE_FROM = 64 * 1024
# The finish reason of an answer cut because it repeated itself (llm/repetition.py).
RUNAWAY_FINISH = "repetition"


@dataclass
class Streamed:
    """What one attempt's stream said: the model's answer, and the provider's usage object
    as it came (the client prices it)."""

    text: str
    reasoning: str
    tool_calls: list[ToolCall]
    finish_reason: str
    usage: Any = None
    thinking_blocks: list[dict[str, Any]] = field(default_factory=list)
    reasoning_details: list[dict[str, Any]] = field(default_factory=list)


def read_stream(open_stream: Callable[[], Any], abort: Callable[[], None] | None, *,
                cancelled: CancelToken, request_timeout: float, first_limit: float,
                idle_limit: float, reply_limit: int, on_progress: ProgressFn) -> Streamed:
    """One streamed attempt, read to its end: the stream is opened and read on a worker
    thread (StreamPump), so this thread stays free to notice an interrupt (`cancelled`) or
    a stall at once, whatever the socket is doing. `first_limit` bounds the silence before
    the first chunk (the server may still be reading the prompt), `idle_limit` the silence
    between chunks, `request_timeout` the whole attempt; `reply_limit` the characters the
    answer may hold (llm/limits.py). Raises what the attempt failed with (retry.py
    classifies it)."""
    pump = StreamPump(open_stream, abort)
    pump.start()
    started = last_seen = time.monotonic()
    answered = False
    # The text and reasoning so far, each piece cleaned as it arrives (a lone surrogate
    # is one code point, so cleaning the pieces cleans the whole): never rebuilt from
    # all the chunks.
    text = reasoning = ""
    thinking_blocks: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    calls: dict[int, dict[str, str]] = {}
    finish: str | None = None
    usage_obj: Any = None
    guards: dict[Any, RepetitionGuard] = {}
    # Characters assembled so far (text, reasoning, arguments, blocks): capped at
    # reply_limit, whatever the transport (llm/limits.py)
    held = 0
    try:
        while True:
            try:
                kind, value = pump.queue.get(timeout=POLL_SECONDS)
            except queue.Empty:
                kind, value = _IDLE, None
            now = time.monotonic()
            if cancelled():
                raise ModelInterrupted("interrupted")
            if now - started > request_timeout:
                raise TimeoutError(f"request exceeded {request_timeout:.0f}s")
            if kind is _IDLE:
                if not answered and now - last_seen > first_limit:
                    raise NoAnswerYet(now - started)
                if answered and now - last_seen > idle_limit:
                    raise StreamStalled(f"no data for {now - last_seen:.0f}s")
                continue
            last_seen = now
            if kind is _ERROR:
                raise value
            if kind is _END:
                break
            if kind is _OPEN:
                continue
            answered = True
            # One chunk, or, once the answer is long, every chunk already waiting: the
            # text is then joined and shown once for all of them. on_progress keeps the
            # text it is shown (the loop does), so each join copies the whole text: one
            # per chunk would make a fast stream of small deltas quadratic.
            batch = [value]
            after = _drain(pump.queue, batch) if held > COALESCE_FROM else None
            texts: list[str] = []
            thoughts: list[str] = []
            changed = streamed_calls = False
            for chunk in batch:
                usage_obj = getattr(chunk, "usage", None) or usage_obj
                choices = getattr(chunk, "choices", None) or []
                if not choices:
                    continue
                choice = choices[0]
                delta = choice.delta
                piece = getattr(delta, "content", None)
                if piece:
                    held += len(piece)
                    texts.append(scrub_surrogates(piece))
                    changed = True
                piece = getattr(delta, "reasoning_content", None)
                if piece:
                    held += len(piece)
                    thoughts.append(scrub_surrogates(piece))
                    changed = True
                blocks = getattr(delta, "thinking_blocks", None)
                more = getattr(delta, "reasoning_details", None)
                call_pieces = getattr(delta, "tool_calls", None) or []
                if blocks or more or call_pieces:
                    held += _held(blocks) + _held(more) + sum(_call_piece_size(tc)
                                                              for tc in call_pieces)
                if held > reply_limit:
                    raise StreamLimitExceeded("a reply", reply_limit, "characters")
                _collect_thinking_blocks(thinking_blocks, blocks)
                merge_details(details, more)
                for tc in call_pieces:
                    _merge_tool_delta(calls, tc)
                streamed_calls = streamed_calls or bool(call_pieces)
                if choice.finish_reason:
                    finish = choice.finish_reason
            if texts:
                text += "".join(texts)
            if thoughts:
                reasoning += "".join(thoughts)
            try:
                if streamed_calls:
                    on_progress(text, reasoning, _calls_so_far(calls))
                elif changed:
                    on_progress(text, reasoning)
            except EnoughText as enough:  # the reader has what it needs: stop here
                text = text[:max(0, enough.keep)]
                finish = ENOUGH_FINISH
                usage_obj = None
                calls.clear()  # a call cut short must never run
                break
            if _runaway(guards, text, reasoning, calls):
                finish = RUNAWAY_FINISH  # cut here: the loop tells the model why
                usage_obj = None
                calls.clear()  # a call cut short must never run
                break
            if after is not None:
                if after[0] is _ERROR:
                    raise after[1]
                break  # _END
    finally:
        pump.abandon()
    if finish is None or (finish not in (RUNAWAY_FINISH, ENOUGH_FINISH)
                          and _provider_finish_missing(pump.stream)):
        raise StreamBroken("the stream ended before the model finished")
    # Nothing at all with a finish reason is the model's answer, not a transport fault:
    # it comes back as an empty turn for the loop to answer (core/loop.py), never resent
    # as it is (at temperature 0 the same request gets the same nothing).
    tool_calls = [ToolCall(id=c["id"] or f"call_{i}", name=c["name"],
                           arguments=scrub_surrogates(c["arguments"]))
                  for i, c in sorted(calls.items())]
    return Streamed(text=text, reasoning=reasoning, tool_calls=tool_calls, finish_reason=finish,
                    usage=usage_obj, thinking_blocks=thinking_blocks, reasoning_details=details)


def _runaway(guards: dict[Any, RepetitionGuard], text: str, reasoning: str,
             calls: dict[int, dict[str, str]]) -> bool:
    """Whether the stream so far ends in a loop: in the arguments of the call being
    written, else the text, else the reasoning. One guard per stream part."""
    if calls:
        index = max(calls)
        arguments = calls[index]["arguments"]
        guard = guards.setdefault(index, RepetitionGuard())
        return guard.runaway(len(arguments), lambda: arguments)
    part = text or reasoning
    guard = guards.setdefault("text" if text else "reasoning", RepetitionGuard())
    return guard.runaway(len(part), lambda: part)


def _collect_thinking_blocks(blocks: list[dict[str, Any]], pieces: Any) -> None:
    """Keep the provider's complete reasoning blocks, to send back verbatim.

    litellm streams Anthropic thinking as blocks of one delta each, then, with the
    signature_delta, one block holding the whole text and its signature: only those signed
    blocks (and redacted_thinking ones, which arrive whole) are complete; the unsigned
    pieces are already in reasoning_content.
    """
    for piece in pieces or []:
        block = dict(piece) if isinstance(piece, dict) else (
            piece.model_dump() if hasattr(piece, "model_dump") else None)
        if not block:
            continue
        if block.get("type") == "redacted_thinking" or block.get("signature"):
            blocks.append({k: v for k, v in block.items() if v is not None})


def _drain(waiting: "queue.SimpleQueue[tuple[object, Any]]",
           batch: list[Any]) -> tuple[object, Any] | None:
    """Move the chunks already waiting into `batch`; the first message that is not a chunk
    (the end, an error) is returned, None when the queue ran dry first."""
    while True:
        try:
            kind, value = waiting.get_nowait()
        except queue.Empty:
            return None
        if kind is not _CHUNK:
            return kind, value
        batch.append(value)


def _held(pieces: Any) -> int:
    """Characters in a delta's reasoning blocks or details (their string values)."""
    if not pieces:
        return 0
    total = 0
    for piece in pieces if isinstance(pieces, list) else [pieces]:
        values = piece.values() if isinstance(piece, dict) else [piece]
        total += sum(len(v) if isinstance(v, str) else len(str(v)) for v in values)
    return total


def _call_piece_size(tc: Any) -> int:
    function = getattr(tc, "function", None)
    return (len(getattr(tc, "id", None) or "") + len(getattr(function, "name", None) or "")
            + len(getattr(function, "arguments", None) or ""))


def _merge_tool_delta(calls: dict[int, dict[str, str]], tc: Any) -> None:
    """Tool calls arrive in pieces keyed by index: id and name once, arguments in fragments."""
    index = getattr(tc, "index", None)
    if index is None:
        index = len(calls)
    entry = calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
    if getattr(tc, "id", None):
        entry["id"] = tc.id
    function = getattr(tc, "function", None)
    if function is not None:
        if getattr(function, "name", None):
            entry["name"] = function.name
        if getattr(function, "arguments", None):
            entry["arguments"] += scrub_surrogates(function.arguments)


def _calls_so_far(calls: dict[int, dict[str, str]]) -> tuple[CallProgress, ...]:
    """The tool calls streamed so far, as the loop is shown them (on_progress)."""
    return tuple(CallProgress(index=i, id=c["id"] or f"call_{i}", name=c["name"],
                              arguments=c["arguments"]) for i, c in sorted(calls.items()))



def _provider_finish_missing(stream: Any) -> bool:
    """True when litellm's stream wrapper saw no finish reason from the provider.

    litellm invents finish_reason "stop" when a stream just ends (clean EOF mid-answer, an
    empty 200 body, a bare [DONE]), so the chunk we see cannot tell a finished answer from
    a cut one. The wrapper's own record of what the provider sent can, for the providers
    whose chunks it parses through the common path; for the rest we trust the chunk.
    """
    if stream is None or getattr(stream, "custom_llm_provider", None) in _UNTRACKED_FINISH:
        return False
    if not hasattr(stream, "received_finish_reason"):
        return False
    return (getattr(stream, "received_finish_reason", None) is None
            and getattr(stream, "intermittent_finish_reason", None) is None)


class StreamPump(threading.Thread):
    """Opens the stream and moves its chunks onto a queue, on a daemon thread.

    When the caller gives up (interrupt, stall, a cap) it abandons the pump: whatever the
    thread still produces is dropped. On the direct path (`abort`) the attempt's socket is
    shut at once, whatever stage it is at, so the thread's read ends and nothing keeps
    reading beside the retry; a litellm stream is closed once its thread lets go of it (a
    thread blocked in a socket read ends when httpx's own read timeout fires, or with the
    process).

    Every stream is closed on this thread when it ends, finished or not. litellm stops
    reading some answers before their body ends (Anthropic's at `message_stop`); left
    open, the response is closed by the garbage collector on whichever thread it happens
    to run, and when that is the next attempt's pump inside httpcore's connection pool,
    the close waits for the pool's lock that very thread holds: the run hangs.
    """

    def __init__(self, open_stream: Callable[[], Any],
                 abort: Callable[[], None] | None = None) -> None:
        super().__init__(name="model-stream", daemon=True)
        self._abort = abort
        self.queue: queue.SimpleQueue[tuple[object, Any]] = queue.SimpleQueue()
        self.stream: Any = None
        self._open_stream = open_stream
        self._abandoned = threading.Event()

    def run(self) -> None:
        try:
            self.stream = self._open_stream()
            self.queue.put((_OPEN, None))
            for chunk in self.stream:
                if self._abandoned.is_set():
                    return
                self.queue.put((_CHUNK, chunk))
            self.queue.put((_END, None))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            if not self._abandoned.is_set():
                self.queue.put((_ERROR, exc))
        finally:
            close_stream(self.stream)

    def abandon(self) -> None:
        """Stop caring about this attempt; close its stream if it is done or once it is."""
        self._abandoned.set()
        if self._abort is not None:
            self._abort()
        if not self.is_alive():
            close_stream(self.stream)


def close_stream(stream: Any) -> None:
    """Close a stream and what it reads from: litellm's wrapper, the provider iterator
    under it (openai-python's Stream), its HTTP response, or the generator of the
    response's lines litellm's own providers (Anthropic's among them) iterate. Closing
    any of them twice, or a finished one, does nothing."""
    if stream is None:
        return
    inner = getattr(stream, "completion_stream", None)
    for target in (stream, inner, getattr(inner, "response", None),
                   getattr(inner, "streaming_response", None)):
        close = getattr(target, "close", None)
        if callable(close):
            try:
                close()
            except Exception:  # noqa: BLE001 - closing a broken stream (or one still read)
                pass
