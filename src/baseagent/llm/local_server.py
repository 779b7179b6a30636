"""--oss: is a local model server listening, and does it have the model?

Checked once before the first request, so a user who forgot to start Ollama (or to pull
the model) gets one line with the command that fixes it, not five reconnect notices and a
connection error. Servers speak OpenAI's API: `GET {api_base}/models` lists what they serve
(Ollama, LM Studio and llama-server all answer it).
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from urllib.parse import urlparse

from baseagent.errors import ConfigError

PROBE_TIMEOUT_S = 3.0
OLLAMA_PORT = 11434


def check_local_server(api_base: str, model: str) -> None:
    """ConfigError with the fix when nothing answers at `api_base`, or when an
    Ollama server there has not pulled `model` (`openai/NAME`: NAME is Ollama's name)."""
    url = api_base.rstrip("/") + "/models"
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT_S) as response:
            listing = json.loads(response.read() or b"{}")
    except urllib.error.HTTPError:
        return  # something answers; a server without the listing still serves chats
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConfigError(
            f"no local model server answers at {api_base} ({reason}): start Ollama "
            f"(`ollama serve`), or pass --api-base for LM Studio (http://localhost:1234/v1) "
            f"or llama-server (http://127.0.0.1:8080/v1)") from None
    name = model.split("/", 1)[1] if "/" in model else model
    served = [str(m.get("id")) for m in listing.get("data") or [] if isinstance(m, dict)]
    if urlparse(api_base).port == OLLAMA_PORT and served and not _has(served, name):
        raise ConfigError(
            f"the local server at {api_base} has no model {name!r} (it has: "
            f"{', '.join(served[:8])}): run `ollama pull {name}`, or pass --model "
            f"openai/<one of those>")


def _has(served: list[str], name: str) -> bool:
    """Ollama lists `qwen2.5-coder:7b`; `qwen2.5-coder` means its `:latest`."""
    return name in served or (":" not in name and f"{name}:latest" in served)
