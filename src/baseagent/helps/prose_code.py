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

A file too long to send back whole is changed with SEARCH/REPLACE blocks (Aider's edit form:
helps/edit_form.py). With "apply", those in a reply are checked (each applies exactly once;
a Python file still parses) and each file they change is written with one write_file call,
run at once outside the history, so that the history keeps the model's few lines of edit
rather than the whole file; the model hears which were applied and why any was not. A code
block given as a whole file that would cut a big file (BIG_FILE_LINES or more) to less than
half is never written: the model is asked for a SEARCH/REPLACE edit instead. After a task
that named no file was shown the code its names lead to, a reply holding one of those
functions whole (no whole file, no edit) is merged into its file by name
(helps/function_edits.py), as the repository probe merges it.
"""
from __future__ import annotations

import json
import os
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from baseagent.core.verification.evidence import forbids_test_changes, is_test_file
from baseagent.helps.code_blocks import (differs, file_blocks, fragments, labelled_blocks,
                                         merged_blocks, test_command_block, without_blocks,
                                         written_path)
from baseagent.helps.contract import Message, TurnContext, TurnHelp, not_an_answer
from baseagent.helps.edit_form import (EditBlock, Merge, check_edit_blocks, has_edit_blocks,
                                       merge_by_name, parse_edit_blocks)
from baseagent.helps.function_edits import function_edits
from baseagent.helps.localise import Candidate
from baseagent.helps.test_time import TestClock, looping_note, timed_out
from baseagent.llm.types import ModelTurn, ToolCall
from baseagent.prompts.system import (FRAGMENT_BIG_FILE, FRAGMENT_TELL, PROSE_CODE_APPLIED,
                                      PROSE_CODE_CUT, PROSE_CODE_MERGED, PROSE_CODE_TELL,
                                      PROSE_COMMAND_RUN, PROSE_EDIT_APPLIED,
                                      PROSE_EDIT_NOT_WRITTEN, PROSE_EDIT_REFUSED,
                                      PROSE_EDIT_TELL, PROSE_EDIT_TESTS_RUN,
                                      PROSE_FUNCTIONS_MERGED, PROSE_MERGED_BY_NAME,
                                      PROSE_TESTS_RUN, WHOLE_FILE_TOO_SHORT)
from baseagent.tools.tool import DEFAULT_SHELL_TIMEOUT_MS

# A file this long or longer is never replaced by a code block under half its length: a
# genuine rewrite keeps most of a file, and a model that sends a 40-line piece of a
# 2,000-line module as "the file" would delete the rest. The single-file exercises' stubs
# are under 25 lines, so no whole-file write they get is affected.
BIG_FILE_LINES = 100

# What an answer with code for a file and no tool call leads to.
ProseCodeMode = Literal["apply", "tell", "off"]


class ProseCode(TurnHelp):
    def __init__(self, mode: ProseCodeMode = "apply", clock: TestClock | None = None,
                 shell_timeout_ms: int = DEFAULT_SHELL_TIMEOUT_MS,
                 led_to: Callable[[], Sequence[Candidate]] | None = None) -> None:
        self.mode = mode
        # The symbols this turn's task led to (helps/localised_code.py: shown, or named as
        # other places), if any: a reply in the conversation that sends one of them whole,
        # in a block that is no whole file and no edit, is merged into its file by name
        # (helps/function_edits.py), as the repository probe merges it.
        self.led_to = led_to
        # The test runs it adds get a timeout from the task's own first run (test_time.py).
        self.clock = clock or TestClock()
        self.shell_timeout_ms = shell_timeout_ms
        self.test_calls: list[str] = []  # the ids of those runs in the conversation
        self.told = False  # "tell": once a turn
        # The note about blocks not written because they drop top-level names, sent after
        # the step; once a turn.
        self.fragment_note: str | None = None
        self.told_fragment = False
        # What became of the reply's SEARCH/REPLACE edits (or a code block that would cut a
        # big file), when no test run added after them says it: sent after the step.
        self.edit_note: str | None = None
        self.told_edits = False  # "tell": once a turn

    def start_turn(self, ctx: TurnContext, message: Message) -> Message:
        self.told, self.fragment_note, self.told_fragment = False, None, False
        self.edit_note, self.told_edits = None, False
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
        """The note about a reply's code blocks that were not written, and what became of
        its edits, after the step's tool results: without it the model believes the file
        changed."""
        notes = [n for n in (self.edit_note, self.fragment_note) if n]
        self.fragment_note = self.edit_note = None
        if not notes:
            return False
        ctx.append({"role": "user", "content": " ".join(notes)})
        return True

    def _tell(self, turn: ModelTurn, ctx: TurnContext) -> bool:
        """An answer holding code for a file that no tool wrote, when the run tells the
        model rather than writing it (prose_code "tell"): once a turn."""
        if self.mode != "tell":
            return False
        if not self.told_edits and has_edit_blocks(turn.text):
            paths = list(dict.fromkeys(e.path for e in parse_edit_blocks(turn.text) if e.path))
            if paths:
                self.told_edits = True
                ctx.append({"role": "user",
                            "content": PROSE_EDIT_TELL.format(paths=", ".join(paths))})
                return True
        if self.told:
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
        """A reply that holds a file's whole new content in a code block, or SEARCH/REPLACE
        edits, gets write_file calls for it (prose_code "apply", with write_file in the
        run)."""
        stumble = not_an_answer(turn)
        cut = stumble in ("repetition", "length")  # complete blocks before the cut count
        if self.mode != "apply" or (stumble is not None and not cut) \
                or not ctx.has_tool("write_file"):
            return
        cwd, task = ctx.cwd, ctx.task
        written_by_calls = {os.path.normpath(cwd / p) for c in turn.tool_calls
                            if (p := written_path(c)) is not None}
        edits = [e for e in parse_edit_blocks(turn.text)
                 if not e.path or os.path.normpath(cwd / e.path) not in written_by_calls] \
            if has_edit_blocks(turn.text) else []
        skip = written_by_calls | {os.path.normpath(cwd / e.path) for e in edits if e.path}
        blocks = [b for b in file_blocks(turn.text, cwd, task)
                  if os.path.normpath(cwd / b.path) not in skip
                  and differs(cwd / b.path, b.content)]
        merged: dict[str, str] = {}  # the probe's: a fragment merged into its file
        if alone:
            taken = {b.path for b in blocks}
            for block, fragment in merged_blocks(turn.text, cwd, task):
                if block.path not in taken and differs(cwd / block.path, block.content) \
                        and os.path.normpath(cwd / block.path) not in skip:
                    blocks.append(block)
                    merged[block.path] = ", ".join(f"`{n}`" for n in fragment.missing)
        # A "whole file" far shorter than the big file it would replace is a piece of it.
        short = {b.path: n for b in blocks if (n := cuts_big_file(cwd / b.path, b.content))}
        blocks = [b for b in blocks if b.path not in short]
        # In the conversation, such a piece of a big Python file (or one that leaves out
        # names) is merged by name when it can be: its functions and methods replace those
        # of the same names.
        by_name = {} if alone else _merges(turn.text, cwd, task, skip, set(short))
        notes = [] if alone else [WHOLE_FILE_TOO_SHORT.format(path=p, lines=n, file_lines=m)
                                  for p, (n, m) in short.items() if p not in by_name]
        merged_led_to: set[str] = set()  # files the reply's functions were merged into
        if not alone and not (blocks or edits or by_name or written_by_calls) \
                and self.led_to is not None and "```" in turn.text:
            merged_led_to = self._merge_led_to(turn.text, ctx, notes)
        if not self.told_fragment and not alone:
            dropped = [f for f in fragments(turn.text, cwd, task)
                       if os.path.normpath(cwd / f.path) not in skip and f.path not in by_name
                       and f.path not in merged_led_to]
            if dropped:
                self.told_fragment = True
                self.fragment_note = " ".join(
                    FRAGMENT_BIG_FILE.format(path=f.path, names=_some(f.missing))
                    if is_big(cwd / f.path) else FRAGMENT_TELL.format(
                        path=f.path, names=", ".join(f"`{n}`" for n in f.missing))
                    for f in dropped)
        why = "it kept repeating itself" if stumble == "repetition" \
            else "it reached the output limit"
        calls = [_call("write_file", {"file_path": b.path, "content": b.content},
                       PROSE_CODE_CUT.format(why=why, path=b.path) if cut
                       else PROSE_CODE_MERGED.format(path=b.path, names=merged[b.path])
                       if b.path in merged else PROSE_CODE_APPLIED.format(path=b.path))
                 for b in blocks]
        edited = self._apply_edits(edits, ctx, alone, calls, notes) if edits else False
        edited = bool(merged_led_to) or edited
        for path, (merge, _) in by_name.items():
            names = ", ".join(f"`{n}`" for n in merge.names)
            edited = _write_quietly(ctx, path, merge.text, PROSE_MERGED_BY_NAME.format(
                path=path, names=names), notes) or edited
        if cut:
            ends = [b.span[1] for b in blocks] + [e.span[1] for e in edits] \
                + [span[1] for _, span in by_name.values()]
            if not ends:
                self.edit_note = " ".join(notes) or None
                return
            # What followed the last whole file or edit (invented output, the repeated
            # span) goes.
            turn.text = turn.text[:max(ends)]
        # With no call of its own: the test run the reply shows but did not make, when the
        # turn still lacks one; else, after files written from the reply, the task's own
        # test command (Aider's auto-test): the model sees at once whether its code works.
        shown = test_command_block(turn.text)
        command = shown.content if shown is not None else ctx.evidence.test_command
        if not turn.tool_calls and command and ctx.has_tool("shell") \
                and (blocks or edited or (shown is not None
                                          and ctx.evidence.missing() is not None)):
            note = PROSE_COMMAND_RUN if shown is not None \
                else PROSE_TESTS_RUN if blocks else PROSE_EDIT_TESTS_RUN
            if shown is not None:
                blocks.append(shown)
            timeout = self.clock.timeout_ms(self.shell_timeout_ms)
            note = note.format(command=command)
            if notes:  # what became of the reply's edits, before the tests' output
                note, notes = " ".join([*notes, note]), []
            calls.append(_call("shell", {"command": command} if timeout is None else
                               {"command": command, "timeout_ms": timeout}, note))
            if not alone:
                self.test_calls.append(calls[-1].id)
        if notes:
            self.edit_note = " ".join(notes)
        if calls:
            turn.tool_calls = calls + turn.tool_calls
            turn.text = without_blocks(turn.text, blocks)

    def _merge_led_to(self, text: str, ctx: TurnContext, notes: list[str]) -> set[str]:
        """A conversation reply's whole functions or methods, in blocks that are not a whole
        file, merged by name into the files of the symbols the task led to (each written at
        once, outside the history, as an edit is); the files written."""
        assert self.led_to is not None
        led_to = self.led_to()
        if not led_to:
            return set()
        keep_tests = forbids_test_changes(ctx.task)
        check = function_edits(text, led_to, ctx.cwd,
                               may_write=lambda p: not (keep_tests and is_test_file(p)))
        written = {path for path, new_text in check.new_texts.items()
                   if _write_quietly(ctx, path, new_text,
                                     PROSE_FUNCTIONS_MERGED.format(path=path), notes)}
        if check.refused:
            notes.append(PROSE_EDIT_REFUSED.format(notes=" ".join(check.refused)))
        return written

    def _apply_edits(self, edits: list[EditBlock], ctx: TurnContext, alone: bool,
                     calls: list[ToolCall], notes: list[str]) -> bool:
        """The reply's SEARCH/REPLACE edits, checked (helps/edit_form.py) and written with
        write_file; whether any file changed. In the conversation each file is written at
        once as an item outside the history (`run_quiet`), so that the history keeps the
        model's few lines of edit, not the whole file as a call's argument (a 1,000-line
        module would fill a small model's context, and it would copy the form); what
        happened goes in `notes`. The probe's (alone) become calls the probe runs."""
        keep_tests = forbids_test_changes(ctx.task)
        check = check_edit_blocks(ctx.cwd, edits,
                                  may_write=lambda p: not (keep_tests and is_test_file(p)))
        counts = Counter(os.path.normpath(e.path) for e in check.applied)
        changed = False
        for path, text in check.new_texts.items():
            blocks = "edit" if counts[path] == 1 else f"edits ({counts[path]} blocks)"
            applied = PROSE_EDIT_APPLIED.format(blocks=blocks, path=path)
            call = _call("write_file", {"file_path": path, "content": text}, applied)
            if alone:
                calls.append(call)
                changed = True
                continue
            changed = _write_quietly(ctx, path, text, applied, notes) or changed
        if check.refused and not alone:
            notes.append(PROSE_EDIT_REFUSED.format(notes=" ".join(check.refused)))
        return changed


def _write_quietly(ctx: TurnContext, path: str, text: str, applied: str,
                   notes: list[str]) -> bool:
    """`text` written to `path` with one write_file call run at once as an item outside the
    history (what the model sent stays its few lines); whether it was written. `applied`, or
    why it was not written, goes in `notes`."""
    result, output = ctx.run_quiet(_call("write_file", {"file_path": path, "content": text},
                                         applied))
    notes.append(applied if result.success else
                 PROSE_EDIT_NOT_WRITTEN.format(path=path, output=output.strip()[:500]))
    return result.success


def _merges(answer: str, cwd: Path, task: str, skip: set[str],
            short: set[str]) -> dict[str, tuple[Merge, tuple[int, int]]]:
    """The reply's code blocks for big Python files that are pieces of them (too short to
    be the file, or leaving out its names) and merge by name (edit_form.merge_by_name):
    each file's merge and where its block is; the last block for a file decides."""
    wanted = short | {f.path for f in fragments(answer, cwd, task) if is_big(cwd / f.path)}
    found: dict[str, tuple[Merge, tuple[int, int]]] = {}
    for block in labelled_blocks(answer, cwd, task):
        if block.path not in wanted or not block.path.endswith(".py") \
                or os.path.normpath(cwd / block.path) in skip:
            continue
        try:
            current = (cwd / block.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        merge = merge_by_name(current, block.content)
        if isinstance(merge, Merge):
            found[block.path] = merge, block.span
        else:
            found.pop(block.path, None)
    return found


def _some(names: tuple[str, ...], most: int = 5) -> str:
    """A few names, and how many more (a big module's block can leave out hundreds)."""
    shown = ", ".join(f"`{n}`" for n in names[:most])
    return shown if len(names) <= most else f"{shown} and {len(names) - most} more"


def is_big(path: Path) -> bool:
    """Whether a file has BIG_FILE_LINES lines or more."""
    return _lines_of(path) >= BIG_FILE_LINES


def cuts_big_file(path: Path, content: str) -> tuple[int, int] | None:
    """(the content's lines, the file's) when writing `content` as the whole of the file
    at `path` would cut a big file (BIG_FILE_LINES or more) to less than half; else None."""
    file_lines = _lines_of(path)
    lines = len(content.splitlines())
    if file_lines >= BIG_FILE_LINES and lines * 2 < file_lines:
        return lines, file_lines
    return None


def _lines_of(path: Path) -> int:
    try:
        return len(path.read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        return 0


def _call(name: str, arguments: dict[str, Any], note: str) -> ToolCall:
    return ToolCall(id=f"call_{uuid.uuid4().hex[:24]}", name=name,
                    arguments=json.dumps(arguments, ensure_ascii=False), note=note)
