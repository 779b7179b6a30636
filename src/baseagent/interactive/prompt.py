"""The input line, on prompt_toolkit: history across sessions, multi-line input, pasting.

Enter sends; Esc then Enter (or Alt-Enter) starts a new line; a pasted block keeps its
newlines; Up/Down walk the history, which is kept in ~/.baseagent/prompt_history.
Ctrl-C at the prompt clears the line (twice at an empty one leaves), Ctrl-D on an empty
line leaves. `@` completes
workspace paths (interactive/mentions.py).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

PROMPT = "› "
CONTINUATION = "  "


class EmptyLineInterrupt(KeyboardInterrupt):
    """Ctrl-C at an empty prompt (the session leaves on the second in a row)."""


class InputLine:
    """Reads one instruction at a time from the terminal."""

    def __init__(self, history_file: Path | None,
                 workspace: Callable[[], Path] | None = None) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, InMemoryHistory
        from prompt_toolkit.key_binding import KeyBindings

        bindings = KeyBindings()

        @bindings.add("c-c")
        def _interrupt(event) -> None:  # type: ignore[no-untyped-def]
            buffer = event.current_buffer
            if buffer.text:  # a line being typed: dropped, the prompt stays
                event.app.exit(exception=KeyboardInterrupt())
            else:
                event.app.exit(exception=EmptyLineInterrupt())

        @bindings.add("escape", "enter")
        def _newline(event) -> None:  # type: ignore[no-untyped-def]
            event.current_buffer.insert_text("\n")

        history = InMemoryHistory()
        if history_file is not None:
            try:
                history_file.parent.mkdir(parents=True, exist_ok=True)
                # private, as the session records are (it holds every instruction typed)
                os.close(os.open(history_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
                os.chmod(history_file, 0o600)
                history = FileHistory(str(history_file))
            except OSError:
                pass  # an unwritable home: history for this session only
        completer = None
        if workspace is not None:  # @path mentions completed from the workspace
            from baseagent.interactive.mentions import completer as mention_completer

            completer = mention_completer(workspace)
        self._session: PromptSession[str] = PromptSession(
            history=history, key_bindings=bindings, multiline=False,
            prompt_continuation=CONTINUATION, enable_history_search=False,
            completer=completer, complete_while_typing=completer is not None)

    def read(self, prompt: str = PROMPT) -> str:
        """The next line; raises KeyboardInterrupt (Ctrl-C) or EOFError (Ctrl-D)."""
        from prompt_toolkit.formatted_text import FormattedText

        return self._session.prompt(FormattedText([("bold ansicyan", prompt)]))
