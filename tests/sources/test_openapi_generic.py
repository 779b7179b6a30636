"""The generic `http_request` tool of an OpenAPI source (`mode = "generic"` or "both"):
end to end through the CLI and the library against a real local service
(tests/openapi_service.py), and the attacks a model could try, table-driven."""
from __future__ import annotations

import json
import uuid

import pytest

from baseagent import Agent
from baseagent.openapi.generic import MAX_REQUEST_BODY_BYTES, request_parts, target
from baseagent.testing.deterministic import DeterministicClient
from baseagent.tools.tool import ToolError
from helpers import run_agent
from mcp_helpers import write_config
from openapi_service import PetService, document

BUILTINS = ["shell", "read_file", "write_file", "apply_patch", "grep_files", "list_dir",
            "update_plan"]
SERVERS = ["http://127.0.0.1:8000/v1", "https://api.example.com/v2"]


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


@pytest.mark.parametrize("path, url", [
    ("/pets/1", "http://127.0.0.1:8000/v1/pets/1"),
    ("/", "http://127.0.0.1:8000/v1/"),
    ("/@evil.com/x", "http://127.0.0.1:8000/v1/@evil.com/x"),  # a path, not a host
    ("/a%2Fb", "http://127.0.0.1:8000/v1/a%2Fb"),
    ("http://127.0.0.1:8000/v1/pets", "http://127.0.0.1:8000/v1/pets"),
    ("https://api.example.com/v2/users/7", "https://api.example.com/v2/users/7"),
    ("HTTPS://API.EXAMPLE.COM/v2", "https://api.example.com/v2"),
])
def test_paths_under_the_servers_are_reached(path, url):
    assert str(target(path, SERVERS).url) == url


@pytest.mark.parametrize("path, says", [
    ("", "path is empty"),
    ("pets", "must start with a single /"),
    ("//evil.com/x", "must start with a single /"),
    ("@evil.com/x", "must start with a single /"),
    (":80@evil.com/", "must start with a single /"),
    ("http://evil.com/v1/pets", "is not under the API's servers"),
    ("https://api.example.com.evil.com/v2/x", "is not under the API's servers"),
    ("http://127.0.0.1:8001/v1/pets", "is not under the API's servers"),
    ("https://127.0.0.1:8000/v1/pets", "is not under the API's servers"),
    ("http://127.0.0.1:8000/v2/pets", "is not under the API's servers"),
    ("http://127.0.0.1:8000/v1evil/pets", "is not under the API's servers"),
    ("http://127.0.0.1/v1/pets", "is not under the API's servers"),
    ("http://127.0.0.1:8000@evil.com/v1/pets", "user information"),
    ("http://user:pw@127.0.0.1:8000/v1/pets", "user information"),
    ("/../admin", ". or .. segment"),
    ("/pets/%2e%2e/%2E%2E/admin", ". or .. segment"),
    ("/./pets", ". or .. segment"),
    ("\\\\evil.com\\x", "a backslash"),
    ("/pets?api_key=x", "a query string"),
    ("/pets#frag", "a fragment"),
    ("/pets\r\nHost: evil.com", "whitespace or a control character"),
    ("/pets x", "whitespace or a control character"),
    ("file:///etc/passwd", "must start with a single /"),
    ("javascript:alert(1)", "must start with a single /"),
    ("ftp://127.0.0.1:8000/v1", "must start with a single /"),
])
def test_attacks_on_the_target_are_refused(path, says):
    with pytest.raises(ToolError, match=None) as info:
        target(path, SERVERS)
    assert says in str(info.value), str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("args, says", [
    ({"headers": {"Authorization": "Bearer mine"}}, "'Authorization' is set by the agent"),
    ({"headers": {"x-api-key": "guess"}}, "'x-api-key' is set by the agent"),
    ({"headers": {"Host": "evil.com"}}, "'Host' is set by the agent"),
    ({"headers": {"Content-Length": "0"}}, "is set by the agent"),
    ({"headers": {"Transfer-Encoding": "chunked"}}, "is set by the agent"),
    ({"headers": {"X-A": "1\r\nHost: evil"}}, "line break"),
    ({"headers": {"Bad Name": "1"}}, "not a valid HTTP header name"),
    ({"query": {"api_key": "guess"}}, "'api_key' is set by the agent"),
    ({"body": "x" * (MAX_REQUEST_BODY_BYTES + 1)}, "at most 1,048,576 are sent"),
])
def test_what_the_agent_owns_is_refused(args, says):
    with pytest.raises(ToolError) as info:
        request_parts(args, auth_headers={"X-API-Key"}, auth_query={"api_key"})
    assert says in str(info.value), str(info.value)


