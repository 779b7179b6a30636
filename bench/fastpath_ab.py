"""What llm/openai_fastpath.py saves on the litellm path: a streamed call with and without it.

    python bench/fastpath_ab.py [--messages 201] [--calls 20]

Each side is a fresh process that configures litellm as llm/client.py does (with or without
the swap of openai-python's chat request transform) and times `--calls` streamed
`litellm.completion` calls of a `--messages`-message history (a system prompt, then shell
steps and their outputs) to the scripted server, median client-side time per call. The
model is `openai/gpt-4.1`, a model the direct path leaves to litellm (OpenAI's own models
keep litellm's per-model rules), which is where the swap still applies.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from baseagent.testing.scripted_server import ScriptedServer  # noqa: E402

CHILD = r"""
import json, statistics, sys, time
api_base, messages, calls, fast = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
from baseagent.llm import client
if not fast:
    from baseagent.llm import openai_fastpath
    openai_fastpath.install = lambda: False  # leave openai-python's transform in place
litellm = client.load_litellm()
history = [{"role": "system", "content": "You are a coding agent. " * 200}]
for i in range(messages // 2):
    history.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{i}",
        "type": "function", "function": {"name": "shell", "arguments": json.dumps({"command": f"echo {i}"})}}]})
    history.append({"role": "tool", "tool_call_id": f"call_{i}", "content": f"{i}\n" * 20})
tools = [{"type": "function", "function": {"name": "shell", "description": "Run a command.",
          "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]
times = []
for _ in range(calls + 1):
    t0 = time.perf_counter()
    for _chunk in litellm.completion(model="openai/gpt-4.1", api_base=api_base, api_key="k",
            messages=history, tools=tools, stream=True, num_retries=0,
            stream_options={"include_usage": True}):
        pass
    times.append(time.perf_counter() - t0)
print(json.dumps(statistics.median(times[1:])))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=201)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    server = ScriptedServer(lambda _b, _i: {"content": "ok"}).start()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    results = {}
    for fast in ("1", "0", "1", "0"):
        out = subprocess.run([sys.executable, "-c", CHILD, server.api_base, str(args.messages),
                              str(args.calls), fast], env=env, capture_output=True, text=True,
                             check=True).stdout
        results.setdefault(fast, []).append(json.loads(out.strip().splitlines()[-1]))
    server.stop()
    with_swap, without = min(results["1"]), min(results["0"])
    print(f"load average (1 min): {os.getloadavg()[0]:.2f}; history of {args.messages} messages")
    print(f"streamed litellm call, median: with the swap {with_swap * 1000:.1f} ms, "
          f"without {without * 1000:.1f} ms (best of two processes each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
