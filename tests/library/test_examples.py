"""The library examples in examples/ run as documented (offline, against the scripted
server) and do what they say."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import REPO

EXAMPLES = REPO / "examples"


def run_example(name: str, tmp_path: Path) -> str:
    proc = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env={"PATH": "/usr/bin:/bin",
                                                          "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_quickstart(tmp_path):
    out = run_example("library_quickstart.py", tmp_path)
    assert "status: completed" in out
    assert "file_change: add hello.py" in out and "command_execution: python3 hello.py" in out
    assert "hello.py: print('hello from baseagent')" in out


def test_stream_chat_cancel(tmp_path):
    out = run_example("library_stream_chat_cancel.py", tmp_path)
    streamed, rest = out.split("-- chat: the next turn of the same thread\n")
    lines = streamed.splitlines()[1:]
    assert '"type":"thread.started"' in lines[0] and '"type":"turn.completed"' in lines[-1]
    chat, cancel = rest.split("-- cancel: a long command stopped from another thread\n")
    assert chat.strip() == "It defines add(a, b), which returns a + b."
    assert cancel.startswith("interrupted after ")


def test_parallel(tmp_path):
    out = run_example("library_parallel.py", tmp_path)
    assert out.splitlines() == [f"task {n}: completed: Task {n} done. (square of {n} is {n * n})"
                                for n in range(1, 5)]


def test_external_tools_delegation_and_agentb(tmp_path):
    out = run_example("library_external_tools.py", tmp_path)
    first, rest = out.split("-- 2. a sub-agent\n")
    assert first.splitlines()[1:] == ["the agent asks: get_weather({'city': 'Paris'})",
                                      "completed: Light rain in Paris: take an umbrella."]
    second, third = rest.split("-- 3. AgentB's events\n")
    assert second.splitlines() == [
        "collab_tool_call: Read packing.txt and list what it says to pack.",
        "  nested mcp_tool_call: read_file",
        "  nested agent_message: packing.txt says: umbrella, boots.",
        "completed: Pack an umbrella and boots."]
    types = third.splitlines()
    assert types[0] == "agent.run.created" and types[-1] == "thread.run.completed"


def test_tools(tmp_path):
    out = run_example("library_tools.py", tmp_path)
    assert out.splitlines() == [
        "offered: shell, read_file, grep_files, list_dir, update_plan, lookup_ticket, estimate",
        "  lookup_ticket {'ticket': 'ENG-12'}: completed: The login test is flaky on CI.",
        "  lookup_ticket {'ticket': 'ENG-99'}: failed: Error: no ticket ENG-99",
        "  estimate {'hours': 12.0, 'people': 2}: completed: {",
        '  "days": 0.75',
        "}",
        "answer: ENG-12 is a flaky login test; about 0.75 days for two people."]


def test_toolsets(tmp_path):
    out = run_example("library_toolsets.py", tmp_path)
    built = ["  shop_stock: count, restock (What is in stock, and ordering more.)",
             "  shop_prices: price, discount (What things cost.)",
             "  files: read_file, grep_files, list_dir (Read files)"]
    # the split is asked for once; the second run reads it from the cache
    assert out.splitlines() == [
        "run 1: 1 model call(s) so far", *built, "run 2: 1 model call(s) so far", *built,
        "the stock agent is offered: count, restock",
        "  count {'item': 'pears'}: 0",
        "  restock {'item': 'pears', 'amount': 10}: ordered 10 pears",
        "answer: Pears were out of stock; I ordered 10."]


def test_hermes_dropin(tmp_path):
    out = run_example("hermes_dropin.py", tmp_path)
    assert out.splitlines() == [
        "model: openrouter/anthropic/claude-sonnet-4",
        "answer: notes.txt has 3 lines.",
        "reasoning sent back: Count the lines with wc.",
        "trajectory: completed=True, turns: system human human gpt tool gpt"]


def test_specialists_and_the_planner(tmp_path):
    out = run_example("library_specialists.py", tmp_path)
    assert out.splitlines() == [
        "AgentB agent.sub_agent.invocation.started: reader",
        "AgentB agent.sub_agent.invocation.completed: reader",
        "AgentB agent.sub_agent.invocation.started: writer",
        "AgentB agent.sub_agent.invocation.completed: writer",
        "collab_tool_call (completed): Read setup.cfg and report the value of `version`.",
        "  nested mcp_tool_call: read_file",
        "  nested agent_message: 1.4.2",
        "collab_tool_call (completed): Create VERSION.txt containing the line 1.4.2",
        "  nested file_change: add VERSION.txt",
        "  nested agent_message: Wrote VERSION.txt.",
        "planner's tools: update_plan, delegate_to_specialist",
        "answer: VERSION.txt now says 1.4.2, the version in setup.cfg.",
        "VERSION.txt: 1.4.2"]
