"""Toolsets, offline: named sets of tools from built-in groups, Python functions and a tool
provider; one too large for an agent split into groups by the model once, then cached.

    python examples/library_toolsets.py

The scripted model server plays the model (it answers the split request, then drives one
agent), so this runs with no API key and no network. OpenAPI documents and MCP servers
join a Toolset the same way (`openapi={...}`, `mcp_servers={...}`): see docs/TOOLS.md.
"""
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))  # a checkout works too

from baseagent import Agent, ToolProvider, Toolset, ToolsetOrchestrator  # noqa: E402
from baseagent.testing.scripted_server import ScriptedServer  # noqa: E402

STOCK = {"apples": 12, "pears": 0, "plums": 7}


def count(item: str) -> int:
    """How many of an item are in stock."""
    return STOCK.get(item, 0)


def restock(item: str, amount: int) -> str:
    """Order more of an item."""
    STOCK[item] = STOCK.get(item, 0) + amount
    return f"ordered {amount} {item}"


def price(item: str) -> float:
    """The price of one item."""
    return {"apples": 0.5, "pears": 0.8, "plums": 0.3}.get(item, 1.0)


class Shop(ToolProvider):
    """A tool provider (AgentB's IToolProvider): tools it makes when the agent starts."""

    name = "shop"

    def get_tools(self):
        def discount(item: str) -> str:
            """Today's discount on an item."""
            return "10% off" if item == "plums" else "none"

        return [discount]


split = {"groups": [
    {"name": "stock", "description": "What is in stock, and ordering more.",
     "tools": ["count", "restock"]},
    {"name": "prices", "description": "What things cost.", "tools": ["price", "discount"]}]}
script = [
    {"content": str(split).replace("'", '"')},  # the orchestrator's one split request
    {"tool_calls": [{"name": "count", "arguments": {"item": "pears"}},
                    {"name": "restock", "arguments": {"item": "pears", "amount": 10}}]},
    {"content": "Pears were out of stock; I ordered 10."},
]
with ScriptedServer(script) as server, tempfile.TemporaryDirectory() as home:
    options = dict(model="openai/demo", api_base=server.api_base, api_key="dummy",
                   toolset_max_tools=3)  # a toolset of more than 3 tools is split
    shop = Toolset("shop", "Run the shop", tools=[count, restock, price, Shop()])
    files = Toolset("files", "Read files", builtins=["read"])
    for run in (1, 2):
        with ToolsetOrchestrator([shop, files], cache_dir=Path(home) / "cache",
                                 **options) as orchestrator:
            built = orchestrator.toolsets()
            print(f"run {run}: {len(server.requests)} model call(s) so far")
        for toolset in built:
            names = ", ".join(tool.name for tool in toolset.tools)
            print(f"  {toolset.name}: {names} ({toolset.description})")

    # A built toolset is given to an agent like a tool: here the stock specialist.
    with ToolsetOrchestrator([shop], cache_dir=Path(home) / "cache", **options) as orchestrator:
        stock = orchestrator.toolset("shop_stock")
        agent = Agent(**options, cwd=home, session=False, verify=False, enabled_toolsets=[],
                      tools=[stock])
        result = agent.run("are we out of anything? order 10 if so")
        agent.close()
    offered = [t["function"]["name"] for t in server.requests[-1]["tools"]]
    print(f"the stock agent is offered: {', '.join(offered)}")
    for item in result.items:
        if item.type == "mcp_tool_call":
            print(f"  {item.tool} {item.arguments}: {item.result.content[0]['text']}")
    print(f"answer: {result.final_message}")
