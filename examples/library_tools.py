"""Your own tools beside the built-in ones, offline: a Python function, a decorated one, and
a toolset that leaves the editing tools out.

    python examples/library_tools.py

The scripted model server plays the model's side (it calls the tools, then answers), so
this runs with no API key and no network. MCP servers and OpenAPI documents join the same
way (`mcp_servers=`, `openapi=`): see docs/TOOLS.md.
"""
import sys
import tempfile
from pathlib import Path
from typing import Annotated

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))  # a checkout works too

from pydantic import BaseModel, Field  # noqa: E402

from baseagent import Agent, ToolError, tool  # noqa: E402
from baseagent.testing.scripted_server import ScriptedServer  # noqa: E402

TICKETS = {"ENG-12": "The login test is flaky on CI."}


class Ticket(BaseModel):
    ticket: str = Field(description="ticket id, e.g. ENG-12")


@tool
def lookup_ticket(args: Ticket) -> str:
    """Read a ticket from the tracker."""
    if args.ticket not in TICKETS:
        raise ToolError(f"no ticket {args.ticket}")  # the model reads this and goes on
    return TICKETS[args.ticket]


def estimate(hours: Annotated[float, Field(gt=0)], people: int = 1) -> dict:
    """Days of work for a task."""
    return {"days": round(hours / (8 * people), 2)}


script = [
    {"tool_calls": [{"name": "lookup_ticket", "arguments": {"ticket": "ENG-12"}},
                    {"name": "lookup_ticket", "arguments": {"ticket": "ENG-99"}},
                    {"name": "estimate", "arguments": {"hours": 12, "people": 2}}]},
    {"content": "ENG-12 is a flaky login test; about 0.75 days for two people."},
]
with ScriptedServer(script) as server, tempfile.TemporaryDirectory() as workspace:
    agent = Agent(model="openai/demo", api_base=server.api_base, api_key="dummy",
                  cwd=workspace, session=False, verify=False,
                  tools=[lookup_ticket, estimate], disabled_toolsets=["edit"])
    result = agent.run("what is ENG-12 about, and how long would it take?")
    offered = [t["function"]["name"] for t in server.requests[0]["tools"]]
    print(f"offered: {', '.join(offered)}")
    for item in result.items:
        if item.type == "mcp_tool_call":
            outcome = item.result.content[0]["text"] if item.result else item.error.message
            print(f"  {item.tool} {item.arguments}: {item.status}: {outcome}")
    print(f"answer: {result.final_message}")
