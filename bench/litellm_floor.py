"""What one litellm.completion() call costs the caller, with nothing else around it.

Run as its own process (it imports litellm) by run.py:

    python bench/litellm_floor.py --sizes 0,100,500 --calls 5

It starts its own scripted server, builds histories shaped like an agent's (N steps of a
shell tool call and its short result), and times complete calls, streamed (as baseagent
calls) and not (as mini-swe-agent calls), minus the server's own time. litellm is used
exactly as `import litellm` leaves it: this is the floor any litellm-based agent pays per
step, so the per-step figures of both agents can be read against it. Prints JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent / "src")]

import harness  # noqa: E402
from agents import MODEL  # noqa: E402

# The system prompt and tool list size of a typical agent request (ours is about this).
SYSTEM_CHARS = 6_000
# Every call is preceded by this many untimed ones (first-call lazy imports, connections).
WARMUP_CALLS = 1


def history(steps: int) -> list[dict]:
    messages = [{"role": "system", "content": "s" * SYSTEM_CHARS},
                {"role": "user", "content": "Run the commands the model asks for."}]
    for i in range(steps):
        messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": "shell", "arguments": '{"command": "true"}'}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i}",
                         "content": "Exit code: 0\nWall time: 0.0 seconds\nOutput:\n"})
    return messages


def tools() -> list[dict]:
    from baseagent.tools.registry import ToolRegistry

    return ToolRegistry().specs()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="0,100,500")
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    specs = tools()
    server = harness.TimedServer(lambda _b, _i: {
        "tool_calls": [{"name": "shell", "arguments": {"command": "true"}}], "_kind": "step"})
    server.start()
    out: dict[str, dict[str, float]] = {"stream": {}, "no_stream": {}}
    try:
        for mode, stream in (("stream", True), ("no_stream", False)):
            for size in (int(s) for s in args.sizes.split(",")):
                messages = history(size)
                samples = []
                for i in range(WARMUP_CALLS + args.calls):
                    k = len(server.exchanges)
                    t0 = time.perf_counter()
                    reply = litellm.completion(model=MODEL, messages=messages, tools=specs,
                                               stream=stream, api_base=server.api_base,
                                               api_key="dummy", num_retries=0)
                    if stream:
                        for _ in reply:
                            pass
                    elapsed = time.perf_counter() - t0
                    ex = server.answered(k)
                    if i >= WARMUP_CALLS:
                        samples.append(elapsed - (ex.done - ex.entered))
                out[mode][str(size)] = round(statistics.median(samples) * 1000, 2)
    finally:
        server.stop()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
