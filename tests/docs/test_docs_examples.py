"""Every runnable example of README.md and docs/ runs, and prints what the docs say it prints
(tests/docs/docs_examples.py says how a block is marked)."""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tomllib
from contextlib import nullcontext
from pathlib import Path

import pytest

from docs_examples import REPO, CHECKED, Block, every_block, normalise

from baseagent.config.load import load_settings
from baseagent.testing.scripted_server import ScriptedServer

BLOCKS = every_block()
RUN = [b for b in BLOCKS if b.mark == "run"]
OUTPUTS = {b.name: b for b in BLOCKS if b.mark == "output"}
TOML = [b for b in BLOCKS if b.lang == "toml"]


def test_every_example_is_run_or_says_it_only_illustrates():
    loose = [b.where for b in BLOCKS if b.lang in CHECKED and b.lang != "toml" and b.mark is None]
    assert not loose, f"examples neither run nor marked as illustrations: {loose}"


def test_examples_tested_elsewhere_name_a_test_that_exists():
    named = [b for b in BLOCKS if b.mark == "tested-by"]
    assert not [b.where for b in named if not (REPO / str(b.name)).is_file()]


def test_scripts_run_blocks_play_exist():
    assert not [b.where for b in RUN if b.server and not (REPO / b.server).is_file()]


def test_every_output_block_belongs_to_a_run():
    names = {b.name for b in RUN}
    assert not [b.where for b in OUTPUTS.values() if b.name not in names]


@pytest.mark.parametrize("block", TOML, ids=[b.where for b in TOML])
def test_toml_examples_load_through_the_config_loader(block: Block, tmp_path: Path) -> None:
    """A config example is a file a person pastes: it must parse and validate."""
    if block.mark == "illustration":
        pytest.skip("marked as an illustration")
    config = tmp_path / "config.toml"
    config.write_text(block.code, encoding="utf-8")
    tomllib.loads(block.code)
    load_settings({"cwd": tmp_path}, env={}, config_file=config)


def _demo_dir() -> Path:
    """A fresh directory whose path is as long as the examples' `/tmp/demo`, so output cut
    at a fixed width (`cut -c`) cuts at the same place once the path is put back."""
    for _ in range(100):
        path = Path("/tmp/d" + secrets.token_hex(2)[:3])
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise RuntimeError("no free /tmp/dXXX directory")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("block", RUN, ids=[f"{b.name}@{b.where}" for b in RUN])
def test_runnable_examples_run_as_printed(block: Block, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    port = str(_free_port())
    scratch = _demo_dir()
    # The examples' fixed places (a demo directory, the demo port) become this test's own,
    # so runs in parallel never meet; the output is compared with them put back.
    code = block.code.replace("/tmp/demo", str(scratch)).replace("8765", port)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "baseagent").write_text(
        f"#!/bin/sh\nexec {sys.executable} {REPO / 'agent.py'} \"$@\"\n")
    (bin_dir / "baseagent").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HOME=str(home), PATH=f"{bin_dir}:{env['PATH']}", PYTHONPATH=str(REPO / "src"),
               NO_COLOR="1")
    server = nullcontext()
    if block.server:
        steps = json.loads((REPO / block.server).read_text(encoding="utf-8"))
        server = ScriptedServer(steps, port=int(port), loop=True)
        # What docs/LIBRARY.md tells the reader to export and where to work, offline.
        env.update(OPENAI_API_KEY="dummy", BASEAGENT_MODEL="openai/demo",
                   BASEAGENT_API_BASE=f"http://127.0.0.1:{port}/v1")
    if block.lang in ("bash", "sh"):
        script = "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + code
        argv = ["bash", "-c", script]
    elif block.lang == "python":
        path = tmp_path / "example.py"
        path.write_text(code, encoding="utf-8")
        argv = [sys.executable, str(path)]
    else:
        pytest.fail(f"{block.where}: cannot run a {block.lang!r} block")
    try:
        with server:
            proc = subprocess.run(argv, cwd=scratch if block.server else REPO, env=env, capture_output=True, text=True,
                                  timeout=300, stdin=subprocess.DEVNULL)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert proc.returncode == 0, f"{block.where} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    expected = OUTPUTS.get(block.name)
    if expected is not None:
        back = {str(scratch): "/tmp/demo", port: "8765"}
        assert normalise(proc.stdout, back) == normalise(expected.code, {}), block.where
