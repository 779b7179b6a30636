"""Code left in a reply's text: written to its file, or the model told.

A small model often answers with a file's whole new content in a code block and no tool
call (helps/code_blocks.py finds such blocks). With prose_code "apply" (the compact profile
offers that form), each block gets a write_file call before the reply's own calls (its text
comes first: "here is the file; now run the tests"), except for files those calls write
themselves, and each call's result says what happened; with "tell" the model is told once
a turn that no file changed. A block that drops top-level names the file has is never
written, and the model hears which, after the step; in the probe's reply (which the
conversation never sees, and which is kept only if the tests pass) such a block is merged
into its file by name instead (code_blocks.merged_blocks), so that the tests judge it.
"""
from __future__ import annotations

import json
import os
import uuid
from typing import Any, Literal

from baseagent.helps.code_blocks import (differs, file_blocks, fragments, merged_blocks,
                                         test_command_block, without_blocks, written_path)
from baseagent.helps.contract import Message, TurnContext, TurnHelp, not_an_answer
from baseagent.helps.test_time import TestClock, looping_note, timed_out
from baseagent.llm.types import ModelTurn, ToolCall
from baseagent.prompts.system import (FRAGMENT_TELL, PROSE_CODE_APPLIED, PROSE_CODE_CUT,
                                      PROSE_CODE_MERGED, PROSE_CODE_TELL, PROSE_COMMAND_RUN,
                                      PROSE_TESTS_RUN)
from baseagent.tools.tool import DEFAULT_SHELL_TIMEOUT_MS

# What an answer with code for a file and no tool call leads to.
ProseCodeMode = Literal["apply", "tell", "off"]


