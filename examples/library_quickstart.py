"""The library in ten lines: run one task with `baseagent.Agent`, offline.

    python examples/library_quickstart.py

The scripted model server (baseagent.testing) plays examples/demo_script.json over the
OpenAI protocol, so this runs with no API key and no network. With a real provider, drop the
server and pass e.g. model="openai/gpt-4.1" (the key comes from OPENAI_API_KEY).
"""
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))  # a checkout works too

from baseagent import Agent  # noqa: E402
from baseagent.testing.scripted_server import ScriptedServer  # noqa: E402

script = json.loads((Path(__file__).parent / "demo_script.json").read_text())
with ScriptedServer(script) as server, tempfile.TemporaryDirectory() as workspace:
    agent = Agent(model="openai/demo", api_base=server.api_base, api_key="dummy",
                  cwd=workspace, session=False)
    result = agent.run("create hello.py that prints a greeting")

    print(f"status: {result.status}")
    for item in result.items:  # the completed items: the same objects the CLI prints
        if item.type == "file_change":
            # paths are absolute, as Codex's are
            detail = ", ".join(f"{c.kind} {Path(c.path).relative_to(Path(workspace).resolve())}"
                               for c in item.changes)
        else:
            detail = getattr(item, "command", None) or getattr(item, "tool", None) or item.text
        print(f"  {item.type}: {detail}")
    print(f"answer: {result.final_message}")
    print(f"usage: {result.usage.input_tokens} in, {result.usage.output_tokens} out")
    print(f"hello.py: {(Path(workspace) / 'hello.py').read_text().strip()}")
