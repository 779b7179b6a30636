"""Replies that are not answers: empty, cut off, repeating, an unreadable call.

Taken as the answer, such a reply ends the turn with the work undone; resent as it was, it
gets the same reply at temperature 0. Each gets a note saying what is expected instead
(prompts/system.py STUMBLE_PROMPTS), and the turn ends when MAX_STUMBLES in a row did not
help. The loop keeps an empty or repeating reply out of the history either way.
"""
from __future__ import annotations

from baseagent.core.turn import TurnEnded
from baseagent.helps.contract import Message, TurnContext, TurnHelp, not_an_answer
from baseagent.llm.types import ModelTurn
from baseagent.prompts.system import STUMBLE_PROMPTS

# Replies in a row that each get a note; one more ends the turn.
MAX_STUMBLES = 2
STUMBLE_ENDINGS = {
    "empty": "the model returned empty replies (no text, no tool call) {n} times in a row",
    "repetition": "the model's replies kept repeating themselves ({n} times in a row)",
    "length": "the model's replies were cut off at the output token limit {n} times in a "
              "row (finish_reason 'length'); raise --max-tokens or ask for shorter answers",
    "malformed": "the model wrote tool calls that could not be read {n} times in a row",
}


class Stumbles(TurnHelp):
    def __init__(self) -> None:
        self.count = 0  # replies in a row that were not answers

    def start_turn(self, ctx: TurnContext, message: Message) -> Message:
        self.count = 0
        return message

    def after_reply(self, turn: ModelTurn, ctx: TurnContext) -> bool:
        stumble = not_an_answer(turn)
        if stumble is None:
            self.count = 0
            return False
        self.count += 1
        if self.count > MAX_STUMBLES:
            raise TurnEnded("limit" if stumble == "length" else "failed",
                            STUMBLE_ENDINGS[stumble].format(n=self.count))
        details = "; ".join(turn.malformed_calls)
        ctx.append({"role": "user", "content": STUMBLE_PROMPTS[stumble].format(details=details)})
        return True
