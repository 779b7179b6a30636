"""`baseagent serve`: the agent over HTTP (an API with Server-Sent Events, a web page, a
small JavaScript client), over the library `Agent`. docs/SERVE.md.

Needs the `serve` extra (`pip install 'baseagent[serve]'`): Starlette, sse-starlette and
uvicorn. `create_app` is imported from serve/app.py only when the extra is there.
"""
from __future__ import annotations

MISSING_EXTRA = ("baseagent serve needs the serve extra: pip install 'baseagent[serve]' "
                 "(Starlette, sse-starlette, uvicorn)")


def extra_missing() -> str | None:
    """The one line to print when the extra is not installed, or None."""
    import importlib.util

    for module in ("starlette", "sse_starlette", "uvicorn"):
        if importlib.util.find_spec(module) is None:
            return MISSING_EXTRA
    return None
