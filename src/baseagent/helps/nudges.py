"""Answers that say nothing was done yet: an announced next step, or an echo.

A small model often ends a reply with what it will do ("I will run the tests") and stops;
or it repeats what it was just shown (a test run's output, a tool's note), or sends a
file's code exactly as the file already is, believing it fixed it ("now the test should
pass"). While the turn still lacks its evidence (core/verification/evidence.py), such a reply is not
taken as the answer: the model is told that nothing happened, and what is still missing,
MAX_INTENT_NUDGES times a turn at most (after that the reply is the answer).
"""
from __future__ import annotations

import re

from baseagent.helps.code_blocks import unchanged_blocks
from baseagent.helps.contract import Message, TurnContext, TurnHelp
from baseagent.helps.echo import echoes
from baseagent.llm.types import ModelTurn
from baseagent.prompts.system import STUMBLE_PROMPTS

# Replies that only announce a next step (or only echo) that get a note, a turn.
MAX_INTENT_NUDGES = 2
# Messages before a reply that an echo of them is looked for in (helps/echo.py).
ECHO_LOOKBACK = 8
# The end of a reply that announces what it will do rather than saying what was done.
_ANNOUNCES = re.compile(r"\b(?:I will|I'll|I am going to|I'm going to|Let me|Let's|Next,? I|"
                        r"Now,? I|I need to|We need to|I should)\b", re.IGNORECASE)


class Nudges(TurnHelp):
    def __init__(self) -> None:
        self.sent = 0  # nudges this turn

    def start_turn(self, ctx: TurnContext, message: Message) -> Message:
        self.sent = 0
        return message

    def after_reply(self, turn: ModelTurn, ctx: TurnContext) -> bool:
        if turn.tool_calls:
            return False
        return self._intent(turn, ctx) or self._echo(turn, ctx)

    def _intent(self, turn: ModelTurn, ctx: TurnContext) -> bool:
        """A reply that only announces what comes next while the turn has not shown its
        work: the model is told nothing happened."""
        if self.sent >= MAX_INTENT_NUDGES or ctx.evidence.missing() is None \
                or not announces(turn.text):
            return False
        self.sent += 1
        ctx.append({"role": "user", "content": STUMBLE_PROMPTS["intent"]})
        return True

    def _echo(self, turn: ModelTurn, ctx: TurnContext) -> bool:
        """A reply that mostly repeats what the model was just shown, or sends a file's code
        exactly as the file already is: the model is told that nothing changed and what is
        still missing."""
        missing = ctx.evidence.missing()
        if self.sent >= MAX_INTENT_NUDGES or missing is None:
            return False
        unchanged = unchanged_blocks(turn.text, ctx.cwd, ctx.task)
        shown = [str(m.get("content") or "") for m in ctx.history[-ECHO_LOOKBACK - 1:-1]
                 if m.get("role") in ("tool", "user")]
        if not unchanged and not echoes(turn.text, shown):
            return False
        self.sent += 1
        note = STUMBLE_PROMPTS["unchanged"].format(paths=", ".join(unchanged),
                                                   details=missing) if unchanged \
            else STUMBLE_PROMPTS["echo"].format(details=missing)
        ctx.append({"role": "user", "content": note})
        return True


def announces(text: str) -> bool:
    """Whether a reply's last paragraph announces a next step."""
    tail = text.strip().rsplit("\n\n", 1)[-1][-400:]
    return bool(_ANNOUNCES.search(tail))
