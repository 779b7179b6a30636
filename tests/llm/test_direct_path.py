"""The direct path end to end: the CLI reaches OpenAI-compatible servers and Anthropic
without importing litellm, and which calls take which path (llm/route.py)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import AGENT, agent_env, parse_jsonl

from baseagent.llm.model_map import MAP_FILE, map_path
from baseagent.llm.route import choose, connection

CLAUDE = "anthropic/claude-sonnet-4-5-20250929"


@pytest.fixture
def no_litellm(tmp_path: Path) -> dict[str, str]:
    """PYTHONPATH with a `litellm` that kills the process with 99 if anything imports it,
    beside the real package's model map (the direct path reads it as a file)."""
    fake = tmp_path / "fake" / "litellm"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("import os\nos._exit(99)\n")
    real = map_path()
    assert real is not None
    (fake / MAP_FILE).symlink_to(real)
    src = Path(AGENT).parent / "src"
    return {"PYTHONPATH": os.pathsep.join([str(fake.parent), str(src)])}


def run(args: list[str], env_extra: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, str(AGENT), "--json", *args], cwd=tmp_path,
                          env=agent_env(home, **env_extra), capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("model, base, env", [
    ("openai/qwen2.5-coder-local", "api_base", {"OPENAI_API_KEY": "sk-test"}),
    (CLAUDE, "url", {"ANTHROPIC_API_KEY": "sk-ant-test"}),
])
def test_a_run_never_imports_litellm(model, base, env, scripted_server, no_litellm, tmp_path):
    server = scripted_server([{"tool_calls": [{"name": "shell",
                                               "arguments": {"command": "echo hi"}}]},
                              {"content": "Done."}])  # no edit: no verification round
    proc = run(["--model", model, "--api-base", getattr(server, base), "-i", "say hi"],
               {**no_litellm, **env}, tmp_path)
    assert proc.returncode == 0, proc.stderr  # 99: litellm was imported
    events = parse_jsonl(proc.stdout)
    completed = [e for e in events if e["type"] == "turn.completed"]
    assert completed and completed[0]["usage"]["input_tokens"] > 0
    if model == CLAUDE:  # priced from litellm's map, read as a file
        assert completed[0]["cost_usd"] > 0
    assert len(server.requests) == 2


def test_what_the_direct_path_does_not_serve_goes_through_litellm(scripted_server,
                                                                    no_litellm, tmp_path):
    server = scripted_server([{"content": "Done."}])
    proc = run(["--model", CLAUDE, "--api-base", server.url, "--reasoning-effort", "low",
                "-i", "hi"], {**no_litellm, "ANTHROPIC_API_KEY": "sk-ant-test"}, tmp_path)
    assert proc.returncode == 99  # litellm was imported: the run needed it



def route(model: str, env: dict[str, str] | None = None, **kw):
    return choose(model, api_base=kw.pop("api_base", "http://127.0.0.1:9/v1"),
                  api_key=kw.pop("api_key", "k"), env=env or {}, **kw)


@pytest.mark.parametrize("model, kw, env, served", [
    ("openai/qwen2.5-coder", {}, {}, True),
    ("openai/my-local-model", {"api_key": None}, {"OPENAI_API_KEY": "k"}, True),
    ("openai/my-local-model", {"api_key": None}, {}, False),  # no key: litellm says so
    ("openai/gpt-4.1", {}, {}, False),  # OpenAI's own models: litellm's per-model rules
    ("openai/GPT-4o", {}, {}, False),  # in the map, ignoring case
    ("openai/gpt-5-local", {}, {}, False),  # litellm's GPT-5 rules go by the name
    ("openai/ft:gpt-4o-mini:org:x:1", {}, {}, False),
    ("openai/qwen", {"transport": "litellm"}, {}, False),
    ("openai/qwen", {"extra_params": {"top_k": 3}}, {}, False),
    ("openai/qwen", {}, {"OPENAI_ORG_ID": "org"}, False),
    ("openai/qwen", {}, {"SSL_VERIFY": "false"}, False),
    ("openai/qwen", {}, {"ALL_PROXY": "socks5://p:1080"}, False),
    (CLAUDE, {}, {}, True),
    ("anthropic/claude-newfamily-5", {}, {}, True),
    (CLAUDE, {"reasoning_effort": "low"}, {}, False),
    (CLAUDE, {"temperature": 0.2}, {}, False),
    (CLAUDE, {"api_key": "sk-ant-oat-123"}, {}, False),  # OAuth: other headers
    ("anthropic/claude-fable-5", {}, {}, False),  # thinks whatever is asked
    ("gemini/gemini-2.5-pro", {}, {}, False),
    ("deepseek/deepseek-chat", {}, {}, False),
])
def test_which_calls_take_the_direct_path(model, kw, env, served):
    assert (route(model, env, **kw) is not None) is served


def test_a_route_carries_what_it_needs():
    r = route("openai/qwen", {"HTTPS_PROXY": "http://proxy:3128"},
              api_base="https://gpu-box.example/v1")
    assert (r.wire, r.name, r.api_base, r.proxy) == ("openai", "qwen",
                                                     "https://gpu-box.example/v1",
                                                     "http://proxy:3128")
    r = route(CLAUDE, {}, api_base=None)
    assert r.wire == "anthropic" and r.api_base == "https://api.anthropic.com/v1/messages"
    assert r.limits(None, None, 128_000, 8_192) == (1_000_000, 64_000)  # the map's
    assert "sk-" not in repr(r)  # the key is never shown


@pytest.mark.parametrize("url, env, proxy", [
    ("https://a.example/v1", {"HTTPS_PROXY": "http://p:1"}, "http://p:1"),
    ("https://a.example/v1", {"https_proxy": "p:1"}, "http://p:1"),
    ("http://127.0.0.1:8/v1", {"HTTP_PROXY": "http://p:1", "NO_PROXY": "127.0.0.1"}, None),
    ("https://api.a.example/v1", {"ALL_PROXY": "http://p:1", "no_proxy": "a.example"}, None),
    ("https://a.example/v1", {"ALL_PROXY": "http://p:1", "NO_PROXY": "*"}, None),
    ("https://a.example/v1", {"HTTP_PROXY": "http://p:1"}, None),  # http only
])
def test_proxies_as_httpx_reads_them(url, env, proxy):
    reach = connection(url, env)
    assert reach is not None and reach[0] == proxy
