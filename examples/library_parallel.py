"""Several agents at once in one process, each in its own workspace.

    python examples/library_parallel.py

Each Agent keeps all its state (events, processes, cancellation, session record) on itself,
so threads do not see each other's work. litellm is imported once for all of them.
"""
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from baseagent import Agent  # noqa: E402
from baseagent.testing.scripted_server import ScriptedServer  # noqa: E402


def respond(body: dict, _index: int) -> dict:
    """Each task writes its own number, then reports (keyed on the task's instruction)."""
    task = [m for m in body["messages"] if m["role"] == "user"][1]["content"]
    number = task.split()[-1]
    if not any(m["role"] == "tool" for m in body["messages"]):
        return {"tool_calls": [{"name": "write_file", "arguments": {
            "file_path": "result.txt", "content": f"square of {number} is {int(number) ** 2}\n"}}]}
    return {"content": f"Task {number} done."}


with ScriptedServer(respond) as server, tempfile.TemporaryDirectory() as root:
    results = {}

    def work(n: int) -> None:
        workspace = Path(root) / f"task{n}"
        workspace.mkdir()
        agent = Agent(model="openai/demo", api_base=server.api_base, api_key="dummy",
                      cwd=workspace, verify=False, session=False)
        results[n] = (agent.run(f"compute the square of {n}"),
                      (workspace / "result.txt").read_text().strip())

    threads = [threading.Thread(target=work, args=(n,)) for n in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n in sorted(results):
        result, written = results[n]
        print(f"task {n}: {result.status}: {result.final_message} ({written})")
