"""Named specialists and the planner (AgentB's PlanningAgent), offline.

    python examples/library_specialists.py

Two specialists, each with its own tools: `reader` may only look (the `read` toolset),
`writer` may edit files (`edit`) and has a prompt of its own. With `planner=True` the agent
keeps the plan (update_plan) and works only through them: its own tools are update_plan
and delegate_to_specialist. Each delegation is a collab_tool_call item with the
specialist's items nested in it, and AgentB's sub-agent events carry the specialist's id.

The scripted model server (baseagent.testing) plays every model of the run, so this needs no
API key and no network; in a config file the same specialists are

    [specialists.reader]
    description = "Reads files and reports exactly what they say."
    tools = ["read"]

    [specialists.writer]
    description = "Creates and edits files."
    tools = ["edit"]
    prompt = "Write files exactly as asked; answer with the paths you wrote."

and `baseagent --planner "..."` runs the planner.
"""
import json
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))  # a checkout works too

from baseagent import Agent, Specialist  # noqa: E402
from baseagent.testing.scripted_server import ScriptedServer  # noqa: E402


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


def plan(*steps):
    return {"tool_calls": [call("update_plan", plan=[{"step": s, "status": st}
                                                      for s, st in steps])]}


# What each model says, by who asks: the planner, or a specialist (its system prompt names it).
SCRIPTS = {
    "planner": [
        plan(("read the version", "in_progress"), ("write VERSION.txt", "pending")),
        {"tool_calls": [call("delegate_to_specialist", specialist_id="reader",
                             sub_task="Read setup.cfg and report the value of `version`.",
                             required_output_format="the version alone")]},
        plan(("read the version", "completed"), ("write VERSION.txt", "in_progress")),
        {"tool_calls": [call("delegate_to_specialist", specialist_id="writer",
                             sub_task="Create VERSION.txt containing the line 1.4.2")]},
        plan(("read the version", "completed"), ("write VERSION.txt", "completed")),
        {"content": "VERSION.txt now says 1.4.2, the version in setup.cfg."},
    ],
    "reader": [
        {"tool_calls": [call("read_file", file_path="setup.cfg")]},
        {"content": "1.4.2"},
    ],
    "writer": [
        {"tool_calls": [call("write_file", file_path="VERSION.txt", content="1.4.2\n")]},
        {"content": "Wrote VERSION.txt."},
    ],
}
_progress = {who: 0 for who in SCRIPTS}
_lock = threading.Lock()


def respond(body, _index):
    text = json.dumps(body)
    who = next((w for w in ("reader", "writer") if f'the specialist \\"{w}\\"' in text),
               "planner")
    with _lock:
        n = _progress[who]
        _progress[who] += 1
    return SCRIPTS[who][n] if n < len(SCRIPTS[who]) else None


SPECIALISTS = [
    Specialist(name="reader", description="Reads files and reports exactly what they say.",
               tools=["read"]),
    Specialist(name="writer", description="Creates and edits files.", tools=["edit"],
               prompt="Write files exactly as asked; answer with the paths you wrote."),
]

collab_lines = []


def show_collab(event):
    """The Codex events (on_event, on the thread running the turn): each delegation is a
    collab_tool_call item, the specialist's items nested in it."""
    if event.type == "item.completed" and event.item.type == "collab_tool_call":
        item = event.item
        collab_lines.append(f"collab_tool_call ({item.status}): {item.prompt}")
        for nested in item.items:
            what = {"mcp_tool_call": lambda i: i.tool, "agent_message": lambda i: i.text,
                    "file_change": lambda i: " ".join(f"{c.kind} {Path(c.path).name}"
                                                     for c in i.changes)}
            collab_lines.append(f"  nested {nested.type}: {what[nested.type](nested)}")


with ScriptedServer(respond) as server, tempfile.TemporaryDirectory() as workspace:
    (Path(workspace) / "setup.cfg").write_text("[metadata]\nname = demo\nversion = 1.4.2\n")
    agent = Agent(model="openai/demo", api_base=server.api_base, api_key="dummy",
                  cwd=workspace, session=False, verify=False, planner=True,
                  specialists=SPECIALISTS, on_event=show_collab)
    answer = None
    for event in agent.stream("Write the package version into VERSION.txt.", format="agentb"):
        if event.type.startswith("agent.sub_agent.invocation."):
            print(f"AgentB {event.type}: {event.data.specialistId}")
        elif event.type == "thread.run.completed":
            answer = event.data.finalMessages[-1].content
    agent.close()
    print("\n".join(collab_lines))
    print("planner's tools:", ", ".join(t["function"]["name"]
                                        for t in server.requests[0]["tools"]))
    print("answer:", answer)
    print("VERSION.txt:", (Path(workspace) / "VERSION.txt").read_text().strip())
