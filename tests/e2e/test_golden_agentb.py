"""AgentB's stream stays what it was: one library run against the scripted server (tools, a
failing one among them, a delegation, a tool the caller runs, a cancelled second turn)
compared with tests/golden/agentb_run.jsonl (normalised; see tests/golden/agentb.py)."""
from __future__ import annotations

import difflib
import sys
from pathlib import Path

from helpers import TESTS

GOLDEN = TESTS / "golden"
sys.path.insert(0, str(GOLDEN))

import agentb as scenario  # noqa: E402

TERMINAL = {"thread.run.completed", "thread.run.failed", "thread.run.requires_action"}


def test_agentb_stream_matches_the_golden_file(tmp_path: Path) -> None:
    events, called_back = scenario.run(tmp_path)
    got = scenario.normalise(events, tmp_path / "ws")
    want = scenario.GOLDEN.read_text()
    assert got == want, "".join(difflib.unified_diff(
        want.splitlines(True), got.splitlines(True), "golden", "now"))

    # on_event(on_event_format="agentb") got the same story as the stream
    assert scenario.normalise(called_back, tmp_path / "ws") == got

    # the caller's tool streamed its arguments in pieces (joined in the golden file), and
    # they join up to the arguments the call was made with
    pieces = [c.function.arguments for e in events if e.type == "thread.message.delta"
              for c in e.data.delta.toolCallsChunk or [] if c.id == "call_w"]
    assert len(pieces) > 1 and "".join(pieces) == '{"city": "Paris"}'

    # each of the three streams (paused, continued, cancelled) ends once, at its end
    ends = [i for i, e in enumerate(events) if e.type in TERMINAL]
    assert [events[i].type for i in ends] == ["thread.run.requires_action",
                                              "thread.run.completed", "thread.run.failed"]
    assert ends[-1] == len(events) - 1
