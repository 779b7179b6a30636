"""The model checks made before litellm is imported agree with litellm's own, and the CLI
reports a typo or a missing key without importing it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from baseagent.llm.client import load_litellm
from baseagent.llm.preflight import KNOWN_PREFIXES, PROVIDER_KEYS, preflight
from helpers import AGENT, agent_env


def litellm_verdict(model: str, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    """What llm.client.check_model (litellm) says: ok, unknown or missing."""
    from baseagent.llm import client
    from baseagent.errors import ConfigError

    for name in {k for keys in PROVIDER_KEYS.values() for k in keys}:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        client.check_model(model, None, None)
    except ConfigError as exc:
        return "unknown" if "unknown model" in str(exc) else "missing"
    return "ok"


def our_verdict(model: str, env: dict[str, str]) -> str:
    problem = preflight(model, None, env)
    if problem is None:
        return "ok"
    return "unknown" if "unknown model" in problem else "missing"


def test_the_prefix_snapshot_is_litellms():
    litellm = load_litellm()
    expected = {p.value for p in litellm.provider_list} | {
        k.split("/")[0] for k in litellm.model_cost if "/" in k}
    assert KNOWN_PREFIXES == expected


@pytest.mark.parametrize("provider", sorted(PROVIDER_KEYS))
def test_missing_keys_agree_with_litellm(provider, monkeypatch):
    model = f"{provider}/some-model"
    assert our_verdict(model, {}) == litellm_verdict(model, {}, monkeypatch) == "missing"
    for key in PROVIDER_KEYS[provider]:
        env = {key: "k"}
        assert our_verdict(model, env) == litellm_verdict(model, env, monkeypatch) == "ok"


@pytest.mark.parametrize("model", ["foo/bar", "openia/gpt-4.1", "antropic/claude", "x/y/z"])
def test_unknown_providers_agree_with_litellm(model, monkeypatch):
    assert our_verdict(model, {}) == litellm_verdict(model, {}, monkeypatch) == "unknown"


def test_what_only_litellm_knows_is_passed_on(monkeypatch):
    litellm = load_litellm()
    # every model in litellm's price map: never called unknown by the preflight
    assert not [m for m in litellm.model_cost if "unknown" in (preflight(m, "k", {}) or "")]
    assert preflight("gpt-4.1", None, {}) is None  # bare names: litellm decides
    assert preflight("openai/gpt-4.1", "sk-explicit", {}) is None  # api_key setting


@pytest.fixture
def no_litellm(tmp_path: Path) -> dict[str, str]:
    """PYTHONPATH with a `litellm` that kills the process with 99 if anything imports it."""
    fake = tmp_path / "fake" / "litellm"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("import os\nos._exit(99)\n")
    src = Path(AGENT).parent / "src"
    return {"PYTHONPATH": os.pathsep.join([str(fake.parent), str(src)])}


@pytest.mark.parametrize("args, message", [
    (["--model", "antropic/claude-sonnet-4-5"], "unknown model or provider: 'antropic/claude-sonnet-4-5'"),
    (["--model", "anthropic/claude-sonnet-4-5"], "missing API key for anthropic: set ANTHROPIC_API_KEY"),
])
def test_cli_reports_before_importing_litellm(args, message, no_litellm, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = agent_env(home, **no_litellm)
    env.pop("ANTHROPIC_API_KEY", None)
    proc = subprocess.run([sys.executable, str(AGENT), *args, "-i", "hi", "--json"], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr  # 99 would mean litellm was imported
    assert proc.stderr.strip().splitlines() == [f"baseagent: error: {message}" + (
        " (or api_key in config); no key? --oss runs a local model (Ollama, LM Studio, "
        "llama-server), and the offline demo needs none (docs/getting-started.md)"
        if "missing" in message else
        " (use a litellm model string such as openai/gpt-4.1 or anthropic/claude-sonnet-4-5)")]
    assert proc.stdout == ""
