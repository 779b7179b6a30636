"""The one contract between the loop and the helps for weak models.

The loop (core/loop.py) is handed a list of helps by the composition root
(compose/, from the prompt profile) and calls each, in order, at five named points
of a turn. Every hook has a default that does nothing, so a help implements only its own:

- `start_turn(ctx, message) -> message`: a turn begins, before its user message joins the
  history. A help resets what it keeps per turn and may add to the message (the files the
  task names, shown with it).
- `before_first_step(ctx) -> answer | None`: before the conversation's first model call.
  An answer ends the turn there (the whole-file probe whose files passed the tests); the
  first help that gives one wins.
- `read_reply(turn, ctx, alone)`: a reply was just read, before it is shown or acted on; a
  help may rewrite it (code left in the text becomes write_file calls). `alone`: the reply
  to messages sent without the history or tools (the probe's).
- `after_reply(turn, ctx) -> handled`: after the reply's calls ran (or, without calls,
  before it is taken as the answer). A help that answers the reply with a message to the
  model returns True, and the loop steps again; the first help that does wins. A reply
  without calls that no help takes is the answer, which the loop then verifies.
- `end_turn(ctx, status)`: the turn is over (completed, failed, limit, interrupted; not
  when it paused for the caller's tools), before its closing event. A help may still act
  on the workspace (the probe puts back its best attempt when the turn's files pass fewer
  tests); what it raises is shown as a notice, never stops the closing event.

A help ends a turn by raising `TurnEnded` (core/turn.py). It reaches the turn only through
`TurnContext`, which the loop implements: it never sees the loop's own state.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

from baseagent.llm.errors import ModelError
from baseagent.llm.types import EnoughText, ModelTurn, ProgressFn, ToolCall

if TYPE_CHECKING:
    from baseagent.core.verification.evidence import Evidence
    from baseagent.tools.tool import ToolResult

Message = str | list[dict[str, Any]]

# Where a streamed answer may stop because the text so far already holds all that is
# needed (its length to keep), or None to read on (TurnContext.ask_alone).
Enough = Callable[[str], "int | None"]


class TurnContext(Protocol):
    """What a help may see and do in the running turn."""

    @property
    def task(self) -> str:
        """The turn's instruction, as text."""

    @property
    def cwd(self) -> Path: ...

    @property
    def history(self) -> list[dict[str, Any]]:
        """The conversation so far (read it; add to it with `append`)."""

    @property
    def evidence(self) -> Evidence:
        """What the turn's answer can rest on so far (core/verification/evidence.py)."""

    @property
    def calls_left(self) -> int:
        """Model calls the turn has left."""

    def has_tool(self, name: str) -> bool: ...

    def append(self, message: dict[str, Any]) -> None:
        """A message into the history (and the session record)."""

    def notice(self, text: str) -> None:
        """A line for the person watching (the error channel)."""

    def restart_evidence(self) -> None:
        """Forget the turn's edits and commands so far (and the calls it saw repeated)."""

    def ask_alone(self, messages: list[dict[str, Any]], notice: str,
                  max_chars: int | None = None,
                  temperature: float | None = None,
                  enough: Enough | None = None) -> ModelTurn:
        """One model call (a step of the turn) on these messages instead of the history,
        without tools; the reply does not join the history. A reply whose text grows past
        `max_chars` is cut: ReplyTooLong. `temperature`: this call's own (None: the run's).
        `enough`: given the text so far, where to stop reading it because it already holds
        all that is needed (None: read on); the reply is then that text."""

    def run_in_copy(self, command: str, copy: Path, timeout_s: float) -> tuple[int | None, str]:
        """Run `command` in `copy` (a scratch copy of the workspace, never the workspace) as
        the model's commands run, with `copy` their workspace (the run's sandbox mode and
        environment; everything it started killed when it returns): (exit code, output),
        exit code None when it did not finish within `timeout_s` or could not start."""

    def run_quiet(self, call: ToolCall) -> tuple[ToolResult, str]:
        """Run one call as an item, outside the history; its result and what its tool
        message would say."""

    def say(self, text: str) -> None:
        """An answer shown as the agent's message and added to the history."""


class TurnHelp(Protocol):
    """A help for a model that needs one; subclass it and override the hooks you use."""

    def start_turn(self, ctx: TurnContext, message: Message) -> Message:
        return message

    def before_first_step(self, ctx: TurnContext) -> str | None:
        return None

    def read_reply(self, turn: ModelTurn, ctx: TurnContext, alone: bool) -> None:
        return None

    def after_reply(self, turn: ModelTurn, ctx: TurnContext) -> bool:
        return False

    def end_turn(self, ctx: TurnContext, status: str) -> None:
        return None


class ReplyTooLong(ModelError):
    """A reply cut because its text grew past what the help asked for could need."""


class ReplyRepeats(ReplyTooLong):
    """A reply cut because its tail repeats one span with only its numbers changing: it
    would run on to its cap (llm/repetition.py, blind to digits). `span`: the characters of
    the repeat when it was cut."""

    def __init__(self, span: int) -> None:
        super().__init__(f"the reply repeated one pattern for {span} characters")
        self.span = span


def capped(progress: ProgressFn, max_chars: int | None,
           enough: Enough | None = None) -> ProgressFn:
    """`progress`, raising ReplyTooLong once the streamed text passes `max_chars`, and
    EnoughText once `enough` says where the text so far already holds all that is needed
    (the model client stops reading the stream at either)."""
    if max_chars is None and enough is None:
        return progress

    def check(text: str, reasoning: str, *calls: Any) -> None:
        if max_chars is not None and len(text) > max_chars:
            raise ReplyTooLong(f"the reply grew past {max_chars} characters")
        keep = enough(text) if enough is not None else None
        if keep is not None:
            progress(text[:keep], reasoning, *calls)
            raise EnoughText(keep)
        progress(text, reasoning, *calls)

    return check


def not_an_answer(turn: ModelTurn) -> str | None:
    """Why a reply without tool calls is not an answer (empty, repetition, length,
    malformed), or None when it is one."""
    if turn.tool_calls:
        return None
    if turn.finish_reason == "repetition":
        return "repetition"
    if turn.malformed_calls:
        return "malformed"
    if not turn.text.strip():
        return "empty"
    if turn.finish_reason == "length":
        return "length"
    return None
