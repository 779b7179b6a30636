"""OpenAPI documents as tools, end to end against a local service that serves its own
document (tests/openapi_service.py), through the real CLI and the scripted model server."""
from __future__ import annotations

import json
import uuid

import pytest

from baseagent import Agent
from baseagent.config.load import ConfigError, load_settings
from baseagent.openapi.document import OpenApiError, base_url, check, resolve
from baseagent.openapi.operations import operations, tool_name
from baseagent.testing.deterministic import DeterministicClient
from helpers import run_agent
from mcp_helpers import free_port, write_config
from openapi_service import PetService, document

BUILTINS = ["shell", "read_file", "write_file", "apply_patch", "grep_files", "list_dir",
            "update_plan"]


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


def specs(request: dict) -> dict[str, dict]:
    return {t["function"]["name"]: t["function"] for t in request.get("tools", [])}


def test_operations_reach_the_service_and_their_results_the_model(
        scripted_server, workspace, home, tmp_path):
    key = f"pets-key-{uuid.uuid4().hex}"
    with PetService(key) as service:
        config = write_config(tmp_path / "config.toml", {"openapi": {"pets": {
            "spec": f"{service.url}/openapi.json",
            "auth": {"type": "api_key", "header": "X-API-Key", "env": "PETS_KEY"},
            "exclude": ["admin", "slow"], "timeout_sec": 20}}})
        model = scripted_server([
            {"tool_calls": [call("listPets", limit=2, kind="cat"),
                            call("createPet", body={"name": "Tom", "kind": "dog",
                                                    "friends": [{"name": "Felix"}]},
                                 **{"X-Trace-Id": "trace-1"}),
                            call("getPet", petId=1), call("getPet", petId=999),
                            call("explode"), call("whoami"),
                            call("listPets", kind="fish")]},
            {"content": "done"},
        ])
        run = run_agent(["-i", "work with the pets API", "--no-verify", "--config",
                         str(config)], cwd=workspace, home=home, api_base=model.api_base,
                        timeout=150, env_extra={"PETS_KEY": key})
        sent = service.requests
    assert run.returncode == 0, run.stderr
    assert not run.of_type("error")

    # the model gets one tool per selected operation, in document order
    offered = specs(model.requests[0])
    assert list(offered) == BUILTINS + ["listPets", "createPet", "getPet", "explode", "whoami"]
    assert offered["listPets"]["parameters"]["properties"] == {
        "limit": {"type": "integer", "default": 20, "maximum": 100, "description": "How many."},
        "kind": {"type": "string", "enum": ["cat", "dog"], "default": "cat"}}
    body = offered["createPet"]["parameters"]
    assert body["required"] == ["body"] and set(body["properties"]) == {"X-Trace-Id", "body"}
    assert body["properties"]["body"]["required"] == ["name"]
    assert body["properties"]["body"]["properties"]["kind"]["enum"] == ["cat", "dog"]
    assert "recursive: NewPet" in json.dumps(body["properties"]["body"]["properties"]["friends"])
    assert offered["getPet"]["parameters"]["required"] == ["petId"]
    assert offered["getPet"]["description"] == \
        "One pet\n\n404 when there is no such pet.\n\n(GET /pets/{petId} on the pets API)"

    # the calls reached the service with the right method, path, query, body and headers
    assert [(r["method"], r["path"]) for r in sent] == [
        ("GET", "/v1/pets"), ("POST", "/v1/pets"), ("GET", "/v1/pets/1"),
        ("GET", "/v1/pets/999"), ("GET", "/v1/boom"), ("GET", "/v1/whoami")]
    assert sent[0]["query"] == {"limit": ["2"], "kind": ["cat"]}
    assert sent[1]["body"] == {"name": "Tom", "kind": "dog", "friends": [{"name": "Felix"}]}
    assert sent[1]["headers"]["x-trace-id"] == "trace-1"
    assert sent[1]["headers"]["content-type"] == "application/json"
    assert all(r["headers"]["x-api-key"] == key for r in sent)

    items = run.completed_items("mcp_tool_call")
    assert [(i["server"], i["tool"], i["status"]) for i in items] == [
        ("pets", "listPets", "completed"), ("pets", "createPet", "completed"),
        ("pets", "getPet", "completed"), ("pets", "getPet", "failed"),
        ("pets", "explode!", "failed"), ("pets", "whoami", "completed"),
        ("pets", "listPets", "failed")]
    listed = items[0]["result"]["content"][0]["text"]
    assert listed.startswith("HTTP 200 OK\ncontent-type: application/json\nx-request-id: req-1")
    assert '[\n  {\n    "id": 1,\n    "name": "Felix",' in listed
    assert items[1]["result"]["content"][0]["text"].startswith("HTTP 201 Created")
    assert items[3]["error"]["message"].startswith("HTTP 404 Not Found")
    assert '"error": "no such pet"' in items[3]["error"]["message"]
    assert items[4]["error"]["message"].startswith("HTTP 500 Internal Server Error")
    assert "the database is on fire" in items[4]["error"]["message"]
    assert "'fish' is not one of ['cat', 'dog']" in items[6]["error"]["message"]

    # results (errors included) went back to the model; the key never reached it
    results = [m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert results[3].startswith("HTTP 404") and results[4].startswith("HTTP 500")
    assert '"key_seen": "[REDACTED]"' in results[5]
    thread = run.events[0]["thread_id"]
    record = (home / ".baseagent" / "sessions" / f"{thread}.jsonl").read_text()
    for text in (json.dumps(model.requests), run.stdout, run.stderr, record):
        assert key not in text


def test_a_broken_document_and_an_unreachable_service(scripted_server, workspace, home,
                                                      tmp_path):
    closed = free_port()
    broken = tmp_path / "broken.yaml"
    broken.write_text("openapi: 3.0.0\npaths: [unclosed\n")
    down = tmp_path / "down.json"
    down.write_text(json.dumps(document(f"http://127.0.0.1:{closed}/v1")))
    dangling = tmp_path / "dangling.json"
    doc = document("http://127.0.0.1:1/v1")
    doc["paths"]["/pets"]["post"]["requestBody"] = {"$ref": "#/components/requestBodies/Gone"}
    dangling.write_text(json.dumps(doc))
    config = write_config(tmp_path / "config.toml", {"openapi": {
        "broken": {"spec": str(broken)},
        "gone": {"spec": f"http://127.0.0.1:{closed}/openapi.json", "timeout_sec": 5},
        "down": {"spec": str(down), "include": ["getPet"], "timeout_sec": 5},
        "secret": {"spec": str(down), "auth": {"env": "UNSET_PETS_TOKEN"}},
        "dangling": {"spec": str(dangling)},
        "empty": {"spec": str(down), "include": ["no-such-operation"]},
    }})
    model = scripted_server([{"tool_calls": [call("getPet", petId=1)]},
                             {"content": "the service is down"}])
    run = run_agent(["-i", "get pet 1", "--no-verify", "--config", str(config)],
                    cwd=workspace, home=home, api_base=model.api_base, timeout=150)
    assert run.returncode == 0, run.stderr
    notices = [e["message"] for e in run.of_type("error")]
    assert len(notices) == 5, notices
    assert notices[0].startswith(f"OpenAPI document 'broken' is unusable: {broken} is neither "
                                 "JSON nor YAML:") and notices[0].endswith(
        "; continuing without its tools")
    assert notices[1].startswith(f"OpenAPI document 'gone' is unusable: cannot fetch "
                                 f"http://127.0.0.1:{closed}/openapi.json: ConnectError")
    assert notices[2] == ("OpenAPI document 'secret' is unusable: the auth variable "
                          "UNSET_PETS_TOKEN is not set; continuing without its tools")
    assert notices[3] == ("OpenAPI document 'dangling' is unusable: $ref "
                          "#/components/requestBodies/Gone points to nothing; continuing "
                          "without its tools")
    assert notices[4] == ("OpenAPI document 'empty' is unusable: no operation matches "
                          "include/exclude; continuing without its tools")
    assert list(specs(model.requests[0])) == BUILTINS + ["getPet"]
    item = run.completed_items("mcp_tool_call")[0]
    assert (item["server"], item["status"]) == ("down", "failed")
    assert item["error"]["message"].startswith(
        f"Error: cannot reach GET http://127.0.0.1:{closed}/v1/pets/1: ConnectError")
    assert run.final_message == "the service is down"


def test_library_agent_with_a_parsed_document(workspace):
    with PetService("library-key-123456") as service:
        model = DeterministicClient([
            {"tool_calls": [call("getPet", petId=1), call("pets__getPet", petId=1)]},
            {"content": "ok"}])

        def getPet(petId: int) -> str:  # noqa: N802,N803 - clashes with the operation on purpose
            """A Python tool with the operation's name."""
            return "python"

        agent = Agent(model_client=model, cwd=workspace, session=False, verify=False,
                      env={"PETS": "library-key-123456"}, tools=[getPet],
                      openapi=[{"name": "pets", "spec": document(f"{service.url}/v1"),
                                "include": ["getPet"],
                                "auth": {"type": "bearer", "env": "PETS"}}])
        try:
            result = agent.run("get pet 1")
        finally:
            agent.close()
        sent = service.requests
    assert result.ok
    python_item, api_item = result.items[:2]
    assert (python_item.server, python_item.result.content[0]["text"]) == ("baseagent", "python")
    assert (api_item.server, api_item.tool, api_item.status) == ("pets", "getPet", "completed")
    assert '"name": "Felix"' in api_item.result.content[0]["text"]
    assert sent[0]["headers"]["authorization"] == "Bearer library-key-123456"
    assert [t["function"]["name"] for t in model.tools_seen[0]][-2:] == ["getPet", "pets__getPet"]


def test_cancel_interrupts_a_slow_call_and_a_timeout_is_a_result(workspace):
    import threading
    import time

    with PetService("k") as service:
        model = DeterministicClient([{"tool_calls": [call("slow", seconds=1.5)]},
                                     {"content": "ok"},
                                     {"tool_calls": [call("patient__slow", seconds=30)]},
                                     {"content": "never"}])
        agent = Agent(model_client=model, cwd=workspace, session=False, verify=False, env={},
                      openapi={"quick": {"spec": document(f"{service.url}/v1"),
                                         "include": ["slow"], "timeout_sec": 0.5},
                               "patient": {"spec": document(f"{service.url}/v1"),
                                           "include": ["slow"], "timeout_sec": 60}})
        try:
            timed_out = agent.run("be slow").items[0]
            threading.Timer(0.5, agent.cancel).start()
            started = time.monotonic()
            result = agent.run("be slower")
            elapsed = time.monotonic() - started
        finally:
            agent.close()
    assert timed_out.status == "failed" and timed_out.error.message == (
        f"Error: GET {service.url}/v1/slow did not answer within 0.5s (timeout_sec)")
    assert result.status == "interrupted" and elapsed < 5
    assert result.items[0].error.message == f"Error: GET {service.url}/v1/slow was interrupted"


# -- configuration and the pure parts ---------------------------------------------------------

@pytest.mark.parametrize("table, fragment", [
    ('spce = "x"', "openapi.api.spce: unknown key"),
    ('spec = "x"\nauth = { type = "bearer" }', "openapi.api.auth.env: Field required"),
    ('spec = "x"\nauth = { env = "T", header = "A", query = "k" }', "`header` or `query`"),
    ('spec = "x"\nbase_url = "ftp://x"', "base_url must start with http"),
    ('spec = "x"\ntimeout_sec = -1', "openapi.api.timeout_sec"),
])
def test_bad_openapi_tables_are_one_line_naming_the_key(tmp_path, table, fragment):
    path = tmp_path / "config.toml"
    path.write_text(f"[openapi.api]\n{table}\n")
    with pytest.raises(ConfigError) as info:
        load_settings({}, env={}, config_file=path)
    assert fragment in str(info.value) and "\n" not in str(info.value), str(info.value)


def test_selection_naming_and_parameters():
    doc = document("http://h/v1")
    doc["paths"]["/pets/{petId}"]["get"]["parameters"] = [
        {"name": "petId", "in": "query", "schema": {"type": "string"}}]
    taken = {"getPet"}
    ops = operations(doc, source="my api", include=["pets", "explode!"], exclude=["createPet"],
                     taken=taken)
    assert [(o.name, o.operation_id) for o in ops] == [
        ("listPets", "listPets"), ("my_api__getPet", "getPet"), ("explode", "explode!")]
    get = ops[1]
    assert get.schema["required"] == ["path_petId"]
    assert set(get.schema["properties"]) == {"path_petId", "query_petId"}
    assert get.request({"path_petId": "a/b c", "query_petId": "x"}) == (
        "/pets/a%2Fb%20c", {"petId": "x"}, {}, None)
    assert tool_name("my api", "getPet", taken) == "my_api__getPet_2"
    by_tag = operations(doc, source="s", include=["admin"], exclude=[], taken=set())
    assert [o.operation_id for o in by_tag] == ["deletePet"]


def test_refs_cycles_and_base_urls():
    doc = {"openapi": "3.1.0", "paths": {}, "components": {"schemas": {
        "Node": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/Node"}}},
        "Named": {"$ref": "#/components/schemas/Node", "description": "a node"}}}}
    named = resolve(doc, {"$ref": "#/components/schemas/Named"})
    assert named["description"] == "a node"
    assert named["properties"]["next"] == {"description": "(recursive: Node)"}
    assert resolve(doc, {"$ref": "other.yaml#/X"}) == {
        "description": "(defined in another document: other.yaml#/X)"}
    with pytest.raises(OpenApiError, match="points to nothing"):
        resolve(doc, {"$ref": "#/components/schemas/Missing"})
    assert base_url({"servers": [{"url": "/api/"}]}, None, "http://h:1/spec/openapi.json") \
        == "http://h:1/api"
    assert base_url({"servers": [{"url": "https://{host}/v2", "variables": {
        "host": {"default": "example.com"}}}]}, None, None) == "https://example.com/v2"
    assert base_url({}, "http://x/", None) == "http://x"
    with pytest.raises(OpenApiError, match="relative: set base_url"):
        base_url({"servers": [{"url": "/api"}]}, None, None)
    with pytest.raises(OpenApiError, match="Swagger 2.0"):
        check({"swagger": "2.0", "paths": {}})
    with pytest.raises(OpenApiError, match="no `paths`"):
        check({"openapi": "3.0.0"})


def test_the_auth_secret_is_redacted_everywhere_it_could_leak(workspace):
    from baseagent.compose import builder as assembly
    from baseagent.config.load import settings_from_options

    settings = settings_from_options({"cwd": workspace, "openapi": {"api": {
        "spec": document("http://h/v1"), "auth": {"env": "MY_SERVICE_AUTH"}}}})
    prepared = assembly.prepare(settings, env={"MY_SERVICE_AUTH": "a-very-secret-value"})
    assert prepared.redactor.text("x a-very-secret-value y") == "x [REDACTED] y"
