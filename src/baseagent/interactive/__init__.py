"""The interactive terminal session: `baseagent` with no instruction on a terminal, or
`baseagent chat`. One library Agent per thread; every line the user enters is a turn of it.

    repl.py      the read-run loop, Ctrl-C handling, the Agent of the current thread
    commands.py  the slash commands (/new, /resume, /model, /cost, /diff, /undo, /compact,
                 /clear, /init, /status, /approvals, /help, /exit)
    prompt.py    the prompt_toolkit input line (history, multi-line input, Ctrl-C)
    mentions.py  @path completion and what a line attaches (files, dropped images)
    approver.py  the person's answer to an approval question (tools/approval.py)
    terminal_mode.py  the terminal's echo, hidden during a turn, shown for an answer
"""
from baseagent.interactive.repl import start

__all__ = ["start"]
