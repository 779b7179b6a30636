"""The input line, on prompt_toolkit: history across sessions, multi-line input, pasting.

Enter sends; Esc then Enter (or Alt-Enter) starts a new line; a pasted block keeps its
newlines; Up/Down walk the history, which is kept in ~/.baseagent/prompt_history.
Ctrl-C at the prompt clears the line, Ctrl-D on an empty line leaves.
"""
from __future__ import annotations

from pathlib import Path

PROMPT = "› "
CONTINUATION = "  "


class InputLine:
    """Reads one instruction at a time from the terminal."""

    def __init__(self, history_file: Path | None) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, InMemoryHistory
        from prompt_toolkit.key_binding import KeyBindings

        bindings = KeyBindings()

        @bindings.add("escape", "enter")
        def _newline(event) -> None:  # type: ignore[no-untyped-def]
            event.current_buffer.insert_text("\n")

        history = InMemoryHistory()
        if history_file is not None:
            try:
                history_file.parent.mkdir(parents=True, exist_ok=True)
                history = FileHistory(str(history_file))
            except OSError:
                pass  # an unwritable home: history for this session only
        self._session: PromptSession[str] = PromptSession(
            history=history, key_bindings=bindings, multiline=False,
            prompt_continuation=CONTINUATION, enable_history_search=False)

    def read(self, prompt: str = PROMPT) -> str:
        """The next line; raises KeyboardInterrupt (Ctrl-C) or EOFError (Ctrl-D)."""
        from prompt_toolkit.formatted_text import FormattedText

        return self._session.prompt(FormattedText([("bold ansicyan", prompt)]))
