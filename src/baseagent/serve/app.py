"""The HTTP API and the page: a Starlette app over the thread registry (serve/threads.py).

Every route answers JSON; an error is `{"error": {"status", "message"}}` with one clear
message. Events stream as Server-Sent Events (sse-starlette): `id: EPOCH.N`, `event:` the
event's type, `data:` the event as one line of JSON; a client reconnecting with
`Last-Event-ID` gets what it missed (serve/log.py). The OpenAPI document is
serve/openapi.py.
"""
from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any, Awaitable, Callable

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from baseagent.errors import AgentBusyError, ConfigError, InputError
from baseagent.serve.guard import DEFAULT_MAX_BODY, Guard
from baseagent.serve.threads import Conflict, Full, NotFound, Registry, ServeSettings

STATIC = Path(__file__).parent / "static"
# The page's files: served by name from this list only (nothing else under any path).
STATIC_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
# SSE: a comment line this often keeps proxies and the browser from giving up; a send
# blocked this long (a client that stopped reading) ends that client's stream.
PING_S = 15
SEND_TIMEOUT_S = 30
# Open event streams at once, all threads together.
DEFAULT_MAX_STREAMS = 256
FORMATS = ("codex", "agentb")
EXPORT_FORMATS = ("atif", "sharegpt", "openai")
DECISIONS = ("approved", "approved_for_session", "denied")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
# The batch report is one self-contained page: its scripts and styles are inline.
REPORT_CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
              "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def parse_json_object(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"the body is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InputError("the body must be a JSON object")
    return value


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error_response(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"status": status, "message": message}}, status_code=status,
                        headers={"cache-control": "no-store"})


Handler = Callable[[Request], Awaitable[Response]]


def _handled(fn: Handler) -> Handler:
    """The one place exceptions become statuses."""
    async def route(request: Request) -> Response:
        try:
            return await fn(request)
        except HttpError as exc:
            return error_response(exc.status, exc.message)
        except NotFound as exc:
            return error_response(404, str(exc))
        except (Conflict, AgentBusyError) as exc:
            return error_response(409, str(exc))
        except Full as exc:
            return error_response(503, str(exc))
        except (InputError, ConfigError) as exc:
            return error_response(400, str(exc))
    route.__name__ = fn.__name__
    return route


