"""A small HTTP service on 127.0.0.1 that serves its own OpenAPI document, for the tests.

It records every request (method, path, query, headers, JSON body) so a test can check what
the agent's calls really sent. Pets: list (query), create (JSON body through a `$ref`,
API key required), get (path; 404 for an unknown id), delete (tagged admin), a 500, and
`whoami`, which echoes the API key it was sent (the agent must keep it from the model);
outside the document, `/v1/echo` (what a request carried) and `/v1/redirect?to=URL`.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

API_KEY_HEADER = "X-API-Key"


def document(server_url: str = "/v1") -> dict[str, Any]:
    pet_id = {"name": "petId", "in": "path", "required": True,
              "description": "The pet's id.", "schema": {"type": "integer"}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1.0"},
        "servers": [{"url": server_url}],
        "paths": {
            "/pets": {
                "get": {"operationId": "listPets", "tags": ["pets"], "summary": "List pets",
                        "parameters": [
                            {"name": "limit", "in": "query", "description": "How many.",
                             "schema": {"type": "integer", "default": 20, "maximum": 100}},
                            {"name": "kind", "in": "query",
                             "schema": {"$ref": "#/components/schemas/Kind"}}],
                        "responses": {"200": {"description": "the pets"}}},
                "post": {"operationId": "createPet", "tags": ["pets"], "summary": "Add a pet",
                         "parameters": [{"name": "X-Trace-Id", "in": "header",
                                         "schema": {"type": "string"}}],
                         "requestBody": {"$ref": "#/components/requestBodies/NewPet"},
                         "responses": {"201": {"description": "created"}}},
            },
            "/pets/{petId}": {
                "parameters": [pet_id],
                "get": {"operationId": "getPet", "tags": ["pets"], "summary": "One pet",
                        "description": "404 when there is no such pet.",
                        "responses": {"200": {"description": "the pet"}}},
                "delete": {"operationId": "deletePet", "tags": ["admin"],
                           "responses": {"204": {"description": "gone"}}},
            },
            "/boom": {"get": {"operationId": "explode!", "summary": "Always fails",
                              "responses": {"500": {"description": "failure"}}}},
            "/whoami": {"get": {"operationId": "whoami", "summary": "Who the key belongs to",
                                "responses": {"200": {"description": "the caller"}}}},
            "/slow": {"get": {"operationId": "slow", "tags": ["slow"], "parameters": [
                {"name": "seconds", "in": "query", "required": True,
                 "schema": {"type": "number"}}],
                "responses": {"200": {"description": "late"}}}},
        },
        "components": {
            "schemas": {
                "Kind": {"type": "string", "enum": ["cat", "dog"], "default": "cat"},
                "NewPet": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string", "description": "The pet's name."},
                    "kind": {"$ref": "#/components/schemas/Kind"},
                    "friends": {"type": "array",
                                "items": {"$ref": "#/components/schemas/NewPet"}}}},
            },
            "requestBodies": {"NewPet": {"required": True, "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/NewPet"}}}}},
        },
    }


class PetService:
    """`with PetService(api_key) as svc:` serves on svc.url; svc.requests records calls."""

    def __init__(self, api_key: str) -> None:
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.pets = {1: {"id": 1, "name": "Felix", "kind": "cat"}}
        self._lock = threading.Lock()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def do_GET(self) -> None:
                service.handle(self, "GET")

            def do_POST(self) -> None:
                service.handle(self, "POST")

            def do_DELETE(self) -> None:
                service.handle(self, "DELETE")

            def do_PUT(self) -> None:
                service.handle(self, "PUT")

            def do_PATCH(self) -> None:
                service.handle(self, "PATCH")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "PetService":
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        record = {"method": method, "path": parts.path, "query": parse_qs(parts.query),
                  "headers": {k.lower(): v for k, v in handler.headers.items()},
                  "body": json.loads(raw) if raw else None}
        if parts.path != "/openapi.json":
            with self._lock:
                self.requests.append(record)
        status, body, *extra = self.answer(method, parts.path, record)
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        handler.send_response(status)
        for name, value in (extra[0] if extra else {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Type", "text/plain" if isinstance(body, str)
                            else "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.send_header("X-Request-Id", f"req-{len(self.requests)}")
        handler.end_headers()
        handler.wfile.write(data)

    def answer(self, method: str, path: str, record: dict[str, Any]) -> tuple[Any, ...]:
        key = record["headers"].get(API_KEY_HEADER.lower())
        if path == "/openapi.json":
            return 200, document()
        if path == "/v1/pets" and method == "GET":
            pets = list(self.pets.values())
            kind = record["query"].get("kind", [None])[0]
            limit = int(record["query"].get("limit", ["20"])[0])
            return 200, [p for p in pets if kind in (None, p["kind"])][:limit]
        if path == "/v1/pets" and method == "POST":
            if key != self.api_key:
                return 401, {"error": "missing or wrong API key"}
            pet = {"id": max(self.pets) + 1, **(record["body"] or {})}
            self.pets[pet["id"]] = pet
            return 201, pet
        if path.startswith("/v1/pets/") and method == "GET":
            pet = self.pets.get(int(path.rsplit("/", 1)[1]))
            return (200, pet) if pet else (404, {"error": "no such pet"})
        if path == "/v1/boom":
            return 500, "internal failure: the database is on fire"
        if path == "/v1/slow":
            time.sleep(float(record["query"]["seconds"][0]))
            return 200, {"late": True}
        if path == "/v1/redirect":  # to wherever ?to= says (the generic tool must not follow)
            return 302, {"moved": True}, {"Location": record["query"]["to"][0]}
        if path == "/v1/echo":  # what the request carried, for the generic tool's tests
            return 200, {"method": method, "query": record["query"], "body": record["body"],
                         "trace": record["headers"].get("x-trace-id")}
        if path == "/v1/whoami":
            return 200, {"you": "pets-admin", "key_seen": key}
        return 404, {"error": f"no route {method} {path}"}
