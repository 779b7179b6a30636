"""The interactive terminal session: `baseagent` with no instruction on a terminal, or
`baseagent chat`. One library Agent per thread; every line the user enters is a turn of it.

    repl.py      the read-run loop, Ctrl-C handling, the Agent of the current thread
    commands.py  the slash commands (/new, /resume, /model, /cost, /help, /exit)
    prompt.py    the prompt_toolkit input line (history, multi-line input)
    approver.py  the person's answer to an approval question (tools/approval.py)
    terminal_mode.py  the terminal's echo, hidden during a turn, shown for an answer
"""
from baseagent.interactive.repl import start

__all__ = ["start"]
