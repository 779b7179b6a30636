"""An OpenAPI 3 document: read (file, URL or an already-parsed mapping), checked, and its
local `$ref`s resolved.

Pure apart from `load()`'s one read; every problem is an OpenApiError whose message is one
line fit for a notice.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urljoin

# A `$ref` chain deeper than this is treated as a cycle (schemas may refer to themselves).
MAX_REF_DEPTH = 32


class OpenApiError(Exception):
    """The document cannot be used; the message says why in one line."""


def load(spec: str | Mapping[str, Any], *, timeout: float,
         headers: Mapping[str, str] | None = None) -> tuple[dict[str, Any], str | None]:
    """(the document, the URL it came from or None). Reads a file or fetches an http(s) URL
    (with the source's auth headers: internal services guard their documents too)."""
    if isinstance(spec, Mapping):
        return check(dict(spec)), None
    if spec.startswith(("http://", "https://")):
        import httpx

        try:
            response = httpx.get(spec, headers=dict(headers or {}), timeout=timeout,
                                 follow_redirects=True)
        except httpx.HTTPError as exc:
            raise OpenApiError(f"cannot fetch {spec}: {type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            raise OpenApiError(f"cannot fetch {spec}: HTTP {response.status_code}")
        return check(parse(response.text, spec)), str(response.url)
    path = Path(spec).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OpenApiError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") \
            from None
    return check(parse(text, str(path))), None


def parse(text: str, where: str) -> Any:
    """JSON, else YAML (JSON is tried first: it is faster and its errors are clearer)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        first = str(exc).strip().splitlines()
        raise OpenApiError(f"{where} is neither JSON nor YAML: "
                           f"{' '.join(line.strip() for line in first[:3])}") from None


def check(doc: Any) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise OpenApiError("the document is not a mapping")
    if "swagger" in doc:
        raise OpenApiError(f"Swagger {doc.get('swagger')} documents are not supported "
                           "(OpenAPI 3.x only)")
    version = str(doc.get("openapi", ""))
    if not version.startswith("3."):
        raise OpenApiError(f"not an OpenAPI 3 document (openapi: {version or 'missing'})")
    if not isinstance(doc.get("paths"), dict):
        raise OpenApiError("the document has no `paths`")
    return doc


def resolve(doc: dict[str, Any], node: Any, _chain: tuple[str, ...] = ()) -> Any:
    """`node` with every local `$ref` replaced by what it points to (siblings of a `$ref`
    kept, as OpenAPI 3.1 allows). A cycle, or a reference to another document, becomes an
    open schema that says so, so a recursive model still gives a usable tool."""
    if isinstance(node, list):
        return [resolve(doc, item, _chain) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        siblings = {k: resolve(doc, v, _chain) for k, v in node.items() if k != "$ref"}
        if not ref.startswith("#/"):
            return {"description": f"(defined in another document: {ref})", **siblings}
        if ref in _chain or len(_chain) >= MAX_REF_DEPTH:
            return {"description": f"(recursive: {ref.rsplit('/', 1)[-1]})", **siblings}
        target = pointer(doc, ref)
        resolved = resolve(doc, target, (*_chain, ref))
        return {**resolved, **siblings} if isinstance(resolved, dict) else resolved
    return {k: resolve(doc, v, _chain) for k, v in node.items()}


def pointer(doc: dict[str, Any], ref: str) -> Any:
    node: Any = doc
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise OpenApiError(f"$ref {ref} points to nothing")
    return node


def base_url(doc: dict[str, Any], configured: str | None, spec_url: str | None) -> str:
    """Where calls go: the configured base_url, else the document's first server (its
    variables at their defaults; a relative URL taken against the document's own URL)."""
    if configured:
        return configured.rstrip("/")
    servers = doc.get("servers") or []
    if not servers or not isinstance(servers[0], dict) or not servers[0].get("url"):
        raise OpenApiError("the document names no server: set base_url")
    server = servers[0]
    url = str(server["url"])
    for name, variable in (server.get("variables") or {}).items():
        url = url.replace("{" + name + "}", str((variable or {}).get("default", "")))
    if not url.startswith(("http://", "https://")):
        if spec_url is None:
            raise OpenApiError(f"the document's server URL {url!r} is relative: set base_url")
        url = urljoin(spec_url, url)
    return url.rstrip("/")