def test_query_headers_and_bodies_take_their_shapes():
    query, headers, content, body = request_parts(
        {"query": {"limit": 2, "tag": ["a", "b"], "all": True}, "headers": {"X-Trace-Id": "t"},
         "body": {"name": "Tom"}}, auth_headers=set(), auth_query=set())
    assert query == {"limit": "2", "tag": ["a", "b"], "all": "true"}
    assert (headers, content, body) == ({"X-Trace-Id": "t"}, None, {"name": "Tom"})
    _, headers, content, body = request_parts(
        {"headers": {"Content-Type": "text/plain"}, "body": "plain words"},
        auth_headers=set(), auth_query=set())
    assert (content, body, headers) == (b"plain words", None, {"Content-Type": "text/plain"})


def test_generic_mode_end_to_end_through_the_cli(scripted_server, workspace, home, tmp_path):
    key = f"pets-key-{uuid.uuid4().hex}"
    with PetService("other") as elsewhere, PetService(key) as service:
        config = write_config(tmp_path / "config.toml", {"openapi": {"pets": {
            "spec": f"{service.url}/openapi.json", "mode": "generic",
            "auth": {"type": "api_key", "header": "X-API-Key", "env": "PETS_KEY"}}}})
        attacks = [f"{elsewhere.url}/v1/pets", "//" + elsewhere.url.split("//")[1] + "/v1/pets",
                   "/../openapi.json", "/pets?kind=dog"]
        model = scripted_server([
            {"tool_calls": [
                call("http_request", method="GET", path="/pets", query={"limit": 1}),
                call("http_request", method="POST", path="/pets",
                     body={"name": "Tom", "kind": "dog"}, headers={"X-Trace-Id": "t-1"}),
                call("http_request", method="PUT", path="/echo", query={"q": ["a", "b"]},
                     body=[1, 2]),
                call("http_request", method="GET", path="/whoami"),
                call("http_request", method="GET", path="/redirect",
                     query={"to": f"{elsewhere.url}/v1/whoami"}),
                call("http_request", method="GET", path="/pets",
                     headers={"X-API-Key": "model-guess"}),
                *[call("http_request", method="GET", path=p) for p in attacks]]},
            {"content": "done"},
        ])
        run = run_agent(["-i", "use the pets API", "--no-verify", "--config", str(config)],
                        cwd=workspace, home=home, api_base=model.api_base, timeout=150,
                        env_extra={"PETS_KEY": key})
        sent, reached_elsewhere = service.requests, elsewhere.requests
    assert run.returncode == 0, run.stderr
    offered = {t["function"]["name"]: t["function"] for t in model.requests[0]["tools"]}
    assert list(offered) == BUILTINS + ["http_request"]  # no operation tools in generic mode
    text = offered["http_request"]["description"]
    assert f"Relative paths go to {service.url}/v1" in text
    assert "- GET /pets: List pets" in text and "- DELETE /pets/{petId}" in text
    assert offered["http_request"]["parameters"]["required"] == ["method", "path"]

    # what reached the service: the model's requests with the key added; nothing elsewhere
    assert [(r["method"], r["path"]) for r in sent] == [
        ("GET", "/v1/pets"), ("POST", "/v1/pets"), ("PUT", "/v1/echo"), ("GET", "/v1/whoami"),
        ("GET", "/v1/redirect")]
    assert all(r["headers"]["x-api-key"] == key for r in sent)
    assert sent[0]["query"] == {"limit": ["1"]}
    assert sent[1]["body"] == {"name": "Tom", "kind": "dog"}
    assert sent[1]["headers"]["x-trace-id"] == "t-1"
    assert sent[2]["query"] == {"q": ["a", "b"]} and sent[2]["body"] == [1, 2]
    assert reached_elsewhere == []  # not by a full URL, not by //host, not by a redirect

    items = run.completed_items("mcp_tool_call")
    assert [(i["server"], i["tool"]) for i in items] == [("pets", "http_request")] * 10
    assert [i["status"] for i in items] == ["completed"] * 5 + ["failed"] * 5
    result = [i["result"]["content"][0]["text"] if i["result"] else i["error"]["message"]
              for i in items]
    assert result[0].startswith("HTTP 200 OK") and '"name": "Felix"' in result[0]
    assert result[1].startswith("HTTP 201 Created")
    assert '"key_seen": "[REDACTED]"' in result[3]
    assert result[4].startswith("HTTP 302 Found") and \
        f"location: {elsewhere.url}/v1/whoami" in result[4]
    assert "'X-API-Key' is set by the agent" in result[5]
    assert "is not under the API's servers" in result[6]
    assert "must start with a single /" in result[7]
    assert ". or .. segment" in result[8]
    assert "put it in `query`" in result[9]
    # the key: never in the model's view, the events or the record
    thread = run.events[0]["thread_id"]
    record = (home / ".baseagent" / "sessions" / f"{thread}.jsonl").read_text()
    for where in (json.dumps(model.requests), run.stdout, run.stderr, record):
        assert key not in where


