"""An OpenAPI 3 document: read (file, URL or an already-parsed mapping), checked, and its
local `$ref`s resolved.

Pure apart from `load()`'s one read; every problem is an OpenApiError whose message is one
line fit for a notice. Everything is bounded: the document's size (a URL is streamed and cut
off, a file read no further than the limit), and what its `$ref`s expand to (each reference
resolved once; an operation whose schemas would expand past MAX_RESOLVED_NODES gets the
deeper ones as open schemas that name them): a fan-out of references (10 properties, 9
levels) is a billion nodes expanded.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urljoin

# A `$ref` chain deeper than this is treated as a cycle (schemas may refer to themselves).
MAX_REF_DEPTH = 32
# The largest document read (GitHub's whole REST API is ~12 MB of JSON).
MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
# What one operation's schemas may expand to, in JSON nodes (a model reads them as tokens).
MAX_RESOLVED_NODES = 20_000


class OpenApiError(Exception):
    """The document cannot be used; the message says why in one line."""


def load(spec: str | Mapping[str, Any], *, timeout: float,
         headers: Mapping[str, str] | None = None,
         stop: threading.Event | None = None) -> tuple[dict[str, Any], str | None]:
    """(the document, the URL it came from or None). Reads a file or fetches an http(s) URL
    (with the source's auth headers: internal services guard their documents too), at most
    MAX_DOCUMENT_BYTES of either; `stop` set abandons a fetch between chunks."""
    if isinstance(spec, Mapping):
        return check(dict(spec)), None
    if spec.startswith(("http://", "https://")):
        data, url = _fetch(spec, headers or {}, timeout, stop)
        return check(parse(_text(data, spec), spec)), url
    path = Path(spec).expanduser()
    return check(parse(_text(_read_file(path), str(path)), str(path))), None


def _fetch(url: str, headers: Mapping[str, str], timeout: float,
           stop: threading.Event | None) -> tuple[bytes, str]:
    import httpx

    try:
        with httpx.stream("GET", url, headers=dict(headers), timeout=timeout,
                          follow_redirects=True) as response:
            if response.status_code >= 400:
                raise OpenApiError(f"cannot fetch {url}: HTTP {response.status_code}")
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                if stop is not None and stop.is_set():
                    raise OpenApiError(f"loading {url} was abandoned")
                size += len(chunk)
                if size > MAX_DOCUMENT_BYTES:
                    raise OpenApiError(f"{url} is larger than {_mib(MAX_DOCUMENT_BYTES)}")
                chunks.append(chunk)
            return b"".join(chunks), str(response.url)
    except httpx.HTTPError as exc:
        raise OpenApiError(f"cannot fetch {url}: {type(exc).__name__}: {exc}") from None


def _read_file(path: Path) -> bytes:
    """A regular file's bytes, no more than the limit (a FIFO or a device is refused)."""
    from baseagent.fsutil import read_regular

    try:
        return read_regular(path, MAX_DOCUMENT_BYTES)
    except OSError as exc:
        raise OpenApiError(f"cannot read {path}: {exc.strerror or exc}") from None


def _text(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise OpenApiError(f"{where} is not UTF-8 text") from None


def _mib(size: int) -> str:
    return f"{size // (1024 * 1024)} MiB"


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


def resolve(doc: dict[str, Any], node: Any, stop: threading.Event | None = None) -> Any:
    """`node` with every local `$ref` replaced by what it points to (siblings of a `$ref`
    kept, as OpenAPI 3.1 allows). A cycle, or a reference to another document, becomes an
    open schema that says so, so a recursive model still gives a usable tool; so does a
    reference that would take the result past MAX_RESOLVED_NODES. `stop` set abandons it."""
    return _Resolver(doc, stop).resolve(node, ())


class _Resolver:
    """One resolution: each reference is resolved once (memoised with its expanded size),
    and the expanded size of the whole result is kept under the budget."""

    def __init__(self, doc: dict[str, Any], stop: threading.Event | None) -> None:
        self.doc = doc
        self.stop = stop
        self.memo: dict[str, tuple[Any, int]] = {}
        self.left = MAX_RESOLVED_NODES

    def resolve(self, node: Any, chain: tuple[str, ...]) -> Any:
        return self._resolve(node, chain)[0]

    def _resolve(self, node: Any, chain: tuple[str, ...]) -> tuple[Any, int]:
        """(the resolved node, its size in JSON nodes once expanded)."""
        if self.stop is not None and self.stop.is_set():
            raise OpenApiError("resolving the document was abandoned")
        self.left -= 1
        if isinstance(node, list):
            items = [self._resolve(item, chain) for item in node]
            return [item for item, _ in items], 1 + sum(size for _, size in items)
        if not isinstance(node, dict):
            return node, 1
        ref = node.get("$ref")
        if isinstance(ref, str):
            siblings, size = self._mapping({k: v for k, v in node.items() if k != "$ref"},
                                           chain)
            resolved, ref_size = self._ref(ref, chain)
            if isinstance(resolved, dict):
                return {**resolved, **siblings}, ref_size + size
            return resolved, ref_size
        return self._mapping(node, chain)

    def _mapping(self, node: dict[str, Any], chain: tuple[str, ...]) -> tuple[Any, int]:
        out: dict[str, Any] = {}
        total = 1
        for key, value in node.items():
            out[key], size = self._resolve(value, chain)
            total += size
        return out, total

    def _ref(self, ref: str, chain: tuple[str, ...]) -> tuple[Any, int]:
        name = ref.rsplit("/", 1)[-1]
        if not ref.startswith("#/"):
            return {"description": f"(defined in another document: {ref})"}, 2
        if ref in chain or len(chain) >= MAX_REF_DEPTH:
            return {"description": f"(recursive: {name})"}, 2
        if ref in self.memo:
            resolved, size = self.memo[ref]
            if size > self.left:
                return self._too_large(name)
            self.left -= size
            return resolved, size
        if self.left <= 0:
            return self._too_large(name)
        before = self.left
        resolved, size = self._resolve(pointer(self.doc, ref), (*chain, ref))
        if self.left < 0:  # this reference alone went past the budget
            self.left = before
            return self._too_large(name)
        self.memo[ref] = (resolved, size)
        return resolved, size

    def _too_large(self, name: str) -> tuple[Any, int]:
        return {"description": f"({name}: too large to expand here)"}, 2


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
    return _server_url(servers[0], spec_url)


def server_urls(doc: dict[str, Any], configured: str | None, spec_url: str | None) -> list[str]:
    """Every URL calls may go to (the generic `http_request` tool is held to these): the
    configured base_url alone, else each of the document's servers that resolves to an
    absolute http(s) URL, the first (base_url's) first."""
    first = base_url(doc, configured, spec_url)
    if configured:
        return [first]
    urls = [first]
    for server in doc.get("servers") or []:
        if not isinstance(server, dict) or not server.get("url"):
            continue
        try:
            url = _server_url(server, spec_url)
        except OpenApiError:
            continue
        if url not in urls:
            urls.append(url)
    return urls


def _server_url(server: dict[str, Any], spec_url: str | None) -> str:
    url = str(server["url"])
    for name, variable in (server.get("variables") or {}).items():
        url = url.replace("{" + name + "}", str((variable or {}).get("default", "")))
    if not url.startswith(("http://", "https://")):
        if spec_url is None:
            raise OpenApiError(f"the document's server URL {url!r} is relative: set base_url")
        url = urljoin(spec_url, url)
    return url.rstrip("/")
