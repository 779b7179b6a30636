"""The checks and repairs around one turn of the library Agent: the instruction, images and
schema checked before it starts; a turn that raised something unexpected ended with its
final event, and its history left whole.

Functions of what the Agent hands them (agent.py composes them), so each is read and tested
apart from the Agent's state.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from baseagent.compose import builder as assembly
from baseagent.emitting.events import TurnEnded as TurnEndedEvent
from baseagent.core.loop import TurnInput, TurnOutcome
from baseagent.records.pending import Paused
from baseagent.errors import InputError
from baseagent.output.emitter import Emitter

_LOG = logging.getLogger("baseagent")
# The `code` of the final event of a turn that ended on an unexpected exception.
UNEXPECTED_ERROR_CODE = "internal_error"


def checked_turn_input(paused: Paused | None, instruction: str, images: Sequence[str | Path],
                       output_schema: dict[str, Any] | None) -> TurnInput:
    """The turn's input, or InputError: a paused turn waits for its outputs first, the
    instruction must be text with no NUL byte, each image a file that can be sent, the
    schema a JSON schema."""
    from baseagent.core.turn_input import check_schema, image_part, turn_input

    if paused is not None:
        raise InputError("the last turn is waiting for the outputs of "
                         f"{', '.join(paused.call_ids)}: submit_tool_outputs() first")
    if not isinstance(instruction, str) or not instruction.strip():
        raise InputError("the instruction is empty")
    if "\0" in instruction:  # no provider takes it, and a record would carry it
        raise InputError("the instruction contains a NUL byte")
    parts = [image_part(Path(p)) for p in images]
    schema = check_schema(output_schema) if output_schema is not None else None
    return turn_input(instruction, parts, schema)


def fail_unexpectedly(exc: Exception, thread_id: str, connected: assembly.Connected | None,
                      emitter: Emitter, turn_open: bool) -> TurnOutcome:
    """Something raised that the loop does not expect (a bug in an injected model
    client, loop, context policy or executor; an error of baseagent's own): the turn
    ends `failed` with its final event (Codex turn.failed, AgentB thread.run.failed)
    naming the error, the traceback goes to the `baseagent` logger, and calls the
    model made that have no result get one, so the thread (and its record) can go on
    or be resumed."""
    message = f"unexpected error: {type(exc).__name__}: {exc}"
    _LOG.error("%s (thread %s)", message, thread_id, exc_info=exc)
    if connected is not None:
        try:
            close_open_calls(connected, message)
        except Exception:  # noqa: BLE001 - the record may be what failed
            pass
    try:
        if turn_open:
            emitter.send(TurnEndedEvent("failed", error=message, code=UNEXPECTED_ERROR_CODE))
        else:
            emitter.run_failed(message)
    except Exception:  # noqa: BLE001 - a sink that fails too: the result still says it
        _LOG.exception("the failure event could not be sent")
    return TurnOutcome("failed", error=message)


def close_open_calls(connected: assembly.Connected, why: str) -> None:
    """Give the last assistant message's tool calls that have no result one saying
    they did not run (a history providers accept, in memory and in the record)."""
    history = connected.loop.history
    answered: set[str] = set()
    for message in reversed(history):
        if message.get("role") == "tool":
            answered.add(str(message.get("tool_call_id")))
            continue
        if message.get("role") != "assistant":
            return
        for call in message.get("tool_calls") or []:
            call_id = call.get("id") if isinstance(call, Mapping) else None
            if call_id and call_id not in answered:
                missing = {"role": "tool", "tool_call_id": call_id,
                           "content": f"Error: not run: the turn failed ({why})"}
                history.append(missing)
                if connected.session is not None:
                    connected.session.message(missing)
        return
