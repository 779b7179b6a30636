"""Attacks on `baseagent serve`: no token or a wrong one, another site's page (Origin,
Sec-Fetch-Site), DNS rebinding (Host), path traversal into the package, bodies too large,
a listen address others can reach without a chosen token, and clients that hold
connections open or never read while other threads work."""
from __future__ import annotations

import http.client
import os
import re
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import TOKEN, Api, TurnScripts, require_serve, start_server

REPO = Path(__file__).resolve().parents[2]
NO_AUTH: dict[str, Any] = {"Authorization": None}  # the request goes without the header


def raw(server: Any, method: str, path: str, headers: dict[str, Any] | None = None,
        body: bytes | None = None) -> tuple[int, bytes, dict[str, str]]:
    """A request exactly as written (no client normalising the path or the headers)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    sent = {"Host": f"127.0.0.1:{server.port}", "Authorization": f"Bearer {TOKEN}"}
    sent.update(headers or {})
    for name, value in sent.items():
        if value is not None:
            conn.putheader(name, value)
    conn.endheaders(body)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data, {k.lower(): v for k, v in response.getheaders()}


def message(data: bytes) -> str:
    import json

    return json.loads(data)["error"]["message"]


@pytest.mark.parametrize("path", ["/", "/api/threads", "/openapi.json", "/static/app.js",
                                  "/api/threads/x/events"])
def test_no_token_no_entry(served: Any, path: str) -> None:
    status, data, headers = raw(served, "GET", path, NO_AUTH)
    assert status == 401 and "token" in message(data)
    assert headers["www-authenticate"].startswith("Bearer")
    status, data, _ = raw(served, "GET", path, {"Authorization": "Bearer wrong-token-123456"})
    assert status == 401
    status, _, _ = raw(served, "GET", path, {**NO_AUTH,
                                             "Cookie": f"baseagent_serve_{served.port}=nope"})
    assert status == 401


def test_the_login_url_sets_a_strict_cookie_and_drops_the_token(served: Any) -> None:
    status, _, headers = raw(served, "GET", "/?token=wrong", NO_AUTH)
    assert status == 401
    status, _, headers = raw(served, "GET", f"/?token={TOKEN}", NO_AUTH)
    assert status == 303 and headers["location"] == "/"
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    pair = cookie.split(";")[0]
    status, data, headers = raw(served, "GET", "/", {**NO_AUTH, "Cookie": pair})
    assert status == 200 and b"<title>baseagent</title>" in data
    assert "default-src 'none'" in headers["content-security-policy"]


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:{port}",
                                  "127.0.0.1:1", "127.0.0.1", ""])
def test_dns_rebinding_is_refused(served: Any, host: str) -> None:
    status, data, _ = raw(served, "GET", "/api/threads", {"Host": host.format(port=served.port)})
    assert status == 403 and "DNS rebinding" in message(data)


@pytest.mark.parametrize("headers", [
    {"Origin": "http://attacker.example"}, {"Origin": "null"},
    {"Origin": "http://127.0.0.1:1"}, {"Sec-Fetch-Site": "cross-site"}])
def test_another_sites_page_is_refused(served: Any, headers: dict[str, str]) -> None:
    status, data, _ = raw(served, "POST", "/api/threads", {**headers,
                          "Content-Type": "application/json"}, b"{}")
    assert status == 403 and "refused" in message(data)
    assert served.registry.live() == []  # nothing was made


def test_the_servers_own_origin_and_localhost_pass(served: Any) -> None:
    for host in (f"127.0.0.1:{served.port}", f"localhost:{served.port}"):
        status, _, _ = raw(served, "GET", "/api/threads",
                           {"Host": host, "Origin": f"http://{host}",
                            "Sec-Fetch-Site": "same-origin"})
        assert status == 200


@pytest.mark.parametrize("path", [
    "/static/../threads.py", "/static/..%2fthreads.py", "/static/%2e%2e%2fapp.py",
    "/static/%2e%2e/%2e%2e/cli.py", "/static/app.py", "/static//etc/passwd",
    "/static/..\\app.py", "/static/%2e%2e%5capp.py", "/static/.%2e/guard.py",
    "/static/index.html%00.py", "/static/", "/../../etc/passwd"])
def test_no_path_leaves_the_static_files(served: Any, path: str) -> None:
    status, data, _ = raw(served, "GET", path)
    assert status in (400, 404), (path, status)
    assert b"import" not in data and b"root:" not in data


def test_the_static_files_are_there(served: Any) -> None:
    for name in ("index.html", "app.js", "render.js", "markdown.js", "client.js", "app.css"):
        status, _, headers = raw(served, "GET", f"/static/{name}")
        assert status == 200 and headers["x-content-type-options"] == "nosniff"


def test_huge_bodies_are_refused(served: Any) -> None:
    status, data, _ = raw(served, "POST", "/api/threads", {
        "Content-Type": "application/json", "Content-Length": str(50 * 1024 * 1024)})
    assert status == 413 and "larger than" in message(data)
    # Chunked: no length declared, the cap holds while reading.
    body = b'{"input": "' + b"x" * (2 * 1024 * 1024) + b'"}'

    def chunks() -> Any:
        for i in range(0, len(body), 65536):
            yield body[i:i + 65536]

    with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        response = c.post("/api/threads", content=chunks(),
                          headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert served.registry.live() == []


def test_a_reachable_address_needs_a_chosen_token(tmp_path: Path) -> None:
    require_serve()
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(REPO / "src")}
    env.pop("BASEAGENT_SERVE_TOKEN", None)
    for args, words in ((["--host", "0.0.0.0"], "refusing to listen on 0.0.0.0 without --token"),
                        (["--token", "short"], "the token must be")):
        done = subprocess.run([sys.executable, "-m", "baseagent", "serve", "--port", "0", *args],
                              env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and done.stdout == ""
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0], done.stderr


def test_the_extra_missing_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    from baseagent.serve import MISSING_EXTRA, extra_missing
    from baseagent.serve.command import ServeOptions, run

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sse_starlette" else real(name, *a))
    assert extra_missing() == MISSING_EXTRA
    assert run(ServeOptions(port=0), {}) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'baseagent[serve]'" in err


def test_the_command_prints_a_login_url_once_and_keeps_the_token_0600(tmp_path: Path) -> None:
    require_serve()
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(REPO / "src")}
    env.pop("BASEAGENT_SERVE_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "baseagent", "serve", "--port", "0",
                             "--cwd", str(tmp_path)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()  # type: ignore[union-attr]
        found = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=([\w.~-]+)", line)
        assert found, line
        port, token = found.groups()
        kept = tmp_path / ".baseagent" / "serve_token"
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        assert kept.read_text().strip() == token
        deadline = time.monotonic() + 30
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/api/info",
                                     headers={"Authorization": f"Bearer {token}"})
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert response.status_code == 200
        assert response.json()["defaults"]["cwd"] == str(tmp_path)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert out == ""  # stdout carries nothing but JSONL, and serve writes none


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def subscribe(server: Any, thread_id: str, receive_buffer: int | None = None) -> socket.socket:
    sock = socket.socket()
    if receive_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.connect(("127.0.0.1", server.port))
    sock.sendall((f"GET /api/threads/{thread_id}/events HTTP/1.1\r\n"
                  f"Host: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n")
                 .encode())
    return sock


def test_idle_clients_and_one_that_never_reads_hold_nothing_up(
        scripts: TurnScripts, workspace: Path, tmp_path: Path) -> None:
    require_serve()
    log_bytes = 64 * 1024
    server = start_server(scripts, workspace, tmp_path / "home", log_bytes=log_bytes)
    api = Api(server)
    sockets: list[socket.socket] = []
    try:
        scripts.scripts["idle"] = [{"content": "ok"}]
        scripts.scripts["flood"] = [
            {"tool_calls": [{"name": "shell", "arguments": {
                "command": "for i in $(seq 1 40); do seq 1 20000; sleep 0.05; done"}}]},
            {"content": "flooded"}]
        scripts.scripts["meanwhile"] = [
            {"tool_calls": [{"name": "shell", "arguments": {"command": "echo still here"}}]},
            {"content": "on time"}]
        idle = api.create(input="idle")["id"]
        api.events(idle)
        before = rss_mb()
        for _ in range(100):
            sockets.append(subscribe(server, idle))
        flood = api.create(input="flood")["id"]
        stuck = subscribe(server, flood, receive_buffer=4096)  # and never read
        sockets.append(stuck)
        # Another thread works and streams as usual, while those wait.
        started = time.monotonic()
        other = api.create(input="meanwhile")["id"]
        events = api.events(other, timeout=60)
        assert events[-1][1]["type"] == "turn.completed"
        assert "on time" in str(events)
        api.wait_status(flood, "idle", timeout=120)
        flooded = server.registry.get(flood).codex.log
        assert flooded.last_number > flooded.size[0]  # it dropped its oldest events
        for handle in server.registry.live():
            kept_events, kept_bytes = handle.codex.log.size
            assert kept_bytes <= log_bytes or kept_events == 1  # one event may be larger
        grown = rss_mb() - before
        assert grown < 120, f"the server grew by {grown:.0f} MB"
        assert time.monotonic() - started < 120
        # The page still answers while those connections stay open.
        assert api.get("/api/threads").status_code == 200
    finally:
        for sock in sockets:
            sock.close()
        api.http.close()
        server.stop()


def test_too_many_streams_are_refused(scripts: TurnScripts, workspace: Path,
                                      tmp_path: Path) -> None:
    require_serve()
    server = start_server(scripts, workspace, tmp_path / "home", max_streams=3)
    api = Api(server)
    sockets = []
    try:
        scripts.scripts["x"] = [{"content": "ok"}]
        tid = api.create(input="x")["id"]
        api.events(tid)
        sockets = [subscribe(server, tid) for _ in range(3)]
        for sock in sockets:
            sock.recv(1024)  # the stream's headers: it is open
        response = api.get(f"/api/threads/{tid}/events")
        assert response.status_code == 503
        assert "event streams" in response.json()["error"]["message"]
    finally:
        for sock in sockets:
            sock.close()
        api.http.close()
        server.stop()
