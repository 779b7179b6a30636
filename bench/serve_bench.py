"""What `baseagent serve` adds: event latency through the server, 20 threads streaming at
once, memory per idle event stream.

    python bench/serve_bench.py                 # writes bench/SERVE_RESULTS.md
    python bench/serve_bench.py --threads 5     # a quicker look

The server runs in this process (uvicorn on 127.0.0.1, a free port), its threads against
the project's scripted model server (no model latency: streamed answers in small chunks
and a command printing lines for a second). The readers are another process, one HTTP
connection per thread reading the SSE stream as a browser's client would. Latency added
by the server: from the moment the engine hands an event to the server's log (a wall-clock
stamp taken there) to the moment the reader has parsed it (the same clock, another
process). With selenium and Chromium installed, the same for one thread into a page's DOM
(client.js reading the stream, render.js drawing each event; `--no-browser` skips it).
Memory per idle stream: this process's RSS before and after opening N streams
that receive nothing, divided by N. Needs the serve extra.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

TOKEN = "bench-token-0123456789abcdef"


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    k = min(len(values) - 1, max(0, round(p / 100 * (len(values) - 1))))
    return values[k]


# -- the readers (a separate process) ----------------------------------------------------------

def reader_main(url: str, thread_ids: list[str]) -> None:
    import httpx

    out: list[dict[str, Any]] = []
    lock = threading.Lock()

    def read(thread_id: str) -> None:
        with httpx.Client(base_url=url, timeout=120,
                          headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            with client.stream("GET", f"/api/threads/{thread_id}/events") as response:
                event_id = ""
                for line in response.iter_lines():
                    if line.startswith("id:"):
                        event_id = line[3:].strip()
                    elif line.startswith("data:"):
                        event = json.loads(line[5:])
                        now = time.time()
                        with lock:
                            out.append({"id": event_id, "t": now, "type": event["type"]})
                        if event["type"] in ("turn.completed", "turn.failed"):
                            return

    readers = [threading.Thread(target=read, args=(t,)) for t in thread_ids]
    for r in readers:
        r.start()
    for r in readers:
        r.join()
    sys.stdout.write(json.dumps(out))


# -- the server side ---------------------------------------------------------------------------

def script(n: int) -> list[dict[str, Any]]:
    text = f"Answer for thread {n}: " + "the quick brown fox jumps over the lazy dog. " * 8
    return [
        {"content": f"Thread {n} looks around.", "chunk_size": 4, "chunk_delay": 0.005,
         "tool_calls": [{"name": "shell", "arguments": {
             "command": "for i in $(seq 1 10); do echo line $i; sleep 0.1; done"}}]},
        {"content": text, "chunk_size": 4, "chunk_delay": 0.005},
    ]


def run_threads(server: Any, count: int, stamps: dict[str, float]) -> dict[str, Any]:
    import httpx

    client = httpx.Client(base_url=server.url, timeout=60,
                          headers={"Authorization": f"Bearer {TOKEN}"})
    base = f"bench {time.monotonic_ns()}"
    ids = [client.post("/api/threads", json={}).json()["id"] for _ in range(count)]
    reader = subprocess.Popen([sys.executable, __file__, "--reader", server.url, ",".join(ids)],
                              stdout=subprocess.PIPE, text=True)
    api = server.app.app.state.api
    deadline = time.monotonic() + 60
    while api.streams < count:  # every reader is connected before the turns start
        assert time.monotonic() < deadline, "the readers did not connect"
        time.sleep(0.01)
    started = time.monotonic()
    for n, thread_id in enumerate(ids):
        client.post(f"/api/threads/{thread_id}/turns", json={"input": f"{base} {n}"})
    out, _ = reader.communicate(timeout=600)
    wall = time.monotonic() - started
    received = json.loads(out)
    latencies = [(r["t"] - stamps[r["id"]]) * 1000 for r in received if r["id"] in stamps]
    if os.environ.get("SERVE_BENCH_DEBUG"):
        worst = sorted(((r["t"] - stamps[r["id"]]) * 1000, r["type"], r["id"]) for r in received)
        print(worst[-8:], file=sys.stderr)
    client.close()
    return {"threads": count, "events": len(received), "wall_s": round(wall, 2),
            "p50_ms": round(percentile(latencies, 50), 2),
            "p95_ms": round(percentile(latencies, 95), 2),
            "max_ms": round(max(latencies), 2) if latencies else None}


def dom_latency(server: Any, stamps: dict[str, float]) -> dict[str, Any] | None:
    """One thread's events into a page's DOM in headless Chromium (client.js reading the
    stream, render.js drawing each event), when selenium and Chromium are there."""
    import shutil

    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_path:
        return None
    import httpx

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    client = httpx.Client(base_url=server.url, timeout=60,
                          headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        driver.get(f"{server.url}/?token={TOKEN}")
        thread_id = client.post("/api/threads", json={}).json()["id"]
        driver.execute_script("""
            window.__times = []; window.__done = false;
            var box = document.createElement("div"); document.body.appendChild(box);
            var view = BaseagentRender.transcript(box);
            new BaseagentClient({}).subscribe(arguments[0], {onEvent: function (e, id) {
              view.apply(e);
              window.__times.push([id, performance.timeOrigin + performance.now(), e.type]);
              if (e.type === "turn.completed") window.__done = true;
            }});""", thread_id)
        time.sleep(1.0)
        client.post(f"/api/threads/{thread_id}/turns", json={"input": "bench 0"})
        deadline = time.monotonic() + 120
        while not driver.execute_script("return window.__done"):
            assert time.monotonic() < deadline, "the page never saw the turn end"
            time.sleep(0.05)
        times = driver.execute_script("return window.__times")
    finally:
        client.close()
        driver.quit()
    latencies = [t - stamps[i] * 1000 for i, t, _ in times if i in stamps]
    return {"events": len(times), "p50_ms": round(percentile(latencies, 50), 2),
            "p95_ms": round(percentile(latencies, 95), 2),
            "max_ms": round(max(latencies), 2) if latencies else None}


def idle_memory(server: Any, streams: int) -> dict[str, Any]:
    import httpx

    client = httpx.Client(base_url=server.url, timeout=60,
                          headers={"Authorization": f"Bearer {TOKEN}"})
    thread_id = client.post("/api/threads", json={}).json()["id"]
    time.sleep(0.5)
    before = rss_mb()
    sockets = []
    for _ in range(streams):
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.sendall((f"GET /api/threads/{thread_id}/events HTTP/1.1\r\nHost: 127.0.0.1:"
                      f"{server.port}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n").encode())
        sockets.append(sock)
    for sock in sockets:
        sock.recv(4096)  # the response headers: the stream is open
    time.sleep(1.0)
    after = rss_mb()
    open_streams = len(sockets)
    for sock in sockets:
        sock.close()
    client.close()
    return {"streams": open_streams, "rss_before_mb": round(before, 1),
            "rss_after_mb": round(after, 1),
            "kb_per_stream": round((after - before) * 1024 / streams, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--no-browser", action="store_true",
                        help="skip the row measured in headless Chromium")
    parser.add_argument("--reader", nargs=2, metavar=("URL", "IDS"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "SERVE_RESULTS.md")
    args = parser.parse_args()
    if args.reader:
        reader_main(args.reader[0], args.reader[1].split(","))
        return

    from baseagent.serve import extra_missing
    from baseagent.serve.command import Background, ServeOptions
    from baseagent.serve.log import EventLog
    from baseagent.testing.keyed import KeyedResponder
    from baseagent.testing.scripted_server import ScriptedServer

    missing = extra_missing()
    if missing:
        sys.exit(missing)
    stamps: dict[str, float] = {}
    append = EventLog.append

    def stamped(self: EventLog, name: str, data: str) -> Any:
        now = time.time()
        entry = append(self, name, data)
        stamps[entry.id] = now
        return entry

    EventLog.append = stamped  # type: ignore[method-assign]

    def steps_for(instruction: str) -> list[dict[str, Any]] | None:
        return script(int(instruction.rsplit(" ", 1)[1])) if instruction.startswith("bench") \
            else None

    model = ScriptedServer(KeyedResponder(steps_for)).start()
    home = Path(tempfile.mkdtemp(prefix="serve-bench-"))
    workspace = home / "ws"
    workspace.mkdir()
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "OPENAI_API_KEY": "sk-bench"}
    server = Background(ServeOptions(port=0, defaults={
        "model": "openai/bench", "api_base": model.api_base, "cwd": str(workspace),
        "verify": False, "session_dir": str(home / "sessions")}), env, TOKEN)
    try:
        one = run_threads(server, 1, stamps)
        many = run_threads(server, args.threads, stamps)
        dom = None if args.no_browser else dom_latency(server, stamps)
        idle = idle_memory(server, args.idle)
    finally:
        server.stop()
        model.stop()
        shutil.rmtree(home, ignore_errors=True)
    write(args, one, many, dom, idle)


def write(args: argparse.Namespace, one: dict[str, Any], many: dict[str, Any],
          dom: dict[str, Any] | None, idle: dict[str, Any]) -> None:
    lines = [
        "# baseagent serve: what the server adds",
        "",
        f"`python bench/serve_bench.py --threads {args.threads} --idle {args.idle}` "
        f"({time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}). Method: the docstring of bench/serve_bench.py.",
        "",
        "Event latency added by the server (the engine hands an event to the server's log "
        "-> a reader in another process has parsed it from the SSE stream):",
        "",
        "| threads streaming at once | events read | p50 ms | p95 ms | max ms "
        "| wall s (all turns) |",
        "|---|---|---|---|---|---|",
    ]
    for row in (one, many):
        lines.append(f"| {row['threads']} | {row['events']} | {row['p50_ms']} | "
                     f"{row['p95_ms']} | {row['max_ms']} | {row['wall_s']} |")
    if dom is not None:
        lines += ["", "Into a page's DOM (headless Chromium: client.js reads the stream, "
                  "render.js draws each event; the stamp is taken once the event is drawn):",
                  "", "| threads | events drawn | p50 ms | p95 ms | max ms |",
                  "|---|---|---|---|---|",
                  f"| 1 | {dom['events']} | {dom['p50_ms']} | {dom['p95_ms']} | "
                  f"{dom['max_ms']} |"]
    else:
        lines += ["", "(No browser row: selenium or Chromium is missing.)"]
    lines += [
        "",
        f"Memory per idle event stream: {idle['kb_per_stream']} KB of the server's RSS "
        f"({idle['streams']} streams open on one idle thread: {idle['rss_before_mb']} MB -> "
        f"{idle['rss_after_mb']} MB).",
        "",
        "The turns run in the server's process (the Agent is a library), so the 20-thread "
        "row is the server and 20 agents sharing this machine's cores; the latency is what a "
        "client waits beyond the engine, including that contention.",
        "",
    ]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
