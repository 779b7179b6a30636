"""Every tool result is redacted with the run's redactor before it enters the history the
model is sent (issue 39, item 7), whatever tool made it: the registry does it, not each tool."""
from __future__ import annotations

from pathlib import Path

from baseagent.output.redact import Redactor
from baseagent.tools.python_tool import as_tool
from baseagent.tools.registry import ToolRegistry
from baseagent.tools.context import ToolContext

KEY = "sk-registry-redaction-0123456789abcdef"


def leak(where: str) -> str:
    """Hands back a secret, as `cat` of a config file would."""
    return f"api_key = \"{KEY}\" ({where})"


def test_a_tool_result_is_redacted_before_the_model_sees_it(tmp_path: Path) -> None:
    registry = ToolRegistry([as_tool(leak)])
    ctx = ToolContext(cwd=tmp_path, redact=Redactor([KEY]).text)
    result = registry.execute(registry.prepare("leak", '{"where": "here"}'), ctx)
    assert KEY not in result.output and "[REDACTED]" in result.output, result.output
    failed = registry.execute(registry.prepare("leak", f'{{"nowhere": "{KEY}"}}'), ctx)
    assert not failed.success and KEY not in failed.output, failed.output


def test_without_a_redactor_the_result_is_as_the_tool_made_it(tmp_path: Path) -> None:
    registry = ToolRegistry([as_tool(leak)])
    result = registry.execute(registry.prepare("leak", '{"where": "here"}'),
                              ToolContext(cwd=tmp_path))
    assert KEY in result.output
