"""Environment variables that third-party code reads once, set only while it reads them.

litellm reads a few variables at import and tiktoken reads its cache directory while it
loads an encoding. Setting them for good would change os.environ under an application that
embeds the agent; so they are set (only where the user has not set them) for the duration
of that one call and removed again. A lock keeps two such scopes from interleaving.
"""
from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping

_lock = threading.RLock()


@contextlib.contextmanager
def scoped_environ(values: Mapping[str, str]) -> Iterator[None]:
    with _lock:
        added = []
        for name, value in values.items():
            if name not in os.environ:
                os.environ[name] = value
                added.append(name)
        try:
            yield
        finally:
            for name in added:
                os.environ.pop(name, None)
