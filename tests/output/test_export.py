"""Trajectory export: ATIF v1.7 (validated), ShareGPT and raw OpenAI messages."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from baseagent.records.replay import MISSING_RESULT
from baseagent.records.recorder import SessionRecorder
from baseagent.export import export_record
from baseagent.export.atif import Trajectory
from baseagent.output import events as ev
from helpers import run_agent

TID = "0199a213-81c0-7800-8aa1-bbab2a035a53"
TOOLS = [{"type": "function", "function": {"name": "shell", "parameters": {"type": "object"}}}]


class Totals:
    def __init__(self) -> None:
        self.input_tokens = self.cached_input_tokens = self.output_tokens = self.calls = 0
        self.cost_usd, self.cost_known = 0.0, True

    def add(self, prompt: int, cached: int, completion: int, cost: float) -> None:
        self.input_tokens += prompt
        self.cached_input_tokens += cached
        self.output_tokens += completion
        self.cost_usd += cost
        self.calls += 1


def call(call_id: str, args: str, name: str = "shell") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def write_thread(session_dir: Path, thread_id: str = TID, reason: str = "summary") -> Path:
    """Two turns: reasoning, two tool calls (one with broken JSON arguments), a compaction,
    a resumed run with another model that was killed with a tool call pending."""
    path = session_dir / f"{thread_id}.jsonl"
    totals = Totals()
    rec = SessionRecorder(path)
    rec.meta(thread_id=thread_id, model="openai/m1", cwd="/w", version="9.9", tools=TOOLS)
    rec.message({"role": "system", "content": "You are baseagent."})
    rec.message({"role": "user", "content": "<environment_context/>"})
    rec.track_usage(lambda: totals)
    rec.emit(ev.TurnStarted())
    rec.message({"role": "user", "content": [{"type": "text", "text": "fix the bug"},
                                             {"type": "image_url",
                                              "image_url": {"url": "data:image/png;base64,AA"}}]})
    rec.emit(ev.ItemCompleted(item=ev.ReasoningItem(id="item_0", text="Look first.")))
    totals.add(1000, 0, 50, 0.01)
    rec.message({"role": "assistant", "content": "Looking.",
                 "tool_calls": [call("c1", '{"command": "ls"}'), call("c2", "[1, 2]")]})
    rec.message({"role": "tool", "tool_call_id": "c1", "content": "a.py"})
    rec.message({"role": "tool", "tool_call_id": "c2", "content": "Error: invalid arguments"})
    rec.history([{"role": "system", "content": "You are baseagent."},
                 {"role": "user", "content": "fix the bug"},
                 {"role": "user", "content": "Summary: listed files, found a.py."}], reason)
    totals.add(400, 300, 20, 0.002)
    rec.message({"role": "assistant", "content": "Fixed."})
    rec.emit(ev.TurnCompleted(usage=ev.Usage(input_tokens=1400, cached_input_tokens=300,
                                             output_tokens=70)))
    rec.usage(input_tokens=1400, cached_input_tokens=300, output_tokens=70, cost_usd=0.012,
              calls=2)
    rec.close()

    rec = SessionRecorder(path)  # the resumed run, another model, killed mid-tool
    rec.meta(thread_id=thread_id, model="openai/m2", cwd="/w", resumed=True, version="9.9",
             tools=TOOLS)
    rec.track_usage(lambda: totals)
    rec.emit(ev.TurnStarted())
    rec.message({"role": "user", "content": "and add a test"})
    totals.add(600, 500, 30, 0.003)
    rec.message({"role": "assistant", "content": None,
                 "tool_calls": [call("c3", '{"command": "pytest"}')]})
    rec.close()
    return path


def test_atif_trajectory(tmp_path):
    data = export_record(write_thread(tmp_path), "atif")
    Trajectory.model_validate(data)  # the pydantic models accept it
    assert data["schema_version"] == "ATIF-v1.7" and data["session_id"] == TID
    assert data["agent"] == {"name": "baseagent", "version": "9.9", "model_name": "openai/m1",
                             "tool_definitions": TOOLS}
    steps = data["steps"]
    assert [s["step_id"] for s in steps] == list(range(1, len(steps) + 1))
    assert [s["source"] for s in steps] == [
        "system", "user", "user", "agent", "system", "agent", "user", "agent"]
    assert steps[2]["message"] == "fix the bug\n[image]"

    act = steps[3]
    assert act["model_name"] == "openai/m1" and act["reasoning_content"] == "Look first."
    assert act["tool_calls"] == [
        {"tool_call_id": "c1", "function_name": "shell", "arguments": {"command": "ls"}},
        {"tool_call_id": "c2", "function_name": "shell", "arguments": {"value": [1, 2]}}]
    assert act["observation"] == {"results": [
        {"source_call_id": "c1", "content": "a.py"},
        {"source_call_id": "c2", "content": "Error: invalid arguments"}]}
    assert act["metrics"] == {"prompt_tokens": 1000, "completion_tokens": 50,
                              "cached_tokens": 0, "cost_usd": 0.01}

    compaction = steps[4]
    assert compaction["extra"]["context_management"]["type"] == "compaction"
    assert compaction["extra"]["context_management"]["summary"] == \
        "Summary: listed files, found a.py."
    assert "tool_calls" not in compaction and "metrics" not in compaction
    assert steps[5]["metrics"] == {"prompt_tokens": 400, "completion_tokens": 20,
                                   "cached_tokens": 300, "cost_usd": 0.002}

    resumed = steps[7]  # the killed call: its step has the call and no observation
    assert resumed["model_name"] == "openai/m2" and "observation" not in resumed
    for step in steps:
        if step["source"] != "agent":
            assert not {"model_name", "reasoning_content", "tool_calls", "metrics"} & set(step)
    assert data["final_metrics"] == {"total_prompt_tokens": 2000, "total_completion_tokens": 100,
                                     "total_cached_tokens": 800, "total_cost_usd": 0.015,
                                     "total_steps": 8}


def test_pruning_is_named_as_such(tmp_path):
    data = export_record(write_thread(tmp_path, reason="prune"), "atif")
    management = data["steps"][4]["extra"]["context_management"]
    assert management["type"] == "pruning" and "summary" not in management


def _mutations():
    def gap(t): t["steps"][1]["step_id"] = 3
    def user_metrics(t): t["steps"][0]["metrics"] = {"prompt_tokens": 1}
    def user_tool_calls(t): t["steps"][0]["tool_calls"] = []
    def dangling(t): t["steps"][1]["observation"]["results"][0]["source_call_id"] = "c9"
    def string_args(t): t["steps"][1]["tool_calls"][0]["arguments"] = "ls"
    def bad_time(t): t["steps"][0]["timestamp"] = "yesterday"
    def fractional(t): t["steps"][1]["metrics"]["prompt_tokens"] = 1.5
    def extra_key(t): t["surprise"] = 1
    def no_steps(t): t["steps"] = []
    def version(t): t["schema_version"] = "ATIF-v2.0"
    def wrong_total(t): t["final_metrics"]["total_steps"] = 5
    return [gap, user_metrics, user_tool_calls, dangling, string_args, bad_time, fractional,
            extra_key, no_steps, version, wrong_total]


VALID = {
    "schema_version": "ATIF-v1.7", "session_id": "s",
    "agent": {"name": "baseagent", "version": "1"},
    "steps": [
        {"step_id": 1, "source": "user", "message": "hi",
         "timestamp": "2026-01-02T03:04:05.678+00:00"},
        {"step_id": 2, "source": "agent", "message": "",
         "tool_calls": [{"tool_call_id": "c1", "function_name": "shell", "arguments": {}}],
         "observation": {"results": [{"source_call_id": "c1", "content": "ok"}]},
         "metrics": {"prompt_tokens": 1, "completion_tokens": 1, "cached_tokens": 0}},
    ],
    "final_metrics": {"total_steps": 2},
}


@pytest.mark.parametrize("mutate", _mutations(), ids=lambda f: f.__name__)
def test_atif_models_reject_invalid_trajectories(mutate):
    Trajectory.model_validate(VALID)
    broken = copy.deepcopy(VALID)
    mutate(broken)
    with pytest.raises(ValidationError):
        Trajectory.model_validate(broken)


def test_sharegpt_conversation(tmp_path):
    data = export_record(write_thread(tmp_path), "sharegpt")
    assert data["id"] == TID
    turns = data["conversations"]
    assert [t["from"] for t in turns] == [
        "system", "human", "human", "gpt", "tool", "gpt", "human", "gpt", "tool"]
    assert all(set(t) - {"reasoning"} == {"from", "value"} and isinstance(t["value"], str)
               for t in turns)
    assert [t.get("reasoning") for t in turns if t["from"] == "gpt"] == ["Look first.", None,
                                                                        None]
    assert turns[0]["value"].startswith("You are baseagent.\n\n<tools>\n")
    assert json.loads(turns[0]["value"].split("<tools>\n")[1].split("\n</tools>")[0]) == TOOLS
    gpt = turns[3]["value"]
    assert gpt.startswith("<think>\nLook first.\n</think>\nLooking.\n<tool_call>\n")
    calls = [json.loads(block.split("\n</tool_call>")[0])
             for block in gpt.split("<tool_call>\n")[1:]]
    assert calls == [{"name": "shell", "arguments": {"command": "ls"}},
                     {"name": "shell", "arguments": [1, 2]}]
    responses = [json.loads(block.split("\n</tool_response>")[0])
                 for block in turns[4]["value"].split("<tool_response>\n")[1:]]
    assert responses == [
        {"tool_call_id": "c1", "name": "shell", "content": "a.py"},
        {"tool_call_id": "c2", "name": "shell", "content": "Error: invalid arguments"}]
    assert json.loads(turns[8]["value"].split("<tool_response>\n")[1].split("\n</")[0])[
        "content"] == MISSING_RESULT


def test_openai_messages(tmp_path):
    messages = export_record(write_thread(tmp_path), "openai")
    assert [m["role"] for m in messages] == [
        "system", "user", "user", "assistant", "tool", "tool", "assistant", "user", "assistant",
        "tool"]
    assert messages[3]["tool_calls"][0] == call("c1", '{"command": "ls"}')
    assert messages[-1] == {"role": "tool", "tool_call_id": "c3", "content": MISSING_RESULT}


def test_export_cli(tmp_path):
    home = tmp_path / "home"
    session_dir = home / ".baseagent" / "sessions"
    session_dir.mkdir(parents=True)
    write_thread(session_dir)
    write_thread(session_dir, thread_id="second-thread")

    one = run_agent(["export", TID[:8], "--format", "sharegpt"], cwd=tmp_path, home=home,
                    parse=False)
    assert one.returncode == 0, one.stderr
    assert len(one.stdout.splitlines()) == 1  # one training line per conversation
    assert json.loads(one.stdout)["id"] == TID

    out = tmp_path / "out" / "all.jsonl"
    every = run_agent(["export", "--all", "-f", "atif", "-o", str(out)], cwd=tmp_path,
                      home=home, parse=False)
    assert every.returncode == 0, every.stderr
    documents = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(d["session_id"] for d in documents) == sorted([TID, "second-thread"])
    for document in documents:
        Trajectory.model_validate(document)

    pretty = run_agent(["export", TID, "--dir", str(session_dir)], cwd=tmp_path,
                       home=tmp_path, parse=False)
    assert pretty.returncode == 0 and json.loads(pretty.stdout)["schema_version"] == "ATIF-v1.7"

    for args, error in ((["export", TID, "-f", "csv"], "unknown format 'csv'"),
                        (["export", "nope-nope"], "no session record for thread nope-nope"),
                        (["export"], "give a THREAD_ID or --all")):
        bad = run_agent(args, cwd=tmp_path, home=home, parse=False)
        assert bad.returncode == 2 and error in bad.stderr, bad.stderr
