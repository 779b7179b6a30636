"""AgentB's run model with the library, offline: a tool you run, a sub-agent, AgentB's events.

    python examples/library_external_tools.py

1. `get_weather` is an external tool: the agent pauses (`requires_action`) when the model
   calls it, this program answers, and `submit_tool_outputs` continues the same turn.
2. With `delegate=True` the model hands a sub-task to a sub-agent, whose items are nested
   in the delegate call's item.
3. `stream(format="agentb")` shows the same kind of run in AgentB's event vocabulary.

The scripted model server (baseagent.testing) plays the model's side, so this needs no API
key and no network.
"""
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))  # a checkout works too

from baseagent import Agent  # noqa: E402
from baseagent.testing.scripted_server import ScriptedServer  # noqa: E402

WEATHER = {"name": "get_weather", "description": "Current weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}
SCRIPT = [
    # 1. the model calls the tool this program runs
    {"tool_calls": [{"id": "call_w", "name": "get_weather", "arguments": {"city": "Paris"}}]},
    {"content": "Light rain in Paris: take an umbrella."},
    # 2. the model delegates; the sub-agent reads a file and answers
    {"tool_calls": [{"id": "call_d", "name": "delegate",
                     "arguments": {"task": "Read packing.txt and list what it says to pack."}}]},
    {"tool_calls": [{"id": "call_r", "name": "read_file",
                     "arguments": {"file_path": "packing.txt"}}]},
    {"content": "packing.txt says: umbrella, boots."},
    {"content": "Pack an umbrella and boots."},
    # 3. a short turn, streamed as AgentB events
    {"content": "Have a good trip!"},
]


def my_weather_service(city: str) -> str:
    return f"{city}: light rain, 14 C"


with ScriptedServer(SCRIPT) as server, tempfile.TemporaryDirectory() as workspace:
    (Path(workspace) / "packing.txt").write_text("umbrella\nboots\n")
    agent = Agent(model="openai/demo", api_base=server.api_base, api_key="dummy",
                  cwd=workspace, session=False, verify=False, delegate=True,
                  external_tools=[WEATHER])

    print("-- 1. a tool this program runs")
    result = agent.run("Should I take an umbrella in Paris?")
    while result.status == "requires_action":
        for call in result.pending_tool_calls:
            print(f"the agent asks: {call.name}({call.arguments})")
        result = agent.submit_tool_outputs(
            {c.id: my_weather_service(**c.arguments) for c in result.pending_tool_calls})
    print(f"{result.status}: {result.final_message}")

    print("-- 2. a sub-agent")
    result = agent.run("What should I pack?")
    delegated = result.items[0]
    print(f"{delegated.type}: {delegated.prompt}")
    for item in delegated.items:
        print(f"  nested {item.type}: {getattr(item, 'tool', None) or item.text}")
    print(f"{result.status}: {result.final_message}")

    print("-- 3. AgentB's events")
    for event in agent.stream("Thanks!", format="agentb"):
        print(event.type)
