"""The OpenAPI 3.1 document of the API, served at /openapi.json (behind the token).

Written out here rather than generated: the routes are few, and the document says what
the event streams carry, which no generator reads from the code.
`tests/serve/test_api.py` holds it to the app's routes.
"""
from __future__ import annotations

from typing import Any

from baseagent.serve.threads import THREAD_OPTIONS

_ERROR = {"$ref": "#/components/schemas/Error"}
_THREAD = {"$ref": "#/components/schemas/Thread"}


def _json(schema: dict[str, Any], description: str = "") -> dict[str, Any]:
    return {"description": description or "OK",
            "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    words = {400: "A bad request (the message says what)", 401: "No token or a wrong one",
             403: "Refused: another Host or Origin", 404: "No such thread, question or route",
             409: "The thread is not in a state for that", 413: "The body is too large",
             415: "The body is not JSON", 503: "Too many live threads or event streams"}
    return {str(code): _json(_ERROR, words[code]) for code in codes}


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


_ID = {"name": "thread_id", "in": "path", "required": True, "schema": {"type": "string"},
       "description": "A thread id (a unique prefix works for recorded threads)"}


def document() -> dict[str, Any]:
    from baseagent import __version__

    thread_options = {name: {"description": "as the CLI's and config file's option"}
                      for name in sorted(THREAD_OPTIONS)}
    paths: dict[str, Any] = {
        "/api/info": {"get": {"summary": "The server's version and new threads' defaults",
                              "responses": {"200": _json({"type": "object"})}}},
        "/api/threads": {
            "get": {"summary": "Live threads, then the recorded ones (newest first)",
                    "responses": {"200": _json({"type": "object", "properties": {
                        "threads": {"type": "array", "items": _THREAD}}})}},
            "post": {"summary": "Create a thread (and start its first turn with `input`)",
                     "requestBody": _body({"type": "object", "additionalProperties": False,
                                           "properties": {
                         "input": {"type": "string", "description": "The first instruction"},
                         "external_tools": {"type": "array", "items": {"type": "object"},
                                            "description": "Tools the caller runs: "
                                            "{name, description, parameters}"},
                         "approver": {"enum": ["api", "requires_action"], "default": "api",
                                      "description": "Who answers approval questions: "
                                      "the /approvals route, or tool outputs"},
                         **thread_options}}),
                     "responses": {"201": _json(_THREAD), **_errors(400, 413, 415, 503)}}},
        "/api/threads/{thread_id}": {
            "parameters": [_ID],
            "get": {"summary": "One thread", "responses": {"200": _json(_THREAD),
                                                          **_errors(404)}},
            "delete": {"summary": "Close a live thread (cancels its turn; the record stays)",
                       "responses": {"204": {"description": "Closed"}, **_errors(404)}}},
        "/api/threads/{thread_id}/transcript": {
            "parameters": [_ID],
            "get": {"summary": "The recorded thread's Codex events (with turn.input)",
                    "responses": {"200": _json({"type": "object", "properties": {
                        "events": {"type": "array", "items": {"type": "object"}}}}),
                        **_errors(404)}}},
        "/api/threads/{thread_id}/events": {
            "parameters": [_ID, {"name": "format", "in": "query",
                                 "schema": {"enum": ["codex", "agentb"], "default": "codex"}},
                           {"name": "Last-Event-ID", "in": "header",
                            "schema": {"type": "string"},
                            "description": "Resume after this event (what the stream missed "
                                           "is sent first)"}],
            "get": {"summary": "The live thread's events as Server-Sent Events",
                    "description": "`id: EPOCH.N`, `event:` the event's type, `data:` the "
                    "event as one line of JSON. codex: the Codex `exec --json` events, plus "
                    "`turn.input` (the instruction) and `item.detail` (a file change's "
                    "diff); agentb: AgentB's events (docs/AGENTB.md). A new subscriber is "
                    "sent the events the server keeps, then the live ones; `stream.gap` "
                    "says some it asked for are no longer kept.",
                    "responses": {"200": {"description": "The event stream",
                                          "content": {"text/event-stream": {
                                              "schema": {"type": "string"}}}},
                                  **_errors(400, 404, 503)}}},
        "/api/threads/{thread_id}/turns": {
            "parameters": [_ID],
            "post": {"summary": "Start the next turn",
                     "requestBody": _body({"type": "object", "required": ["input"],
                                           "properties": {"input": {"type": "string"}}}),
                     "responses": {"202": _json(_THREAD), **_errors(400, 404, 409, 413)}}},
        "/api/threads/{thread_id}/cancel": {
            "parameters": [_ID],
            "post": {"summary": "Cancel the running turn (it ends interrupted)",
                     "responses": {"202": _json(_THREAD), **_errors(404, 409)}}},
        "/api/threads/{thread_id}/approvals/{item_id}": {
            "parameters": [_ID, {"name": "item_id", "in": "path", "required": True,
                                 "schema": {"type": "string"},
                                 "description": "The approval_request item's id"}],
            "post": {"summary": "Answer an approval question the turn waits on",
                     "requestBody": _body({"type": "object", "required": ["decision"],
                                           "properties": {
                         "decision": {"enum": ["approved", "approved_for_session", "denied"]},
                         "note": {"type": "string", "maxLength": 4000,
                                  "description": "With a denial: what the model is told"}}}),
                     "responses": {"200": _json(_THREAD), **_errors(400, 404)}}},
        "/api/threads/{thread_id}/tool_outputs": {
            "parameters": [_ID],
            "post": {"summary": "Outputs of the tools a requires_action turn waits for; "
                                "the turn continues",
                     "requestBody": _body({"type": "object", "required": ["outputs"],
                                           "properties": {"outputs": {
                                               "type": "object",
                                               "additionalProperties": True,
                                               "description": "call id -> output"}}}),
                     "responses": {"202": _json(_THREAD), **_errors(400, 404, 409)}}},
        "/api/threads/{thread_id}/resume": {
            "parameters": [_ID],
            "post": {"summary": "Make a recorded thread live again",
                     "responses": {"200": _json(_THREAD), **_errors(400, 404, 503)}}},
        "/api/threads/{thread_id}/export": {
            "parameters": [_ID, {"name": "format", "in": "query", "schema": {
                "enum": ["atif", "sharegpt", "openai"], "default": "atif"}}],
            "get": {"summary": "The recorded thread as a trajectory (ATIF v1.7, ShareGPT, "
                               "OpenAI messages)",
                    "responses": {"200": _json({"type": "object"}), **_errors(400, 404)}}},
        "/openapi.json": {"get": {"summary": "This document",
                                  "responses": {"200": _json({"type": "object"})}}},
    }
    for item in paths.values():
        for method, op in item.items():
            if method != "parameters":
                op.setdefault("responses", {}).update(_errors(401, 403))
    return {
        "openapi": "3.1.0",
        "info": {"title": "baseagent serve", "version": __version__,
                 "description": "The baseagent coding agent over HTTP (docs/SERVE.md)."},
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}, {"cookie": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "cookie": {"type": "apiKey", "in": "cookie", "name": "baseagent_serve_PORT",
                           "description": "Set by opening /?token=TOKEN"}},
            "schemas": {
                "Error": {"type": "object", "required": ["error"], "properties": {
                    "error": {"type": "object", "required": ["status", "message"],
                              "properties": {"status": {"type": "integer"},
                                             "message": {"type": "string"}}}}},
                "Thread": {"type": "object", "required": ["id", "live", "status"],
                           "properties": {
                    "id": {"type": "string"}, "live": {"type": "boolean"},
                    "status": {"type": "string", "description": "idle | running | "
                               "requires_action (live); the last turn's end (recorded)"},
                    "title": {"type": "string"}, "model": {"type": "string"},
                    "cwd": {"type": "string"}, "sandbox": {"type": "string"},
                    "approval_policy": {"type": "string"},
                    "usage": {"type": "object"}, "cost_usd": {"type": ["number", "null"]},
                    "last_error": {"type": ["string", "null"]},
                    "approvals": {"type": "array", "items": {"type": "object"},
                                  "description": "Open approval questions"},
                    "pending_tool_calls": {"type": "array", "items": {"type": "object"}},
                    "last_event_id": {"type": "object"}}}}},
    }