class Api:
    def __init__(self, registry: Registry, max_body: int, max_streams: int,
                 batch_dir: Path | None = None) -> None:
        self.registry = registry
        self.batch_dir = batch_dir
        self.max_body = max_body
        self.max_streams = max_streams
        self.streams = 0
        self.files = {p.name: p for p in STATIC.iterdir() if p.suffix in STATIC_TYPES}

    async def body(self, request: Request) -> dict[str, Any]:
        """The request's JSON object, read up to the cap (a chunked body too)."""
        if "json" not in request.headers.get("content-type", "application/json"):
            raise HttpError(415, "send the body as application/json")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body:
                raise HttpError(413, f"the body is larger than {self.max_body} bytes")
            chunks.append(chunk)
        return parse_json_object(b"".join(chunks))

    # -- the page ---------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        if self.batch_dir is not None and request.query_params.get("view") == "batch":
            return Response(status_code=303, headers={"location": "/batch"})
        return self._file("index.html")

    async def batch_report(self, request: Request) -> Response:
        """`serve --batch DIR`: the batch's report, built anew on each load (so it follows a
        running batch), inline scripts and styles only (its own CSP)."""
        if self.batch_dir is None:
            raise HttpError(404, "no batch here (serve --batch DIR)")
        from baseagent.batch.report import render_report, report_data

        page = await run_in_threadpool(lambda: render_report(report_data(self.batch_dir)))
        return Response(page, media_type="text/html; charset=utf-8", headers={
            "cache-control": "no-store", "content-security-policy": REPORT_CSP,
            "x-content-type-options": "nosniff", "referrer-policy": "no-referrer"})

    async def static(self, request: Request) -> Response:
        return self._file(request.path_params["name"])

    def _file(self, name: str) -> Response:
        path = self.files.get(name)
        if path is None:
            raise HttpError(404, f"no file {name!r} here")
        return FileResponse(path, media_type=STATIC_TYPES[path.suffix],
                            headers={"cache-control": "no-store", "content-security-policy": CSP,
                                     "x-content-type-options": "nosniff",
                                     "referrer-policy": "no-referrer"})

    async def openapi(self, request: Request) -> Response:
        from baseagent.serve.openapi import document

        return JSONResponse(document())

    async def info(self, request: Request) -> Response:
        from baseagent import __version__

        defaults = self.registry.settings.defaults
        return JSONResponse({"version": __version__, "defaults": {
            k: str(v) for k, v in defaults.items() if k in ("model", "api_base", "cwd")}})

    # -- threads ----------------------------------------------------------------------------

    async def list_threads(self, request: Request) -> Response:
        return JSONResponse({"threads": await run_in_threadpool(self.registry.listing)})

    async def create_thread(self, request: Request) -> Response:
        body = await self.body(request)
        text = body.pop("input", None)
        tools = body.pop("external_tools", None) or []
        approver = body.pop("approver", "api")
        if approver not in ("api", "requires_action"):
            raise HttpError(400, "approver: api (answered through /approvals) or "
                            "requires_action (answered as tool outputs)")
        if text is not None and (not isinstance(text, str) or not text.strip()):
            raise HttpError(400, "input: a non-empty instruction, or leave it out")
        handle = await run_in_threadpool(self.registry.create, body, tools, approver)
        if text is not None:
            await run_in_threadpool(handle.start_turn, text)
        return JSONResponse(handle.summary(), status_code=201)

    async def get_thread(self, request: Request) -> Response:
        thread_id = request.path_params["thread_id"]
        try:
            return JSONResponse(self.registry.get(thread_id).summary())
        except NotFound:
            pass
        return JSONResponse(await run_in_threadpool(self.registry.recorded, thread_id))

    async def transcript(self, request: Request) -> Response:
        events = await run_in_threadpool(self.registry.transcript,
                                         request.path_params["thread_id"])
        return JSONResponse({"events": events})

    async def start_turn(self, request: Request) -> Response:
        handle = self.registry.get(request.path_params["thread_id"])
        body = await self.body(request)
        text = body.get("input")
        if not isinstance(text, str):
            raise HttpError(400, "input: the instruction, as a string")
        await run_in_threadpool(handle.start_turn, text)
        return JSONResponse(handle.summary(), status_code=202)

    async def cancel(self, request: Request) -> Response:
        handle = self.registry.get(request.path_params["thread_id"])
        handle.cancel()
        return JSONResponse(handle.summary(), status_code=202)

    async def approve(self, request: Request) -> Response:
        handle = self.registry.get(request.path_params["thread_id"])
        body = await self.body(request)
        decision, note = body.get("decision"), body.get("note", "")
        if decision not in DECISIONS:
            raise HttpError(400, f"decision: one of {', '.join(DECISIONS)}")
        if not isinstance(note, str) or len(note) > 4000:
            raise HttpError(400, "note: text, at most 4000 characters")
        handle.answer(request.path_params["item_id"], decision, note)
        return JSONResponse(handle.summary())

    async def tool_outputs(self, request: Request) -> Response:
        handle = self.registry.get(request.path_params["thread_id"])
        body = await self.body(request)
        outputs = body.get("outputs")
        if not isinstance(outputs, dict) or not outputs:
            raise HttpError(400, "outputs: an object of call id to output")
        await run_in_threadpool(handle.submit_outputs, outputs)
        return JSONResponse(handle.summary(), status_code=202)

    async def resume(self, request: Request) -> Response:
        handle = await run_in_threadpool(self.registry.resume,
                                         request.path_params["thread_id"])
        return JSONResponse(handle.summary())

    async def close_thread(self, request: Request) -> Response:
        await run_in_threadpool(self.registry.close_thread, request.path_params["thread_id"])
        return Response(status_code=204)

    async def export(self, request: Request) -> Response:
        fmt = request.query_params.get("format", "atif")
        if fmt not in EXPORT_FORMATS:
            raise HttpError(400, f"format: one of {', '.join(EXPORT_FORMATS)}")
        data = await run_in_threadpool(self.registry.export, request.path_params["thread_id"],
                                       fmt)
        return JSONResponse(data)

    async def events(self, request: Request) -> Response:
        from sse_starlette.sse import EventSourceResponse, ServerSentEvent

        handle = self.registry.get(request.path_params["thread_id"])
        fmt = request.query_params.get("format", "codex")
        if fmt not in FORMATS:
            raise HttpError(400, f"format: one of {', '.join(FORMATS)}")
        if self.streams >= self.max_streams:
            raise HttpError(503, f"{self.max_streams} event streams are open: close one")
        log = handle.log(fmt)
        last = request.headers.get("last-event-id") or request.query_params.get("last_event_id")
        cursor = log.cursor(last)
        self.streams += 1

        async def stream() -> Any:
            nonlocal cursor
            try:
                while True:
                    entries, gap = log.since(cursor)
                    if gap:
                        yield ServerSentEvent(json.dumps({
                            "type": "stream.gap", "message": "earlier events are no longer "
                            "kept; read the thread's transcript for them"}), event="stream.gap")
                    for entry in entries:
                        yield ServerSentEvent(entry.data, event=entry.name, id=entry.id)
                        cursor = entry.number
                    if not entries:
                        if log.closed:
                            return
                        await log.wait_after(cursor, PING_S)
            finally:
                self.streams -= 1

        return EventSourceResponse(stream(), ping=PING_S, send_timeout=SEND_TIMEOUT_S,
                                   headers={"cache-control": "no-store",
                                            "x-accel-buffering": "no"})


