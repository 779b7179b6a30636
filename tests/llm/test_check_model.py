"""A missing API key is caught before the run, for every provider litellm knows
(llm/client.check_model), instead of surfacing as retried 500s mid-run."""
from __future__ import annotations

import pytest
from helpers import run_agent

from baseagent.errors import ConfigError
from baseagent.llm.client import check_model

# (model, api_base, environment, None when the run may start or a phrase of the error)
CASES = {
    "JSON-configured provider without its key": (
        "chutes/deepseek-ai/DeepSeek-V3", None, {}, "set CHUTES_API_KEY"),
    "JSON-configured provider with its key": (
        "chutes/deepseek-ai/DeepSeek-V3", None, {"CHUTES_API_KEY": "k"}, None),
    "another JSON-configured provider": ("poe/some-bot", None, {}, "set POE_API_KEY"),
    "provider litellm validates itself": ("openai/gpt-4.1", None, {}, "set OPENAI_API_KEY"),
    "remote provider litellm resolves no key for": (
        "sambanova/Meta-Llama-3.1-8B-Instruct", None, {},
        "missing API key for sambanova: set the provider's API key variable"),
    "remote provider with its key": (
        "sambanova/Meta-Llama-3.1-8B-Instruct", None, {"SAMBANOVA_API_KEY": "k"}, None),
    "local server that needs no key": ("hosted_vllm/qwen", "http://127.0.0.1:9/v1", {}, None),
    "a remote provider behind the user's own endpoint": (
        "sambanova/Meta-Llama-3.1-8B-Instruct", "http://127.0.0.1:9/v1", {}, None),
}
KEY_VARS = ("CHUTES_API_KEY", "POE_API_KEY", "OPENAI_API_KEY", "SAMBANOVA_API_KEY")


@pytest.mark.parametrize("name", list(CASES))
def test_missing_keys(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    model, api_base, env, error = CASES[name]
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    if error is None:
        check_model(model, api_base, None)
        return
    with pytest.raises(ConfigError, match=error):
        check_model(model, api_base, None)
    check_model(model, api_base, "sk-from-config")  # api_key in the config is enough


def test_chutes_without_a_key_fails_before_the_run(workspace, home):
    run = run_agent(["--model", "chutes/deepseek-ai/DeepSeek-V3", "--instruction", "hi"],
                    cwd=workspace, home=home, env_extra={"CHUTES_API_KEY": ""})
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.strip().splitlines() == [
        "baseagent: error: missing API key for chutes: set CHUTES_API_KEY (or api_key in "
        "config); no key? --oss runs a local model (Ollama, LM Studio, llama-server), and the "
        "offline demo needs none (docs/getting-started.md)"]
    # caught before the run: no thread, no model call, nothing retried
    assert "Reconnecting" not in run.stderr
    assert not (home / ".baseagent" / "sessions").exists()
