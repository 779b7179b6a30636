"""hermes-agent's AIAgent on baseagent: change the import, keep the code, offline.

    python examples/hermes_dropin.py

`from run_agent import AIAgent` (NousResearch/hermes-agent) becomes
`from baseagent.hermes import AIAgent`; the constructor and `chat()` keep hermes' names.
The scripted model server (baseagent.testing) stands in for the provider, answering as
OpenRouter does (reasoning with `reasoning_details`), so this needs no key and no network.
With a real provider drop the server and base_url: the model is then an OpenRouter model
(`OPENROUTER_API_KEY`), as in hermes.
"""
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))  # a checkout works too

from baseagent.hermes import AIAgent  # noqa: E402
from baseagent.testing.scripted_server import ScriptedServer  # noqa: E402

SCRIPT = [
    {"reasoning": "Count the lines with wc.", "reasoning_format": "openrouter",
     "tool_calls": [{"name": "shell", "arguments": {"command": "wc -l < notes.txt"}}]},
    {"content": "notes.txt has 3 lines."},
]

with ScriptedServer(SCRIPT) as server, tempfile.TemporaryDirectory() as tmp:
    workspace = Path(tmp) / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("one\ntwo\nthree\n")
    agent = AIAgent(
        model="anthropic/claude-sonnet-4", provider="openrouter",  # hermes' default provider
        base_url=server.api_base, api_key="sk-or-demo-key",
        max_turns=10, enabled_toolsets=["terminal", "file"],
        save_trajectories=True, verbose_logging=False,
        # baseagent's own options pass through: where to work, where records go
        cwd=str(workspace), session_dir=str(Path(tmp) / "sessions"),
        trajectories_dir=str(Path(tmp) / "trajectories"))
    with agent:
        print(f"model: {agent.model}")
        print(f"answer: {agent.chat('How many lines does notes.txt have?')}")

    # OpenRouter continues the model's reasoning from reasoning_details sent back
    sent = next(m for m in server.requests[1]["messages"] if m["role"] == "assistant")
    print(f"reasoning sent back: {sent['reasoning_details'][0]['text']}")

    # save_trajectories: one ShareGPT line per conversation turn, as hermes writes them
    lines = (Path(tmp) / "trajectories" / "trajectory_samples.jsonl").read_text().splitlines()
    entry = json.loads(lines[0])
    print(f"trajectory: completed={entry['completed']}, turns: "
          + " ".join(turn["from"] for turn in entry["conversations"]))