def create_app(settings: ServeSettings, *, token: str, host: str, port: int,
               allow_hosts: tuple[str, ...] = (), max_body: int = DEFAULT_MAX_BODY,
               max_streams: int = DEFAULT_MAX_STREAMS, batch_dir: Path | None = None) -> Any:
    """The ASGI app: the guard (serve/guard.py) around the routes. `token` is the bearer
    token every request must carry; `host`/`port` where it listens (the Host and Origin
    headers it accepts)."""
    from baseagent.serve.guard import allowed_hosts

    registry = Registry(settings)
    api = Api(registry, max_body, max_streams, batch_dir)
    h = _handled
    routes = [
        Route("/", h(api.index)),
        Route("/static/{name}", h(api.static)),
        Route("/batch", h(api.batch_report)),
        Route("/openapi.json", h(api.openapi)),
        Route("/api/info", h(api.info)),
        Route("/api/threads", h(api.list_threads)),
        Route("/api/threads", h(api.create_thread), methods=["POST"]),
        Route("/api/threads/{thread_id}", h(api.get_thread)),
        Route("/api/threads/{thread_id}", h(api.close_thread), methods=["DELETE"]),
        Route("/api/threads/{thread_id}/transcript", h(api.transcript)),
        Route("/api/threads/{thread_id}/events", h(api.events)),
        Route("/api/threads/{thread_id}/turns", h(api.start_turn), methods=["POST"]),
        Route("/api/threads/{thread_id}/cancel", h(api.cancel), methods=["POST"]),
        Route("/api/threads/{thread_id}/approvals/{item_id}", h(api.approve),
              methods=["POST"]),
        Route("/api/threads/{thread_id}/tool_outputs", h(api.tool_outputs), methods=["POST"]),
        Route("/api/threads/{thread_id}/resume", h(api.resume), methods=["POST"]),
        Route("/api/threads/{thread_id}/export", h(api.export)),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 500)
        message = {404: f"no route {request.url.path!r}",
                   405: f"{request.method} is not allowed on {request.url.path!r}"}
        return error_response(status, message.get(status, "internal error"))

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> Any:
        yield
        await run_in_threadpool(registry.close)

    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found},
                    lifespan=lifespan)
    app.state.registry = registry
    app.state.api = api
    return Guard(app, token=token, port=port, hosts=allowed_hosts(host, port, allow_hosts),
                 max_body=max_body)
