"""cli_args.rewrite: the argv people type (a positional task, --config after a command)
rewritten into what click parses, over the real command tree of cli.py. Table-driven; the
end-to-end behaviour is in test_conventions.py."""
from __future__ import annotations

import pytest
import typer.main

from baseagent.cli import app
from baseagent.cli_args import ArgvError, rewrite

ROOT = typer.main.get_command(app)

CASES = [
    # (typed, what click gets)
    ([], []),
    (["fix the test"], ["--prompt", "fix the test"]),
    (["-"], ["--prompt", "-"]),  # the task from stdin, as -i -
    # options on either side of the task; values are never taken for the task
    (["-m", "openai/x", "fix it", "--json"], ["--prompt", "fix it", "-m", "openai/x", "--json"]),
    (["--model=openai/x", "fix it"], ["--prompt", "fix it", "--model=openai/x"]),
    (["-mopenai/x", "fix it"], ["--prompt", "fix it", "-mopenai/x"]),
    (["-i", "sessions"], ["-i", "sessions"]),  # a value, not a command
    (["--resume", "0199a213", "go on"], ["--prompt", "go on", "--resume", "0199a213"]),
    # a command keeps its meaning; `--` sends the word as the task
    (["sessions"], ["sessions"]),
    (["sessions", "list", "--json"], ["sessions", "list", "--json"]),
    (["--", "sessions"], ["--prompt", "sessions"]),
    (["-m", "x", "--", "-starts with a dash"], ["--prompt", "-starts with a dash", "-m", "x"]),
    # --config after a command moves in front of it
    (["mcp", "list", "--config", "F"], ["--config", "F", "mcp", "list"]),
    (["sessions", "list", "--config=F", "--json"], ["--config=F", "sessions", "list", "--json"]),
    (["export", "ID", "--config", "F", "-o", "x.json"],
     ["--config", "F", "export", "ID", "-o", "x.json"]),
    (["-m", "x", "chat", "--config", "F"], ["--config", "F", "-m", "x", "chat"]),
    # ... unless the command has its own (batch), or parses its own argv (exec)
    (["batch", "t.jsonl", "--out", "o", "--config", "F"],
     ["batch", "t.jsonl", "--out", "o", "--config", "F"]),
    (["exec", "--json", "hi", "--config", "F"], ["exec", "--json", "hi", "--config", "F"]),
    # an option value that looks like --config is left where it is
    (["export", "-o", "--config"], ["export", "-o", "--config"]),
    # other root options after a command stay for click to judge
    (["sessions", "list", "-m", "x"], ["sessions", "list", "-m", "x"]),
]


@pytest.mark.parametrize("typed,parsed", CASES)
def test_rewrite(typed: list[str], parsed: list[str]) -> None:
    assert rewrite(ROOT, typed) == parsed


@pytest.mark.parametrize("typed,message", [
    (["fix", "the", "test"], "unexpected argument 'the' after the task: quote the task"),
    (["fix it", "-m", "x", "again"], "unexpected argument 'again'"),
    (["sesions"], "no command 'sesions' (did you mean 'sessions'? to send it as the task: "
                  "baseagent -- sesions)"),
    (["Exprot"], "did you mean 'export'?"),
])
def test_refused(typed: list[str], message: str) -> None:
    with pytest.raises(ArgvError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("?", r"\?")):
        rewrite(ROOT, typed)


def test_a_near_miss_is_a_task_once_asked_for() -> None:
    assert rewrite(ROOT, ["--", "sesions"]) == ["--prompt", "sesions"]
    assert rewrite(ROOT, ["session notes"]) == ["--prompt", "session notes"]  # two words