def test_both_modes_and_a_name_clash_in_the_library(workspace):
    with PetService("lib-key-1234567") as service:
        model = DeterministicClient([
            {"tool_calls": [call("getPet", petId=1),
                            call("pets__http_request", method="GET", path="/pets/1")]},
            {"content": "ok"}])

        def http_request(url: str) -> str:
            """A tool of the caller's with the generic tool's name."""
            return "mine"

        agent = Agent(model_client=model, cwd=workspace, session=False, verify=False,
                      env={"PETS": "lib-key-1234567"}, tools=[http_request],
                      enabled_toolsets=[],
                      openapi=[{"name": "pets", "spec": document(f"{service.url}/v1"),
                                "mode": "both", "include": ["getPet"],
                                "auth": {"type": "bearer", "env": "PETS"}}])
        try:
            result = agent.run("get pet 1 twice")
        finally:
            agent.close()
        sent = service.requests
    assert result.ok
    assert [t["function"]["name"] for t in model.tools_seen[0]] == [
        "http_request", "getPet", "pets__http_request"]
    described = model.tools_seen[0][2]["function"]["description"]
    assert "- GET /pets/{petId}: One pet" in described and "/whoami" not in described
    assert [(i.tool, i.status) for i in result.items[:2]] == [
        ("getPet", "completed"), ("http_request", "completed")]
    assert [r["path"] for r in sent] == ["/v1/pets/1", "/v1/pets/1"]
    assert all(r["headers"]["authorization"] == "Bearer lib-key-1234567" for r in sent)
    assert "lib-key-1234567" not in json.dumps(
        [i.arguments for i in result.items if i.type == "mcp_tool_call"])


def test_a_bad_mode_is_one_line(tmp_path):
    from baseagent.config.load import ConfigError, load_settings

    path = tmp_path / "config.toml"
    path.write_text('[openapi.api]\nspec = "x"\nmode = "raw"\n')
    with pytest.raises(ConfigError) as info:
        load_settings({}, env={}, config_file=path)
    assert "openapi.api.mode" in str(info.value) and "\n" not in str(info.value)
