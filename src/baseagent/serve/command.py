"""`baseagent serve`'s process layer: the token, the listening socket, uvicorn.

The entry point (cli.py) reads the flags and the environment and hands them here; nothing
below reads either. The person's token is printed once, on stderr (stdout stays JSONL-only,
and the server writes nothing there).
"""
from __future__ import annotations

import ipaddress
import os
import re
import secrets
import socket
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from baseagent.serve import extra_missing

TOKEN_ENV = "BASEAGENT_SERVE_TOKEN"
# A token travels in a header, a cookie and a URL: URL-safe characters only, not too short.
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9._~-]{16,256}")
DEFAULT_PORT = 8765


class ServeError(Exception):
    """A refusal to start, said in one line."""


@dataclass
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: str | None = None  # --token or BASEAGENT_SERVE_TOKEN: used as given
    allow_hosts: tuple[str, ...] = ()
    config_file: Path | None = None
    profile: str | None = None
    defaults: Mapping[str, Any] = field(default_factory=dict)  # model, api_base, cwd
    log_bytes: int = 8 * 1024 * 1024  # events kept per thread and vocabulary
    max_streams: int = 256  # open event streams, all threads together
    max_threads: int = 64  # live threads (the idle longest is closed to make room)
    batch_dir: Path | None = None  # --batch DIR: its report at /batch (batch/report.py)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_token(token: str) -> str:
    if not TOKEN_PATTERN.fullmatch(token):
        raise ServeError("the token must be 16 to 256 characters of A-Z a-z 0-9 . _ ~ -")
    return token


def token_file(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home()) / ".baseagent" / "serve_token"


def keep_token(path: Path, token: str) -> None:
    """The made-up token, readable by this user only (0600), for a script to pick up."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        os.fchmod(out.fileno(), 0o600)
        out.write(token + "\n")


def listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    try:
        return socket.create_server((host.strip("[]"), port), family=family, backlog=128)
    except OSError as exc:
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def build(options: ServeOptions, env: Mapping[str, str], sock: socket.socket, token: str) -> Any:
    from baseagent.serve.app import create_app
    from baseagent.serve.threads import ServeSettings

    port = sock.getsockname()[1]
    settings = ServeSettings(env=dict(env), config_file=options.config_file,
                             profile=options.profile, defaults=dict(options.defaults),
                             log_bytes=options.log_bytes, max_threads=options.max_threads)
    return create_app(settings, token=token, host=options.host, port=port,
                      allow_hosts=options.allow_hosts, max_streams=options.max_streams,
                      batch_dir=options.batch_dir)


def uvicorn_server(app: Any) -> Any:
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False, proxy_headers=False,
                            server_header=False, timeout_graceful_shutdown=3,
                            h11_max_incomplete_event_size=64 * 1024, lifespan="on")
    return uvicorn.Server(config)


def run(options: ServeOptions, env: Mapping[str, str]) -> int:
    missing = extra_missing()
    if missing:
        print(f"baseagent: error: {missing}", file=sys.stderr)
        return 2
    try:
        if options.token is None and not is_loopback(options.host):
            raise ServeError(f"refusing to listen on {options.host} without --token (or "
                             f"{TOKEN_ENV}): whoever reaches it runs commands on this machine")
        token = check_token(options.token) if options.token is not None \
            else secrets.token_urlsafe(32)
        sock = listen(options.host, options.port)
    except ServeError as exc:
        print(f"baseagent: error: {exc}", file=sys.stderr)
        return 2
    port = sock.getsockname()[1]
    shown = options.host if options.host not in ("0.0.0.0", "::") else "127.0.0.1"
    shown = f"[{shown}]" if ":" in shown and not shown.startswith("[") else shown
    if options.token is None:
        path = token_file(env)
        keep_token(path, token)
        print(f"baseagent serve: open http://{shown}:{port}/?token={token}\n"
              f"  (the token is also in {path}, mode 0600; API clients send "
              "`Authorization: Bearer TOKEN`)", file=sys.stderr)
    else:
        print(f"baseagent serve: listening on http://{shown}:{port}/ (log in with "
              f"http://{shown}:{port}/?token=YOUR_TOKEN)", file=sys.stderr)
    if options.batch_dir is not None:
        print(f"baseagent serve: the report of batch {options.batch_dir} is at "
              f"http://{shown}:{port}/batch (rebuilt on each load; log in first, or add "
              "&view=batch to the address above)", file=sys.stderr)
    app = build(options, env, sock, token)
    server = uvicorn_server(app)
    server.run(sockets=[sock])
    return 0


class Background:
    """A server on a thread of this process (tests, bench): `url`, `token`, `stop()`."""

    def __init__(self, options: ServeOptions, env: Mapping[str, str], token: str) -> None:
        self.sock = listen(options.host, options.port)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = token
        self.app = build(options, env, self.sock, token)
        self.server = uvicorn_server(self.app)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                       name="serve", daemon=True)
        self.thread.start()
        import time

        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.01)

    @property
    def registry(self) -> Any:
        return self.app.app.state.registry

    def stop(self) -> None:
        self.registry.close()  # the threads' streams end, so the server stops at once
        self.server.should_exit = True
        self.thread.join(10)
