"""Which transport serves a run's model calls: litellm, or the direct path.

The direct path (llm/direct.py) speaks the wire itself, so the first request leaves before
litellm could even be imported, and the process never pays for it (seconds of CPU, ~150 MB).
It is taken only where it builds exactly the request litellm would:

- `openai/<name>` for a name litellm has no rules for: not in its model map (in any case),
  not a GPT-5/6 name (litellm's own parameter rules), no fine-tune or `responses/` prefix.
  That is an OpenAI-compatible server: a local model, vLLM, a proxy. OpenAI's own models
  keep going through litellm, which carries their per-model rules (o-series system
  messages, max_completion_tokens, the Responses API for some).
- `anthropic/<name>`, for calls without reasoning_effort or temperature (where litellm's
  rules differ model by model): llm/wire_anthropic.py.

Everything else, and any setting the direct path does not mirror (an environment that
changes how litellm or openai-python connect, an unknown extra parameter, a map that
cannot be read), goes through litellm, as do single requests the wire cannot build
(wire_openai.Unsupported). `transport = "litellm"` (BASEAGENT_MODEL_TRANSPORT) forces it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from baseagent.llm.model_map import ModelMap, resolve
from baseagent.llm.pricing import priceable

TRANSPORTS = ("auto", "litellm")
OPENAI_BASE = "https://api.openai.com/v1"
ANTHROPIC_BASE = "https://api.anthropic.com/v1/messages"
ANTHROPIC_OAUTH_PREFIX = "sk-ant-oat"  # OAuth tokens: litellm sends other headers
# Variables litellm or openai-python read that change the request or the connection in
# ways the direct path does not reproduce: with any of them set, litellm serves the run.
_OPENAI_ENV = ("OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_ORGANIZATION",
               "OPENAI_CUSTOM_HEADERS")
# (SSL_CERT_FILE and proxies are honoured alike: httpx reads them as litellm does.)
_CONNECTION_ENV = ("SSL_VERIFY", "SSL_CERTIFICATE")
# Extra request parameters the direct path sends as they are (core/context/caching.py).
DIRECT_EXTRA_PARAMS = frozenset({"prompt_cache_key"})
_REASONING_SERIES = ("gpt-5", "gpt-6")
# Hosts of a server on this machine (a local model server: one slot, a CPU that may read
# a long prompt for minutes before its first token).
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0", "host.docker.internal"})


def on_this_machine(api_base: str | None) -> bool:
    """Whether `api_base` names a server on this machine (localhost, 127.*, ::1, *.local)."""
    host = (urlsplit(api_base).hostname or "") if api_base else ""
    return host in _LOCAL_HOSTS or host.startswith("127.") or host.endswith(".local")


@dataclass(frozen=True)
class Route:
    """A model served by the direct path: its wire, the provider's name for the model,
    where and with which key, and its model-map info (None when litellm's map has none)."""

    wire: str  # "openai" | "anthropic"
    model: str  # the litellm model string, e.g. openai/qwen2.5-coder
    name: str  # the provider's own name for it (the request's "model")
    api_base: str
    api_key: str = field(repr=False)
    info: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    user_agent: str = "baseagent"
    # How to reach it, resolved from the environment as httpx (litellm's client) would
    proxy: str | None = None  # an http(s) proxy URL
    ca_file: str | None = None  # SSL_CERT_FILE; neither: certifi's bundle
    ca_dir: str | None = None  # SSL_CERT_DIR

    def limits(self, context_window: int | None, max_tokens: int | None,
               default_window: int, default_output: int) -> tuple[int, int]:
        """(context window, output cap) as llm/client.model_limits computes them."""
        info = self.info or {}
        window = context_window or info.get("max_input_tokens") or default_window
        output = max_tokens or info.get("max_output_tokens") or default_output
        return int(window), int(min(output, window // 4))


def choose(model: str, *, api_base: str | None, api_key: str | None,
           env: Mapping[str, str], extra_params: Mapping[str, Any] | None = None,
           transport: str = "auto", model_map: ModelMap | None = None,
           user_agent: str = "baseagent", temperature: float | None = None,
           reasoning_effort: str | None = None) -> Route | None:
    """The direct route for this model, or None for litellm."""
    if transport != "auto" or not set(extra_params or ()) <= DIRECT_EXTRA_PARAMS:
        return None
    provider, _, name = model.partition("/")
    if not name or any(env.get(k) for k in _CONNECTION_ENV):
        return None
    if provider == "anthropic":
        if extra_params or temperature is not None or reasoning_effort is not None:
            return None  # litellm's per-model rules for thinking, effort and sampling
        return _anthropic(model, name, api_base, api_key, env, model_map, user_agent)
    if provider != "openai" or any(env.get(k) for k in _OPENAI_ENV):
        return None
    base = api_base or env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_BASE") or OPENAI_BASE
    key = api_key or env.get("OPENAI_API_KEY")
    if not key or "?" in base or "#" in base:
        return None
    if name.startswith(("ft:", "responses/")) or any(m in model for m in _REASONING_SERIES):
        return None
    model_map = model_map or ModelMap.load()
    if model_map is None or model_map.known(name) or model_map.known(model):
        return None
    info = resolve(model_map, "openai", name)
    if not priceable(info):
        return None
    reach = connection(base, env)
    if reach is None:
        return None
    return Route("openai", model, name, base, key, info, user_agent, *reach)


def _anthropic(model: str, name: str, api_base: str | None, api_key: str | None,
               env: Mapping[str, str], model_map: ModelMap | None,
               user_agent: str) -> Route | None:
    """`anthropic/<name>`: any Claude model but the always-thinking ones and those that
    refuse a forced tool choice (litellm rewrites requests for both)."""
    key = api_key or env.get("ANTHROPIC_API_KEY")
    if not key or key.startswith(ANTHROPIC_OAUTH_PREFIX) \
            or env.get("LITELLM_ANTHROPIC_DISABLE_URL_SUFFIX"):
        return None
    base = (api_base or env.get("ANTHROPIC_API_BASE") or env.get("ANTHROPIC_BASE_URL")
            or ANTHROPIC_BASE)
    if "?" in base or "#" in base:
        return None
    model_map = model_map or ModelMap.load()
    if model_map is None:
        return None
    info = resolve(model_map, "anthropic", name)
    if info is not None and (info.get("thinking_always_on")
                             or info.get("supports_forced_tool_use") is False):
        return None
    if not priceable(info):
        return None
    reach = connection(base if base.endswith("/v1/messages") else base + "/v1/messages", env)
    if reach is None:
        return None
    return Route("anthropic", model, name, base, key, info, user_agent, *reach)


def connection(url: str, env: Mapping[str, str]
               ) -> tuple[str | None, str | None, str | None] | None:
    """(proxy, CA file, CA directory) for `url`, as httpx reads them from the environment
    (trust_env): HTTPS_PROXY / HTTP_PROXY / ALL_PROXY (either case), NO_PROXY, SSL_CERT_FILE
    and SSL_CERT_DIR. None for what the direct transport does not do (a SOCKS proxy)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return None
    proxy = None
    for name in (f"{parts.scheme}_proxy", "all_proxy"):
        value = env.get(name) or env.get(name.upper())
        if value:
            proxy = value if "://" in value else f"http://{value}"
            break
    if proxy and _bypassed(parts.hostname or "", env.get("no_proxy") or env.get("NO_PROXY")):
        proxy = None
    if proxy and urlsplit(proxy).scheme not in ("http", "https"):
        return None
    return proxy, env.get("SSL_CERT_FILE") or None, env.get("SSL_CERT_DIR") or None


def _bypassed(host: str, no_proxy: str | None) -> bool:
    """Whether NO_PROXY exempts `host` (httpx's reading: `*` for all, else each entry a
    host or a domain suffix)."""
    if not no_proxy:
        return False
    host = host.lower()
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        entry = entry.split("://", 1)[-1].lstrip("*").lstrip(".")
        entry = entry.rsplit(":", 1)[0] if entry.count(":") == 1 else entry
        if host == entry or host.endswith("." + entry):
            return True
    return False