class ProseCode(TurnHelp):
    def __init__(self, mode: ProseCodeMode = "apply", clock: TestClock | None = None,
                 shell_timeout_ms: int = DEFAULT_SHELL_TIMEOUT_MS) -> None:
        self.mode = mode
        # The test runs it adds get a timeout from the task's own first run (test_time.py).
        self.clock = clock or TestClock()
        self.shell_timeout_ms = shell_timeout_ms
        self.test_calls: list[str] = []  # the ids of those runs in the conversation
        self.told = False  # "tell": once a turn
        # The note about blocks not written because they drop top-level names, sent after
        # the step; once a turn.
        self.fragment_note: str | None = None
        self.told_fragment = False

    def start_turn(self, ctx: TurnContext, message: Message) -> Message:
        self.told, self.fragment_note, self.told_fragment = False, None, False
        self.clock.reset()
        self.test_calls = []
        return message

    def after_reply(self, turn: ModelTurn, ctx: TurnContext) -> bool:
        if turn.tool_calls:
            fragment = self._tell_fragment(ctx)
            return self._tell_looping(ctx) or fragment
        return self._tell_fragment(ctx) or self._tell(turn, ctx)

    def _tell_looping(self, ctx: TurnContext) -> bool:
        """After the step's test runs that this help added: the first that finished times
        the task's tests; one that was stopped at its timeout is reported as likely
        looping."""
        ids, self.test_calls = set(self.test_calls), []
        outputs = [str(m.get("content")) for m in ctx.history[-50:]
                   if m.get("role") == "tool" and m.get("tool_call_id") in ids]
        for output in outputs:
            seconds = timed_out(output)
            if seconds is not None:
                ctx.append({"role": "user",
                            "content": looping_note(seconds, self.clock.reference)})
                return True
            self.clock.saw(output)
        return False

    def _tell_fragment(self, ctx: TurnContext) -> bool:
        """The note about a reply's code blocks that were not written, after the step's tool
        results: without it the model believes the file changed."""
        note, self.fragment_note = self.fragment_note, None
        if note is None:
            return False
        ctx.append({"role": "user", "content": note})
        return True

    def _tell(self, turn: ModelTurn, ctx: TurnContext) -> bool:
        """An answer holding code for a file that no tool wrote, when the run tells the
        model rather than writing it (prose_code "tell"): once a turn."""
        if self.mode != "tell" or self.told:
            return False
        blocks = [b for b in file_blocks(turn.text, ctx.cwd, ctx.task)
                  if differs(ctx.cwd / b.path, b.content)]
        if not blocks:
            return False
        self.told = True
        ctx.append({"role": "user", "content": PROSE_CODE_TELL.format(
            paths=", ".join(b.path for b in blocks))})
        return True

    def read_reply(self, turn: ModelTurn, ctx: TurnContext, alone: bool) -> None:
        """A reply that holds a file's whole new content in a code block gets write_file
        calls for it (prose_code "apply", with write_file in the run)."""
        stumble = not_an_answer(turn)
        cut = stumble in ("repetition", "length")  # complete blocks before the cut count
        if self.mode != "apply" or (stumble is not None and not cut) \
                or not ctx.has_tool("write_file"):
            return
        cwd, task = ctx.cwd, ctx.task
        written_by_calls = {os.path.normpath(cwd / p) for c in turn.tool_calls
                            if (p := written_path(c)) is not None}
        blocks = [b for b in file_blocks(turn.text, cwd, task)
                  if os.path.normpath(cwd / b.path) not in written_by_calls
                  and differs(cwd / b.path, b.content)]
        merged: dict[str, str] = {}  # the probe's: a fragment merged into its file
        if alone:
            taken = {b.path for b in blocks}
            for block, fragment in merged_blocks(turn.text, cwd, task):
                if block.path not in taken and differs(cwd / block.path, block.content) \
                        and os.path.normpath(cwd / block.path) not in written_by_calls:
                    blocks.append(block)
                    merged[block.path] = ", ".join(f"`{n}`" for n in fragment.missing)
        if not self.told_fragment and not alone:
            dropped = [f for f in fragments(turn.text, cwd, task)
                       if os.path.normpath(cwd / f.path) not in written_by_calls]
            if dropped:
                self.told_fragment = True
                self.fragment_note = " ".join(FRAGMENT_TELL.format(
                    path=f.path, names=", ".join(f"`{n}`" for n in f.missing))
                    for f in dropped)
        why = "it kept repeating itself" if stumble == "repetition" \
            else "it reached the output limit"
        calls = [_call("write_file", {"file_path": b.path, "content": b.content},
                       PROSE_CODE_CUT.format(why=why, path=b.path) if cut
                       else PROSE_CODE_MERGED.format(path=b.path, names=merged[b.path])
                       if b.path in merged else PROSE_CODE_APPLIED.format(path=b.path))
                 for b in blocks]
        if cut:
            if not blocks:
                return
            # What followed the last whole file (invented output, the repeated span) goes.
            turn.text = turn.text[:max(b.span[1] for b in blocks)]
        # With no call of its own: the test run the reply shows but did not make, when the
        # turn still lacks one; else, after files written from the reply, the task's own
        # test command (Aider's auto-test): the model sees at once whether its code works.
        shown = test_command_block(turn.text)
        command = shown.content if shown is not None else ctx.evidence.test_command
        if not turn.tool_calls and command and ctx.has_tool("shell") \
                and (blocks or (shown is not None and ctx.evidence.missing() is not None)):
            note = (PROSE_COMMAND_RUN if shown is not None else PROSE_TESTS_RUN)
            if shown is not None:
                blocks.append(shown)
            timeout = self.clock.timeout_ms(self.shell_timeout_ms)
            calls.append(_call("shell", {"command": command} if timeout is None else
                               {"command": command, "timeout_ms": timeout},
                               note.format(command=command)))
            if not alone:
                self.test_calls.append(calls[-1].id)
        if calls:
            turn.tool_calls = calls + turn.tool_calls
            turn.text = without_blocks(turn.text, blocks)


def _call(name: str, arguments: dict[str, Any], note: str) -> ToolCall:
    return ToolCall(id=f"call_{uuid.uuid4().hex[:24]}", name=name,
                    arguments=json.dumps(arguments, ensure_ascii=False), note=note)
