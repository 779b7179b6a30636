"""What every request passes before the app sees it (a plain ASGI middleware):

- the Host header names this server (127.0.0.1, localhost or [::1] at its port, or a host
  the person allowed): a page on another site whose name resolves to 127.0.0.1 (DNS
  rebinding) is refused;
- an Origin header, when a browser sends one, is this server's own, and a browser's
  `Sec-Fetch-Site: cross-site` is refused: no other site's page can call the API;
- the bearer token: `Authorization: Bearer TOKEN`, or the cookie the login sets (`GET
  /?token=TOKEN` sets it, HttpOnly and SameSite=Strict, and sends the browser on to `/`
  without the token in its address); compared in constant time; the page and the OpenAPI
  document too;
- a body declared larger than the cap is refused before it is read (the app reads bodies
  through `read_body`, which stops at the cap whatever the headers said).
"""
from __future__ import annotations

import hmac
import json
from http.cookies import SimpleCookie
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qsl, urlencode

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

DEFAULT_MAX_BODY = 1024 * 1024  # a request body (tool outputs, an instruction)
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def cookie_name(port: int) -> str:
    """Cookies are per host, not per port: two servers on one machine keep their own."""
    return f"baseagent_serve_{port}"


def allowed_hosts(host: str, port: int, extra: tuple[str, ...] = ()) -> frozenset[str]:
    names = set(LOOPBACK_NAMES) | set(extra)
    if host not in ("0.0.0.0", "::", ""):
        names.add(f"[{host}]" if ":" in host and not host.startswith("[") else host)
    return frozenset(f"{name}:{port}" for name in names) | (
        frozenset(names) if port == 80 else frozenset())


async def send_error(send: Send, status: int, message: str,
                     headers: list[tuple[bytes, bytes]] = ()) -> None:  # type: ignore[assignment]
    body = json.dumps({"error": {"status": status, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"cache-control", b"no-store"), *headers]})
    await send({"type": "http.response.body", "body": body})


class Guard:
    def __init__(self, app: Any, *, token: str, port: int, hosts: frozenset[str],
                 max_body: int = DEFAULT_MAX_BODY) -> None:
        self.app = app
        self._token = token.encode()
        self._cookie = cookie_name(port)
        self._hosts = hosts
        self._origins = frozenset(f"http://{h}" for h in hosts)
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            return  # no websockets here
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        refusal = self._refusal(headers)
        if refusal is not None:
            await send_error(send, *refusal)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if scope["method"] == "GET" and scope["path"] == "/" and "token" in query:
            await self._login(send, query)
            return
        if not self._authorised(headers):
            await send_error(send, 401, "missing or wrong token: send `Authorization: Bearer "
                             "TOKEN`, or open the URL `baseagent serve` printed",
                             [(b"www-authenticate", b'Bearer realm="baseagent"')])
            return
        length = headers.get("content-length", "")
        if length and (not length.isdigit() or int(length) > self.max_body):
            await send_error(send, 413, f"the body is larger than {self.max_body} bytes")
            return
        await self.app(scope, receive, send)

    def _refusal(self, headers: dict[str, str]) -> tuple[int, str] | None:
        host = headers.get("host", "")
        if host not in self._hosts:
            return 403, (f"host {host!r} is not this server's: refused (DNS rebinding); "
                         "use http://127.0.0.1:PORT")
        origin = headers.get("origin")
        if origin is not None and origin not in self._origins:
            return 403, f"cross-origin request from {origin!r} refused"
        if headers.get("sec-fetch-site") == "cross-site":
            return 403, "cross-site request refused"
        return None

    def _authorised(self, headers: dict[str, str]) -> bool:
        auth = headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            return self._same(auth[7:].strip())
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # noqa: BLE001 - a malformed cookie header is no token
            return False
        morsel = cookie.get(self._cookie)
        return morsel is not None and self._same(morsel.value)

    def _same(self, given: str) -> bool:
        return hmac.compare_digest(given.encode("utf-8", "replace"), self._token)

    async def _login(self, send: Send, query: dict[str, str]) -> None:
        if not self._same(query.pop("token")):
            await send_error(send, 401, "wrong token in the login URL")
            return
        rest = urlencode(query)
        cookie = (f"{self._cookie}={self._token.decode()}; Path=/; HttpOnly; "
                  "SameSite=Strict").encode()
        await send({"type": "http.response.start", "status": 303,
                    "headers": [(b"location", ("/?" + rest if rest else "/").encode()),
                                (b"set-cookie", cookie), (b"cache-control", b"no-store"),
                                (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
