"""What counts as a secret, in one place: credential-looking variable names, the environment
commands run with (the agent's own minus its secrets), and the values to redact.

The agent holds provider API keys; a command the model writes (or a script it runs, or a
dependency's post-install hook) must not be able to read or exfiltrate them, and no event,
record or log line may carry them. Matching is by name pattern because the set of providers
is open-ended. Nothing here reads the process environment: callers hand it in.
"""
from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping

# Shell-style patterns, matched case-insensitively against variable names. The suffixes catch
# most credentials; the explicit names catch well-known ones the suffixes miss.
DEFAULT_STRIP_PATTERNS: tuple[str, ...] = (
    "*_API_KEY",
    "*_TOKEN",
    "*_SECRET",
    "*_SECRET_KEY",
    "*_PASSWORD",
    "*_PRIVATE_KEY",
    "*_ACCESS_KEY_ID",
    "API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "AZURE_OPENAI_KEY",
    "LITELLM_MASTER_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
)


def is_secret_name(name: str, strip_patterns: Iterable[str] = DEFAULT_STRIP_PATTERNS) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in strip_patterns)


def child_env(base: Mapping[str, str],
              strip_patterns: Iterable[str] = DEFAULT_STRIP_PATTERNS) -> dict[str, str]:
    """A copy of `base` without the variables whose names match any pattern."""
    patterns = tuple(strip_patterns)
    return {k: v for k, v in base.items() if not is_secret_name(k, patterns)}


def secret_values(environ: Mapping[str, str],
                  strip_patterns: Iterable[str] = DEFAULT_STRIP_PATTERNS,
                  extra: Iterable[str | None] = ()) -> list[str]:
    """The values to redact: credential-named variables plus explicit ones (an api_key)."""
    patterns = tuple(strip_patterns)
    values = [v for k, v in environ.items() if is_secret_name(k, patterns)]
    return values + [v for v in extra if v]
