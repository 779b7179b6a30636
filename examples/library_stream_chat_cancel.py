"""Events as they happen (`stream`), a conversation (`chat`), and stopping a turn (`cancel`).

    python examples/library_stream_chat_cancel.py

Offline: the scripted model server answers. `stream()` yields the very event objects the
CLI prints as JSONL (`event.model_dump_json()` is the line); `chat()` continues the same
thread; `cancel()` works from any thread and kills the running command.
"""
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from baseagent import Agent  # noqa: E402
from baseagent.testing.scripted_server import ScriptedServer  # noqa: E402

script = [
    {"tool_calls": [{"name": "shell", "arguments": {"command": "echo 'def add(a, b): return a + b' > calc.py"}}]},
    {"content": "Wrote calc.py with add()."},
    {"content": "It defines add(a, b), which returns a + b."},
    {"tool_calls": [{"name": "shell", "arguments": {"command": "sleep 60"}}]},
]
with ScriptedServer(script) as server, tempfile.TemporaryDirectory() as workspace:
    agent = Agent(model="openai/demo", api_base=server.api_base, api_key="dummy",
                  cwd=workspace, verify=False, session=False)

    print("-- stream: one JSONL line per event")
    for event in agent.stream("write calc.py with an add function"):
        print(event.model_dump_json())

    print("-- chat: the next turn of the same thread")
    print(agent.chat("what does calc.py do?"))

    print("-- cancel: a long command stopped from another thread")
    threading.Timer(1.0, agent.cancel).start()
    started = time.monotonic()
    result = agent.run("run the slow job")
    print(f"{result.status} after {time.monotonic() - started:.1f}s: {result.error}")
    print(f"thread {agent.thread_id}: {agent.usage.input_tokens} input tokens in all")
