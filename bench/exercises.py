"""Public exercises with a real local model: baseagent beside the model alone and a peer.

    python bench/exercises.py run                       # every row, the dev set, local model
    python bench/exercises.py run --rows agent --only hamming,anagram
    python bench/exercises.py run --model openai/x --api-base http://host:port/v1
    python bench/exercises.py convert --out DIR          # task lines for `baseagent batch`
    python bench/exercises.py report                     # rewrite EXERCISES_RESULTS.md
    python bench/exercises.py peer                       # install the peer (mini-swe-agent)
    python bench/exercises.py record --work DIR          # keep the rows an interrupted run finished
    python bench/exercises.py record --work A --work B   # rows run apart (same commit, model,
                                                         # server, exercises) as one run
    python bench/exercises.py run --rows mini-tool --work DIR --resume   # go on where a stopped
                                                         # row left off (the agent row: at
                                                         # the same commit and flags)

The dev set is 20 Exercism Python practice exercises vendored in bench/exercises/ (MIT,
see its README). Each task is Aider's benchmark task: implement the stub so that the
exercise's own tests pass. The workspace holds the stub, the test file and INSTRUCTIONS.md;
the check copies the pristine test file back over the workspace's and runs pytest, so
editing the tests never passes.

Rows, all against the same server, model and temperature (0):
- `agent`: `baseagent batch --oss` over the task lines (one worker: one model server slot):
  the local-model route README gives users (compact prompt profile); flags after `--`
  are added (e.g. `-- --prompt-profile full`);
- `alone`: the model with no agent, Aider's way: the instructions and the stub in one
  message, the whole file asked for in one fenced block, written and tested; on failure the
  last 50 lines of test output go back once. Two answers at most. The floor to clear;
- `mini-tool`, `mini-text`: mini-swe-agent 2.4.6 (bench/.peer-venv) with its `mini.yaml`
  (tool calls) and `mini_textbased.yaml` (`litellm_textbased`), the same step limit.

Without --api-base the local model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, fetched by
bench/real_model.py) is served by llama.cpp's llama-server (bench/local_server.py), started
and stopped here. Each run is kept in bench/exercises_runs.jsonl (results as data) and
EXERCISES_RESULTS.md is rendered from that file; transcripts stay in the --work directory.
"""
from __future__ import annotations

import argparse
import contextlib
import ast
import datetime as _dt
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
EXERCISES = BENCH / "exercises"
RUNS = BENCH / "exercises_runs.jsonl"
RESULTS = BENCH / "EXERCISES_RESULTS.md"
sys.path.insert(0, str(BENCH))

ROWS = ("agent", "alone", "aider", "codex", "mini-tool", "mini-text")
DEFAULT_MODEL_FILE = "qwen2.5-coder-1.5b"
CONTEXT = 32768
# Model calls per task for the agents (baseagent's --max-iterations, mini's step_limit).
STEP_LIMIT = 30
TASK_TIMEOUT_S = 900
# pytest on the exercise: a solution stuck in a loop must not hold the run.
CHECK_TIMEOUT_S = 120
# Output cap of the model-alone answers (the server would otherwise generate until the
# context is full when the model falls into a repetition loop).
ALONE_MAX_TOKENS = 4096
TEST_OUTPUT_LINES = 50

# Aider's benchmark wording (benchmark/prompts.py), so the task is the one it measures.
ADDENDUM = """
####

Use the above instructions to modify the supplied files: {files}
Don't change the names of existing functions or classes, as they may be referenced from other code like unit tests, etc.
Only use standard python libraries, don't suggest installing any packages.
"""
AGENT_TAIL = """
The tests are in {tests}; they are correct, don't change them. Run them with: {command}
"""
TEST_FAILURES = """
####

See the testing errors above.
The tests are correct, don't try and change them.
Fix the code in {files} to resolve the errors.
"""
ALONE_SYSTEM = """\
Act as an expert software developer. You are given files and a request to change them.
Reply with the complete new content of each file you change, in this form:

path/to/file.py
```python
the entire content of the file
```

Always send the whole file, never a part of it or a diff."""


# -- the exercises -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Exercise:
    name: str
    root: Path
    solution: tuple[str, ...]
    tests: tuple[str, ...]

    @property
    def instructions(self) -> str:
        docs = self.root / ".docs"
        parts = [(docs / n).read_text(encoding="utf-8")
                 for n in ("instructions.md", "instructions.append.md") if (docs / n).is_file()]
        return "\n".join(p.strip("\n") + "\n" for p in parts)

    def test_command(self) -> str:
        return f"python -m pytest -q {' '.join(self.tests)}"


def load_exercises(root: Path, only: list[str] | None = None) -> list[Exercise]:
    """Exercism practice exercises under `root` (each with .meta/config.json)."""
    found = []
    for meta in sorted(root.glob("*/.meta/config.json")):
        files = json.loads(meta.read_text(encoding="utf-8"))["files"]
        found.append(Exercise(meta.parent.parent.name, meta.parent.parent,
                              tuple(files["solution"]), tuple(files["test"])))
    if only:
        missing = sorted(set(only) - {e.name for e in found})
        if missing:
            raise SystemExit(f"no such exercise under {root}: {', '.join(missing)}")
        found = [e for e in found if e.name in only]
    if not found:
        raise SystemExit(f"no exercises under {root}")
    return found


def task_instruction(ex: Exercise) -> str:
    """The exercise text, Aider's addendum naming the files to change, and the test
    command."""
    return (ex.instructions + ADDENDUM.format(files=" ".join(ex.solution))
            + AGENT_TAIL.format(tests=" ".join(ex.tests), command=ex.test_command()))


def make_workspace(ex: Exercise, dest: Path) -> Path:
    """The stub, the test file and INSTRUCTIONS.md (the exercise text)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ex.solution + ex.tests:
        shutil.copyfile(ex.root / name, dest / name)
    (dest / "INSTRUCTIONS.md").write_text(ex.instructions, encoding="utf-8")
    return dest


def check_command(ex: Exercise) -> str:
    """Put the pristine tests back, then run them (pytest's exit code is the verdict)."""
    restore = " && ".join(f"cp -f {shlex.quote(str(ex.root / t))} {shlex.quote(t)}"
                          for t in ex.tests)
    return (f"{restore} && timeout {CHECK_TIMEOUT_S} {shlex.quote(sys.executable)} -m pytest "
            f"-q -p no:cacheprovider {' '.join(shlex.quote(t) for t in ex.tests)}")


def run_check(ex: Exercise, workspace: Path) -> tuple[bool, str]:
    proc = subprocess.run(["bash", "-c", check_command(ex)], cwd=workspace,
                          capture_output=True, text=True)
    return proc.returncode == 0, (proc.stdout + proc.stderr)


def pytest_summary(output: str) -> str:
    """pytest's last line ("3 failed, 5 passed in 0.1s"), without the timing."""
    for line in reversed(output.strip().splitlines()):
        if re.search(r"\b(passed|failed|error|errors|no tests ran)\b", line):
            return re.sub(r"\s+in [\d.]+s.*$", "", line.strip("= ").strip())
    return (output.strip().splitlines() or ["no output"])[-1][:80]


def convert(exercises: list[Exercise], out: Path) -> Path:
    """Workspaces and a `baseagent batch` task file under `out`; returns the task file."""
    lines = []
    for ex in exercises:
        ws = make_workspace(ex, out / "workspaces" / ex.name)
        lines.append(json.dumps({"id": ex.name, "instruction": task_instruction(ex),
                                 "workspace": str(ws), "check": check_command(ex),
                                 "metadata": {"solution": list(ex.solution),
                                              "tests": list(ex.tests)}}))
    tasks = out / "tasks.jsonl"
    tasks.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tasks


# -- what each row records per task ------------------------------------------------------------

@dataclass
class TaskResult:
    name: str
    solved: bool
    status: str  # passed / failed / error / timeout
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    wall_s: float = 0.0
    why: str = ""  # why it failed, one phrase ("" when solved)
    tests: str = ""  # pytest's summary line of the check
    cached_tokens: int | None = None  # input tokens the server's prompt cache served


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BASEAGENT_", "MSWEA_", "OPENAI_", "LITELLM_"))}
    env.update(HOME=str(home), OPENAI_API_KEY="local-no-key",
               LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONDONTWRITEBYTECODE="1")
    return env


# -- row: baseagent ----------------------------------------------------------------------------

# Where the agent row's batch runs, the same path in every run: the prompt shows the task's
# workspace path (<cwd>), and a 1.5B model's reply at temperature 0 changes with a word of
# its prompt, so a run directory named r6 or r7 would move results between otherwise equal
# runs. The batch is moved into the run's work directory when it ends.
AGENT_BATCH = Path(tempfile.gettempdir()) / "baseagent-exercises" / "batch"


@contextlib.contextmanager
def fixed_batch(out: Path, what: str, batch: Path | None = None,
                resume: bool = False) -> Iterator[Path]:
    """`batch` (default AGENT_BATCH, or another set's fixed path), held by this run alone
    (one such run at a time on a machine) and empty, or with `resume` holding the batch an
    earlier invocation left in `out`/batch (`baseagent batch` then goes on with the tasks it
    had not finished); moved to `out`/batch when the block ends, however it ends (a batch
    left there would be resumed by the next run, its results taken as new). An invocation
    that was killed never moved its batch: the fixed path's `owner` file names the `out` it
    belongs to, and only `resume` into that same `out` takes it."""
    batch = AGENT_BATCH if batch is None else batch
    batch.parent.mkdir(parents=True, exist_ok=True)
    owner = batch.parent / "owner"
    with (batch.parent / "lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise SystemExit(f"another {what} run is using {batch}") from None
        left_by_out = batch.is_dir() and owner.is_file() \
            and owner.read_text(encoding="utf-8") == str(out.resolve())
        if resume and (out / "batch").is_dir():
            shutil.rmtree(batch, ignore_errors=True)
            shutil.move(str(out / "batch"), str(batch))
        elif not (resume and left_by_out):
            shutil.rmtree(batch, ignore_errors=True)
        owner.write_text(str(out.resolve()), encoding="utf-8")
        try:
            yield batch
        finally:
            if batch.exists():
                shutil.rmtree(out / "batch", ignore_errors=True)
                shutil.move(str(batch), str(out / "batch"))
            owner.unlink(missing_ok=True)


def run_agent(exercises: list[Exercise], model: str, api_base: str, work: Path,
              extra: list[str], log: Callable[[str], None],
              resume: bool = False) -> list[TaskResult]:
    """The agent row, one batch; `resume`: the batch an earlier invocation in `work` left
    goes on (agent_stamp() said it was measured the same way)."""
    out = work / "agent"
    tasks = convert(exercises, out / "input")
    home = out / "home"
    home.mkdir(parents=True, exist_ok=True)
    with fixed_batch(out, "exercises", resume=resume):
        return _run_batch(exercises, model, api_base, tasks, home, out, extra, log)


def agent_stamp(run: Run) -> dict[str, Any]:
    """What must match for an agent row stopped part way to go on with --resume: the
    commit (the row runs baseagent), its flags, the model, server and set."""
    return {"commit": run.commit, "extra": run.extra, "model": run.model,
            "server": run.server, "exercises": run.exercises}


@contextlib.contextmanager
def agent_row_journal(work: Path, run: Run, proxy: Any, resume: bool) -> Iterator[str]:
    """The agent row's stamp written and the proxy's calls journaled in `work`/agent while
    the block runs; with `resume`, the calls an earlier invocation journaled counted first
    (and those of the task it cut off, which runs again). Yields what to say of them in
    the run's note ("" when there were none)."""
    out = work / "agent"
    out.mkdir(parents=True, exist_ok=True)
    journal = out / "served.jsonl"
    replayed = proxy.replay(journal) if resume else 0
    if not resume:
        journal.write_text("", encoding="utf-8")
    (out / "stamp.json").write_text(json.dumps(agent_stamp(run)), encoding="utf-8")
    proxy.journal = journal
    try:
        yield (f"the agent row's batch from an earlier invocation ({replayed} model calls "
               f"before it, the cut-off task's included)" if replayed else "")
    finally:
        proxy.journal = None


def resumed_row(work: Path, row: str, run: Run, stamp: dict[str, str]) -> dict[str, dict[str, Any]]:
    """What a row goes on from with --resume in `work` (both sets): a peer row's tasks an
    earlier invocation finished (kept_tasks), nothing for the agent row, whose batch goes on
    (after check_agent_stamp). Refuses (ValueError) a row measured another way."""
    if row == "agent":
        check_agent_stamp(work / "agent" / "stamp.json", agent_stamp(run))
        return {}
    return kept_tasks(_task_log(work, row), stamp)


def check_agent_stamp(path: Path, stamp: dict[str, Any]) -> None:
    """Refuses (ValueError) to resume an agent row measured another way."""
    if not path.is_file():
        return
    earlier = json.loads(path.read_text(encoding="utf-8"))
    for key, want in stamp.items():
        if earlier.get(key) != want:
            raise ValueError(f"{path}: the agent row was measured with another {key} "
                             f"({earlier.get(key)!r}, now {want!r}); run without --resume")


def _run_batch(exercises: list[Exercise], model: str, api_base: str, tasks: Path, home: Path,
               out: Path, extra: list[str], log: Callable[[str], None]) -> list[TaskResult]:
    """The batch at AGENT_BATCH, and each task's result read from it (before it moves)."""
    command = [sys.executable, str(REPO / "agent.py"), "batch", str(tasks), "--out",
               str(AGENT_BATCH), "--workers", "1", "--oss", "--model", model,
               "--api-base", api_base,
               "--temperature", "0", "--context-window", str(CONTEXT),
               "--max-iterations", str(STEP_LIMIT), "--task-timeout", str(TASK_TIMEOUT_S),
               "--json", *extra]
    log("agent: " + shlex.join(command))
    proc = subprocess.run(command, env=_environment(home), capture_output=True, text=True)
    (out / "batch.stderr").write_text(proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"baseagent batch exited {proc.returncode}: {proc.stderr[-2000:]}")
    results = {}
    for line in (AGENT_BATCH / "results.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            results[str(row["id"])] = row
    return [_agent_result(ex, results.get(ex.name)) for ex in exercises]


def _agent_result(ex: Exercise, row: dict[str, Any] | None) -> TaskResult:
    if row is None:
        return TaskResult(ex.name, False, "error", why="no result")
    usage = row.get("usage") or {}
    check = row.get("check") or {}
    output = check.get("output") or ""
    calls, edited_tests, edited_solution = _agent_transcript(row, ex)
    solved = row["status"] == "passed"
    result = TaskResult(ex.name, solved, row["status"], calls,
                        int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0),
                        round(float(row.get("duration_s") or 0), 1),
                        tests=pytest_summary(output) if output else "")
    if not solved:
        result.why = _agent_why(row, edited_tests, edited_solution, result.tests)
    return result


def _agent_transcript(row: dict[str, Any], ex: Exercise) -> tuple[int, bool, bool]:
    """(model calls, tests edited, solution edited) from the task's session record, its
    events and its workspace copy (where the check has put the pristine tests back)."""
    return (session_calls(Path(row.get("session") or "")),
            *_edits(row, ex))


def session_calls(session: Path) -> int:
    """The model calls a task's session record counts: its usage records' `calls` (every
    call, the probe's too), else its assistant messages (records from before usage carried
    them; the probe's calls never reach the history)."""
    records = _json_lines(session)
    usage = [r for r in records if r.get("kind") == "usage" and "calls" in r]
    if usage:
        return int(usage[-1]["calls"])
    return sum(1 for r in records if r.get("kind") == "message"
               and (r.get("message") or {}).get("role") == "assistant")


def _edits(row: dict[str, Any], ex: Exercise) -> tuple[bool, bool]:
    """(tests edited, solution edited)."""
    edited_tests = False
    for event in _json_lines(Path(row.get("task_dir") or "") / "events.jsonl"):
        item = event.get("item") or {}
        if event.get("type") == "item.completed" and item.get("type") == "file_change" \
                and item.get("status") == "completed":
            edited_tests |= any(Path(c.get("path", "")).name in ex.tests
                                for c in item.get("changes") or [])
    workspace = Path(row.get("workspace") or "")
    edited_solution = any((workspace / s).is_file() and
                          (workspace / s).read_bytes() != (ex.root / s).read_bytes()
                          for s in ex.solution)
    return edited_tests, edited_solution


def _json_lines(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def _agent_why(row: dict[str, Any], edited_tests: bool, edited_solution: bool,
               tests: str) -> str:
    error = (row.get("error") or "").strip()
    agent_status = row.get("agent_status")
    if row["status"] == "error":
        return _short(error or "error")
    if not edited_solution:
        lead = "solution never edited"
    else:
        lead = f"tests fail ({tests})" if tests else "tests fail"
    if agent_status == "completed":
        return f"{lead}; answered as done" + ("; edited the tests" if edited_tests else "")
    return f"{lead}; {_short(error) or agent_status}"


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


# -- row: the model alone (Aider's whole-file method) ------------------------------------------

def _chat(api_base: str, model: str, messages: list[dict[str, str]], timeout: float
          ) -> tuple[str, int, int]:
    """One non-streamed chat completion: (text, prompt tokens, completion tokens)."""
    body = json.dumps({"model": model.split("/", 1)[-1], "messages": messages,
                       "temperature": 0, "max_tokens": ALONE_MAX_TOKENS}).encode()
    request = urllib.request.Request(f"{api_base.rstrip('/')}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json",
                                              "Authorization": "Bearer local-no-key"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        data = json.loads(response.read())
    usage = data.get("usage") or {}
    text = data["choices"][0]["message"].get("content") or ""
    return text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


_FENCE = re.compile(r"^(?P<before>.*?)```[^\n`]*\n(?P<code>.*?)^\s*```", re.DOTALL | re.MULTILINE)


def whole_file(answer: str, filename: str) -> str | None:
    """The file's new content from a whole-file answer: the fenced block under a line that
    names the file, else the longest fenced block; None without one."""
    blocks = []
    rest = answer
    while (match := _FENCE.search(rest)) is not None:
        before = match.group("before").strip().splitlines()
        named = bool(before) and Path(before[-1].strip("`*: ")).name == filename
        blocks.append((named, match.group("code")))
        rest = rest[match.end():]
    if not blocks:
        return None
    named = [code for is_named, code in blocks if is_named]
    return (named[0] if named else max((c for _, c in blocks), key=len))


def run_alone(exercises: list[Exercise], model: str, api_base: str, work: Path,
              log: Callable[[str], None]) -> list[TaskResult]:
    results = []
    for ex in exercises:
        ws = make_workspace(ex, work / "alone" / ex.name)
        started = time.monotonic()
        result = TaskResult(ex.name, False, "failed")
        files = " ".join(ex.solution)
        listing = "".join(f"{n}\n```python\n{(ws / n).read_text()}```\n\n" for n in ex.solution)
        messages = [{"role": "system", "content": ALONE_SYSTEM},
                    {"role": "user", "content": ex.instructions + ADDENDUM.format(files=files)
                     + "\n" + listing}]
        transcript: list[dict[str, str]] = []
        output = ""
        for attempt in (1, 2):
            try:
                text, prompt, completion = _chat(api_base, model, messages, TASK_TIMEOUT_S)
            except OSError as exc:
                result.status, result.why = "error", _short(f"request failed: {exc}")
                break
            result.model_calls += 1
            result.input_tokens += prompt
            result.output_tokens += completion
            messages.append({"role": "assistant", "content": text})
            wrote = False
            for name in ex.solution:
                content = whole_file(text, name)
                if content is not None:
                    (ws / name).write_text(content if content.endswith("\n") else content + "\n")
                    wrote = True
            passed, output = run_check(ex, ws)
            result.tests = pytest_summary(output)
            if passed:
                result.solved, result.status, result.why = True, "passed", ""
                break
            result.why = (f"tests fail ({result.tests})" if wrote
                          else "no fenced file in the answer") + f" after answer {attempt}"
            tail = "\n".join(output.strip().splitlines()[-TEST_OUTPUT_LINES:])
            messages.append({"role": "user", "content": tail + "\n" + TEST_FAILURES.format(
                files=files)})
        result.wall_s = round(time.monotonic() - started, 1)
        transcript = messages
        (ws.parent / f"{ex.name}.transcript.json").write_text(json.dumps(transcript, indent=1))
        log(f"alone: {ex.name}: {result.status} ({result.tests}) {result.wall_s}s")
        results.append(result)
    return results


# -- rows: mini-swe-agent ----------------------------------------------------------------------

def run_mini(mode: str, exercises: list[Exercise], model: str, api_base: str, work: Path,
             log: Callable[[str], None]) -> list[TaskResult]:
    from agents import PEER_VENV, ensure_peer

    ensure_peer(log)
    mini = PEER_VENV / "bin" / "mini"
    config = ["-c", "mini.yaml"] if mode == "mini-tool" else \
        ["-c", "mini_textbased.yaml", "--model-class", "litellm_textbased"]
    results = []
    for ex in exercises:
        ws = make_workspace(ex, work / mode / ex.name / "ws")
        home = work / mode / ex.name / "home"
        home.mkdir(parents=True, exist_ok=True)
        traj = work / mode / ex.name / "traj.json"
        command = [str(mini), "-y", "--exit-immediately", "-m", model, "-t",
                   task_instruction(ex), *config,
                   "-c", f"model.model_kwargs.api_base={api_base}",
                   "-c", "model.model_kwargs.temperature=0",
                   "-c", f"agent.step_limit={STEP_LIMIT}", "-c", "agent.cost_limit=0",
                   "-o", str(traj)]
        env = {**_environment(home), "MSWEA_CONFIGURED": "true",
               "MSWEA_COST_TRACKING": "ignore_errors"}
        started = time.monotonic()
        status, why = "failed", ""
        try:
            proc = subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True,
                                  timeout=TASK_TIMEOUT_S, stdin=subprocess.DEVNULL)
            (ws.parent / "mini.log").write_text(proc.stdout[-200_000:] + proc.stderr[-50_000:])
        except subprocess.TimeoutExpired:
            status, why = "timeout", f"timed out after {TASK_TIMEOUT_S}s"
        wall = round(time.monotonic() - started, 1)
        calls, exit_status, tokens = _mini_trajectory(traj)
        passed, output = run_check(ex, ws)
        result = TaskResult(ex.name, passed, "passed" if passed else status, calls,
                            tokens[0], tokens[1], wall, tests=pytest_summary(output))
        if not passed:
            result.why = why or f"tests fail ({result.tests}); exit: {exit_status or '?'}"
        log(f"{mode}: {ex.name}: {result.status} ({result.tests}) {wall}s")
        results.append(result)
    return results


def _mini_trajectory(path: Path) -> tuple[int, str, tuple[int, int]]:
    """(model calls, exit status, (prompt, completion) tokens) from mini's trajectory."""
    if not path.is_file():
        return 0, "no trajectory", (0, 0)
    try:
        data = json.loads(path.read_text())
    except ValueError:
        return 0, "unreadable trajectory", (0, 0)
    messages = data.get("messages") or []
    calls = prompt = completion = 0
    for message in messages:
        if message.get("role") != "assistant":
            continue
        calls += 1
        usage = ((message.get("extra") or {}).get("response") or {}).get("usage") or {}
        prompt += int(usage.get("prompt_tokens") or 0)
        completion += int(usage.get("completion_tokens") or 0)
    info = data.get("info") or {}
    # A reply mini rejects for its format never reaches the messages (only the error sent
    # back does); its own count of API calls has it. Those replies' tokens are not kept.
    api_calls = (info.get("model_stats") or {}).get("api_calls")
    calls = max(calls, api_calls if isinstance(api_calls, int) else 0)
    return calls, str(info.get("exit_status") or ""), (prompt, completion)


# -- row: Aider --------------------------------------------------------------------------------

# What the aider row passes on every task, beside the model and server (the method):
# the whole-file edit format, no repository map, no git, no network (update checks,
# analytics, URL fetching off), the tests read-only in the chat, and `--auto-test` with the
# exercise's own test command (its reflections on failing tests are Aider's own loop).
AIDER_FLAGS = ("--edit-format", "whole", "--map-tokens", "0", "--no-git", "--yes-always",
               "--no-check-update", "--no-analytics", "--no-detect-urls",
               "--no-show-model-warnings", "--no-pretty", "--no-stream", "--no-fancy-input",
               "--no-restore-chat-history", "--auto-test")
_AIDER_TOKENS = re.compile(r"Tokens: ([\d.]+)(k?) sent(?:, ([\d.]+)(k?) cache write)?"
                           r"(?:, ([\d.]+)(k?) cache hit)?, ([\d.]+)(k?) received")


def _aider_count(number: str, kilo: str) -> int:
    return round(float(number) * (1000 if kilo else 1))


def aider_tokens(output: str) -> tuple[int, int]:
    """(sent, received) tokens from Aider's `Tokens: 2.3k sent, 512 received.` lines (its
    own rounding: to 0.1k above a thousand)."""
    sent = received = 0
    for match in _AIDER_TOKENS.finditer(output):
        sent += _aider_count(match.group(1), match.group(2))
        received += _aider_count(match.group(7), match.group(8))
    return sent, received


def aider_calls(history: Path) -> int:
    """Model calls in Aider's --llm-history-file: one `LLM RESPONSE <time>` header each."""
    if not history.is_file():
        return 0
    return sum(1 for line in history.read_text(errors="replace").splitlines()
               if line.startswith("LLM RESPONSE "))


def run_aider(exercises: list[Exercise], model: str, api_base: str, work: Path,
              log: Callable[[str], None]) -> list[TaskResult]:
    """Aider 0.86.2 (bench/.aider-venv) on each exercise, once, with `--message`: it edits
    the stub, runs the tests itself and reflects on their failures (at most three times,
    Aider's limit), then exits; the exercise's check decides."""
    from agents import AIDER_VENV, ensure_aider

    ensure_aider(log)
    results = []
    for ex in exercises:
        ws = make_workspace(ex, work / "aider" / ex.name / "ws")
        home = work / "aider" / ex.name / "home"
        home.mkdir(parents=True, exist_ok=True)
        meta = work / "aider" / ex.name / "model-metadata.json"
        meta.write_text(json.dumps({model: {"max_input_tokens": CONTEXT,
                                            "max_output_tokens": ALONE_MAX_TOKENS,
                                            "input_cost_per_token": 0,
                                            "output_cost_per_token": 0,
                                            "litellm_provider": "openai", "mode": "chat"}}))
        history = work / "aider" / ex.name / "llm-history.txt"
        test_cmd = (f"timeout {CHECK_TIMEOUT_S} {shlex.quote(sys.executable)} -m pytest -q "
                    f"-p no:cacheprovider {' '.join(shlex.quote(t) for t in ex.tests)}")
        command = [str(AIDER_VENV / "bin" / "aider"), "--model", model,
                   "--openai-api-base", api_base, "--openai-api-key", "local-no-key",
                   "--model-metadata-file", str(meta), *AIDER_FLAGS,
                   "--test-cmd", test_cmd, "--llm-history-file", str(history),
                   "--chat-history-file", str(home / "chat.md"),
                   "--input-history-file", str(home / "input.txt"),
                   *[a for t in ex.tests for a in ("--read", t)],
                   "--message", ex.instructions + ADDENDUM.format(files=" ".join(ex.solution)),
                   *ex.solution]
        env = {**_environment(home), "AIDER_CHECK_UPDATE": "false", "AIDER_ANALYTICS": "false"}
        started = time.monotonic()
        status, why, output = "failed", "", ""
        try:
            proc = subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True,
                                  timeout=TASK_TIMEOUT_S, stdin=subprocess.DEVNULL)
            output = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            status, why = "timeout", f"timed out after {TASK_TIMEOUT_S}s"
            output = (exc.stdout or b"").decode(errors="replace") if isinstance(
                exc.stdout, bytes) else (exc.stdout or "")
        (ws.parent / "aider.log").write_text(output[-200_000:])
        wall = round(time.monotonic() - started, 1)
        calls = aider_calls(history)
        sent, received = aider_tokens(output)
        passed, check = run_check(ex, ws)
        result = TaskResult(ex.name, passed, "passed" if passed else status, calls, sent,
                            received, wall, tests=pytest_summary(check))
        if not passed:
            result.why = why or f"tests fail ({result.tests}) after {calls} answer(s)"
        log(f"aider: {ex.name}: {result.status} ({result.tests}) {wall}s")
        results.append(result)
    return results


# -- row: Codex CLI ----------------------------------------------------------------------------

# Codex CLI reaches a model only through the Responses API; llama-server serves it. The
# model provider is the run's server; no sandbox (as the agent row's danger-full-access),
# no plugins, no analytics. Codex sends no temperature: the server's default decides (the
# exercises' llama-server is started with --temp 0 for that reason).
CODEX_ROW_CONFIG = """model = "{model}"
model_provider = "local"

[model_providers.local]
name = "local"
base_url = "{base_url}"
wire_api = "responses"
env_key = "LOCAL_MODEL_KEY"
# A CPU server reads Codex's ~6,600-token first prompt for minutes before its first byte:
# Codex's default (5 minutes of silence, then resend) would start it over and over.
stream_idle_timeout_ms = {idle_ms}

[features]
plugins = false

[analytics]
enabled = false
"""


def codex_usage(jsonl: str) -> tuple[int, int, int, str]:
    """(input tokens, cached input tokens, output tokens, how it ended) from `codex exec
    --json`: its last turn.completed usage (cumulative), or turn.failed's message."""
    usage: dict[str, Any] = {}
    ended = "no turn.completed"
    for line in jsonl.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("type") == "turn.completed":
            usage, ended = event.get("usage") or {}, "completed"
        elif event.get("type") == "turn.failed":
            ended = _short("turn.failed: " + str((event.get("error") or {}).get("message")))
    return (int(usage.get("input_tokens") or 0), int(usage.get("cached_input_tokens") or 0),
            int(usage.get("output_tokens") or 0), ended)


def run_codex(exercises: list[Exercise], model: str, api_base: str, work: Path,
              log: Callable[[str], None]) -> list[TaskResult]:
    """Codex CLI (bench/codex_bench.py's pinned release, from npm) on each exercise with the
    agent row's instruction, `codex exec --json`, then the exercise's check."""
    from codex_bench import CODEX_NPM, install_codex

    install_codex()
    results = []
    for ex in exercises:
        ws = make_workspace(ex, work / "codex" / ex.name / "ws")
        home = work / "codex" / ex.name / "home"
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(CODEX_ROW_CONFIG.format(
            model=model.split("/", 1)[-1], base_url=api_base.rstrip("/"),
            idle_ms=TASK_TIMEOUT_S * 1000))
        command = [str(CODEX_NPM), "exec", "--json", "--skip-git-repo-check",
                   "--dangerously-bypass-approvals-and-sandbox", "-C", str(ws),
                   task_instruction(ex)]
        env = {**_environment(home), "CODEX_HOME": str(codex_home),
               "LOCAL_MODEL_KEY": "local-no-key"}
        env = {k: v for k, v in env.items() if not k.startswith("CODEX_") or k == "CODEX_HOME"}
        started = time.monotonic()
        status, why, out = "failed", "", ""
        try:
            proc = subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True,
                                  timeout=TASK_TIMEOUT_S, stdin=subprocess.DEVNULL)
            out = proc.stdout
            (ws.parent / "codex.log").write_text(proc.stdout[-200_000:] + proc.stderr[-50_000:])
        except subprocess.TimeoutExpired as exc:
            status, why = "timeout", f"timed out after {TASK_TIMEOUT_S}s"
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) \
                else (exc.stdout or "")
        wall = round(time.monotonic() - started, 1)
        prompt, cached, completion, ended = codex_usage(out)
        passed, check = run_check(ex, ws)
        result = TaskResult(ex.name, passed, "passed" if passed else status, 0, prompt,
                            completion, wall, tests=pytest_summary(check))
        result.cached_tokens = cached
        if not passed:
            result.why = why or f"tests fail ({result.tests}); codex: {ended}"
        log(f"codex: {ex.name}: {result.status} ({result.tests}) {wall}s")
        results.append(result)
    return results


# -- runs, kept as data, and the report ---------------------------------------------------------

@dataclass
class Run:
    started: str
    commit: str
    model: str
    server: str
    load: str
    note: str
    extra: list[str]
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    exercises: str = "dev"
    # Per row, what the server answered it, counted by bench/usage_proxy.py: calls, input,
    # cached input and output tokens (runs recorded before the proxy have none).
    served: dict[str, dict[str, int]] = field(default_factory=dict)


SAME_FOR_ONE_RUN = ("model", "server", "exercises", "extra")
# The rows that do not run baseagent: their outcome depends on this harness's own code for
# them, not on the agent's commit.
PEER_ROWS = ("alone", "aider", "codex", "mini-tool", "mini-text")
PEER_ENTRIES = ("run_alone", "run_aider", "run_codex", "run_mini")


def reached_source(source: str, entries: tuple[str, ...]) -> str:
    """The source text of `entries` in `source` (a module) and of every module-level
    function, class and constant they reach, by name, in name order."""
    tree = ast.parse(source)
    defined: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    defined[target.id] = node
    reached: set[str] = set()
    todo = list(entries)
    while todo:
        name = todo.pop()
        if name in reached or name not in defined:
            continue
        reached.add(name)
        todo += [n.id for n in ast.walk(defined[name]) if isinstance(n, ast.Name)]
    return "\n".join(ast.get_source_segment(source, defined[n]) or "" for n in sorted(reached))


def peer_harness(source: str) -> str:
    """A fingerprint of the code the peer rows run, in `source` (this file at some commit):
    the peer rows' functions (PEER_ENTRIES) and every module-level function, class and
    constant they reach, by their source text. Two commits with the same fingerprint
    measure the peers alike."""
    return hashlib.sha256(reached_source(source, PEER_ENTRIES).encode()).hexdigest()[:16]


def _harness_at(commit: str) -> str:
    proc = subprocess.run(["git", "-C", str(REPO), "show", f"{commit}:bench/exercises.py"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise ValueError(f"cannot read bench/exercises.py at {commit}: {proc.stderr.strip()}")
    return peer_harness(proc.stdout)


def combine_runs(runs: list[Run], harness_at: Callable[[str], str] = _harness_at,
                 note: str | None = None) -> Run:
    """Rows measured in separate invocations (a whole run takes longer than a working
    session: up to 8 hours for the four rows on 2 cores) as one run, when nothing that decides
    the outcome differs: the model, server, exercise set and agent flags, and the commit,
    except that peer rows (the model alone, mini-swe-agent) may come from another commit
    whose code for them is the same (peer_harness): they never run baseagent. The run's
    commit is the agent row's. A row measured twice is refused rather than chosen. `note`
    replaces the runs' own notes, never the account of where the rows came from."""
    if note is not None:
        runs = [replace(r, note=note) for r in runs]
    first = next((r for r in runs if "agent" in r.rows), runs[0])
    for other in runs:
        for key in SAME_FOR_ONE_RUN:
            if getattr(other, key) != getattr(first, key):
                raise ValueError(f"cannot record as one run: {key} differs "
                                 f"({getattr(first, key)!r} vs {getattr(other, key)!r})")
    peers_from = []
    for other in runs:
        if other.commit == first.commit:
            continue
        if not set(other.rows) <= set(PEER_ROWS):
            raise ValueError(f"cannot record as one run: commit differs ({first.commit!r} vs "
                             f"{other.commit!r}) for the {', '.join(sorted(other.rows))} row")
        if harness_at(other.commit) != harness_at(first.commit):
            raise ValueError(f"cannot record as one run: commit differs ({first.commit!r} vs "
                             f"{other.commit!r}) and so does the peer rows' code")
        peers_from.append(f"{', '.join(sorted(other.rows))} at {other.commit}")
    rows: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        for row, results in run.rows.items():
            if row in rows:
                raise ValueError(f"cannot record as one run: the {row} row is in two of them")
            rows[row] = results
    if len(runs) == 1:
        return first
    notes = [r.note for r in runs if r.note]
    peers = (f"; {'; '.join(peers_from)}, the same code for those rows" if peers_from else "")
    return Run(started=" + ".join(r.started for r in runs), commit=first.commit,
               model=first.model, server=first.server,
               load=" + ".join(r.load for r in runs),
               note="; ".join(dict.fromkeys(notes))
               + f" (rows run in {len(runs)} invocations{peers})",
               extra=first.extra, rows=rows, exercises=first.exercises,
               served={row: counts for run in runs for row, counts in run.served.items()})


def _commit() -> str:
    proc = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                          capture_output=True, text=True)
    return proc.stdout.strip() or "unknown"


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def append_run(run: Run, path: Path = RUNS) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(asdict(run)) + "\n")


def load_runs(path: Path = RUNS) -> list[Run]:
    if not path.is_file():
        return []
    return [Run(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def _solved(rows: list[dict[str, Any]]) -> str:
    return f"{sum(1 for r in rows if r['solved'])}/{len(rows)}"


def render(runs: list[Run]) -> str:
    """EXERCISES_RESULTS.md: the latest run with every row in detail, then every run."""
    lines = ["# Exercises with a real local model", "",
             "Rendered by `python bench/exercises.py report` from `bench/exercises_runs.jsonl` "
             "(each `run` appends one line). Method: bench/exercises.py's docstring; the dev "
             "set: bench/exercises/ (Exercism, MIT).", ""]
    # The detail: the latest dev run with every row, else the latest dev run (its rows
    # only); a held-out set's latest run follows in its own section.
    dev = [r for r in runs if r.exercises == "dev"]
    full = [r for r in dev if set(ROWS) <= set(r.rows)]
    run = full[-1] if full else (dev[-1] if dev else None)
    if run is not None:
        names = [n for n in ROWS if n in run.rows]
        title = ("Latest run with every row" if full else
                 "Latest run (rows measured: " + ", ".join(names) + ")")
        lines += [f"## {title} ({run.started}, commit {run.commit})", "",
                  f"Model `{run.model}` served by {run.server}; temperature 0; load average at "
                  f"start {run.load}. baseagent runs `batch --oss` (with --api-base and "
                  f"--model) plus `{shlex.join(run.extra) or '(no other flags)'}`. "
                  f"{run.note}", "",
                  "Reproduce: `python bench/exercises.py run` (starts and stops the server; "
                  "on 2 cores `--rows agent,alone` ~1.8 hours, `mini-tool` ~20 minutes, `mini-text` "
                  "~2.5 hours, each task looping to its step limit or 900 s; a stopped peer row goes on with "
                  "`--resume`).", "",
                  "| row | solved | model calls | input tokens | output tokens | cached input "
                  "| wall s | median s, solved |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for name in names:
            rows = run.rows[name]
            lines.append(f"| {name} | {_solved(rows)} | {sum(r['model_calls'] for r in rows)} | "
                         f"{sum(r['input_tokens'] for r in rows)} | "
                         f"{sum(r['output_tokens'] for r in rows)} | "
                         f"{cached_share(run.served.get(name))} | "
                         f"{sum(r['wall_s'] for r in rows):.0f} | {median_solved(rows)} |")
        lines += ["", "Cached input: the share of the input tokens the server's prompt cache "
                  "served, as the server reported it to bench/usage_proxy.py (one slot, so "
                  "a conversation that only grows is served from the cache); `-` for runs "
                  "measured before the proxy. At most: the share a one-slot cache could have "
                  "served, each call's prefix shared with the call before (its prompt, then its "
                  "answer), for runs since the proxy counted it; with every call kept: a "
                  "cache that kept every earlier call, each call's longest prefix shared with "
                  "any of them (since b82e6d8). Median s, solved: the median "
                  "wall time of a solved task."]
        if "agent" in run.rows:
            lines += ["", "### baseagent, per task", "",
                      "| exercise | status | model calls | tokens in / out | wall s | tests | "
                      "why it failed |", "|---|---|---:|---|---:|---|---|"]
            for r in run.rows["agent"]:
                lines.append(f"| {r['name']} | {r['status']} | {r['model_calls']} | "
                             f"{r['input_tokens']} / {r['output_tokens']} | {r['wall_s']} | "
                             f"{r['tests']} | {r['why']} |")
        lines += ["", "### Every row, per task", "", *_per_task(run, names), ""]
    held_out = [r for r in runs if r.exercises != "dev"]
    if held_out:
        lines += _held_out(held_out[-1])
    lines += ["## Every run", "",
              "Rows measured in that run; `-` where a row was not run. Earlier runs measured "
              "the loop before a change, later ones after it (the note says which).", "",
              "| started (UTC) | commit | set | " + " | ".join(ROWS) + " | note |",
              "|---|---|---|" + "---:|" * len(ROWS) + "---|"]
    for run in runs:
        cells = [_solved(run.rows[n]) if n in run.rows else "-" for n in ROWS]
        lines.append(f"| {run.started} | {run.commit} | {run.exercises} | "
                     + " | ".join(cells) + f" | {run.note} |")
    return "\n".join(lines) + "\n"


def cached_share(served: dict[str, int] | None) -> str:
    """The share of a row's input tokens the server's prompt cache served, as a percent; the
    most a one-slot cache could have served (what each call shared with the one before:
    bench/usage_proxy.py `fresh_tokens`) and a cache that kept every call (`unseen_tokens`),
    for runs that counted them."""
    if not served or not served.get("input_tokens"):
        return "-"
    total = served["input_tokens"]
    share = f"{100 * served['cached_tokens'] / total:.1f}%"
    if served.get("fresh_tokens") is None:
        return share
    ceiling = f"at most {max(100 * (1 - served['fresh_tokens'] / total), 0):.1f}%"
    if served.get("unseen_tokens") is not None:
        kept = max(100 * (1 - served["unseen_tokens"] / total), 0)
        ceiling += f", {kept:.1f}% with every call kept"
    return f"{share} ({ceiling})"


def median_solved(rows: list[dict[str, Any]]) -> str:
    """The median wall time of a row's solved tasks, in seconds."""
    times = sorted(r["wall_s"] for r in rows if r["solved"])
    if not times:
        return "-"
    middle = len(times) // 2
    value = times[middle] if len(times) % 2 else (times[middle - 1] + times[middle]) / 2
    return f"{value:.0f}"


def _held_out(run: Run) -> list[str]:
    """The latest run on another set (a held-out one): each row's total and, per task, what
    each row did."""
    names = [n for n in ROWS if n in run.rows]
    lines = [f"## Held-out set: latest run ({run.started}, commit {run.commit})", "",
             f"Exercises from `{run.exercises}` (not in this repository; bench/README.md "
             f"says which and how to get them), the same model, server and flags "
             f"(`{shlex.join(run.extra) or '(no other flags)'}`). {run.note}", "",
             "| row | solved | model calls | wall s |", "|---|---:|---:|---:|"]
    for name in names:
        rows = run.rows[name]
        lines.append(f"| {name} | {_solved(rows)} | {sum(r['model_calls'] for r in rows)} | "
                     f"{sum(r['wall_s'] for r in rows):.0f} |")
    return lines + ["", *_per_task(run, names), ""]


def _per_task(run: Run, names: list[str]) -> list[str]:
    """A table of what each row did with each task (solved, or why not)."""
    lines = ["| exercise | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    by_name = {name: {r["name"]: r for r in run.rows[name]} for name in names}
    for r in run.rows[names[0]]:
        cells = [("-" if (other := by_name[name].get(r["name"])) is None else
                  "solved" if other["solved"] else f"✗ {other['why']}") for name in names]
        lines.append(f"| {r['name']} | " + " | ".join(cells) + " |")
    return lines


# -- peer rows task by task, so a stopped row can go on -----------------------------------------

def _task_log(work: Path, row: str) -> Path:
    return work / f"{row}.tasks.jsonl"


def _task_stamp(run: Run, harness: str) -> dict[str, str]:
    """What must match for a task measured in one invocation to count in another: the
    peer rows' code (not the commit: they never run baseagent), the model, server and set."""
    return {"harness": harness, "model": run.model, "server": run.server,
            "exercises": run.exercises}


def kept_tasks(path: Path, stamp: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The tasks an earlier invocation of the same row finished, by name. Refuses (ValueError)
    when one was measured under anything that decides the outcome differently."""
    kept: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return kept
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            result = entry["result"]
            name = result["name"]
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"{path}:{number}: not a task record") from None
        for key, want in stamp.items():
            if entry.get(key) != want:
                raise ValueError(f"{path}:{number}: {name} was measured with another {key} "
                                 f"({entry.get(key)!r}, now {want!r}); run without --resume")
        kept[name] = result
    return kept


def run_peer_row(row: str, exercises: list[Exercise], measure_one: Callable[[Exercise], TaskResult],
                 log_path: Path, stamp: dict[str, str], kept: dict[str, dict[str, Any]] | None,
                 log: Callable[[str], None]) -> tuple[list[dict[str, Any]], int]:
    """A peer row one exercise at a time, each result appended to `log_path` as it ends, so
    a row stopped part way (a row of mini-swe-agent can take longer than a working session)
    goes on with --resume instead of starting again: `kept` is what kept_tasks() read from
    `log_path` then (None: start again). Returns (results, how many were kept)."""
    if kept is None:
        kept = {}
        log_path.write_text("", encoding="utf-8")
    results = []
    for ex in exercises:
        if ex.name in kept:
            log(f"{row}: {ex.name}: kept from an earlier invocation")
            results.append(kept[ex.name])
            continue
        result = asdict(measure_one(ex))
        with log_path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({**stamp, "result": result}) + "\n")
        results.append(result)
    return results, sum(1 for ex in exercises if ex.name in kept)


# -- main --------------------------------------------------------------------------------------

def _local_model_path(name: str) -> Path:
    from real_model import fetch

    return fetch(name).model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="run rows on the exercises and record the results")
    run_p.add_argument("--rows", default=",".join(ROWS),
                       help=f"comma-separated, of {', '.join(ROWS)}")
    run_p.add_argument("--only", default="", help="comma-separated exercise names")
    run_p.add_argument("--exercises-dir", type=Path, default=EXERCISES,
                       help="a directory of Exercism practice exercises (default: the dev set)")
    run_p.add_argument("--model", default="openai/local",
                       help="litellm model string (default: the served local model)")
    run_p.add_argument("--api-base", default=None,
                       help="an OpenAI-compatible server; default: serve the local model here")
    run_p.add_argument("--local-model", default=DEFAULT_MODEL_FILE,
                       help="which fetched GGUF to serve (bench/real_model.py MODELS)")
    run_p.add_argument("--work", type=Path, default=None,
                       help="where workspaces and transcripts go (default: a new temp dir)")
    run_p.add_argument("--note", default="", help="a note kept with the run")
    run_p.add_argument("--no-record", action="store_true",
                       help="do not append the run to bench/exercises_runs.jsonl")
    run_p.add_argument("--resume", action="store_true",
                       help="keep the tasks an earlier run in the same --work finished "
                            "(peer rows: same peer code, model, server and set; the agent "
                            "row: its batch, at the same commit and flags) and do the rest")
    run_p.add_argument("agent_flags", nargs="*",
                       help="extra baseagent flags, after `--` (e.g. -- --prompt-profile full)")
    sub.add_parser("peer", help="install the peers: mini-swe-agent into bench/.peer-venv, "
                                "aider-chat into bench/.aider-venv")
    conv = sub.add_parser("convert", help="write workspaces and a batch task file")
    conv.add_argument("--out", type=Path, required=True)
    conv.add_argument("--exercises-dir", type=Path, default=EXERCISES)
    conv.add_argument("--only", default="")
    sub.add_parser("report", help="rewrite EXERCISES_RESULTS.md from the recorded runs")
    rec = sub.add_parser("record", help="record the rows a stopped run had finished")
    rec.add_argument("--work", type=Path, required=True, action="append",
                     help="a run's work directory; more than one: their rows as one run")
    rec.add_argument("--note", default=None)
    args = parser.parse_args(argv)

    if args.command == "report":
        RESULTS.write_text(render(load_runs()), encoding="utf-8")
        return 0
    if args.command == "peer":
        from agents import ensure_aider, ensure_peer

        print(" ".join(ensure_peer(print)), "aider-chat", ensure_aider(print))
        return 0
    if args.command == "record":
        try:
            run = combine_runs([Run(**json.loads((w / "run.json").read_text()))
                                for w in args.work], note=args.note)
        except (OSError, ValueError) as exc:
            parser.error(str(exc))
        append_run(run)
        RESULTS.write_text(render(load_runs()), encoding="utf-8")
        print(json.dumps({row: _solved(results) for row, results in run.rows.items()}))
        return 0
    only = [n for n in args.only.split(",") if n]
    exercises = load_exercises(args.exercises_dir, only)
    if args.command == "convert":
        print(convert(exercises, args.out))
        return 0

    rows = [r for r in args.rows.split(",") if r]
    unknown = sorted(set(rows) - set(ROWS))
    if unknown:
        parser.error(f"unknown rows: {', '.join(unknown)}")
    work = args.work or Path(tempfile.mkdtemp(prefix="baseagent-exercises-"))
    work.mkdir(parents=True, exist_ok=True)

    def log(message: str) -> None:
        print(f"[{_dt.datetime.now():%H:%M:%S}] {message}", file=sys.stderr, flush=True)

    log(f"work directory: {work}")
    run = Run(started=f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M}", commit=_commit(),
              model=args.model, server="", load=_load(), note=args.note,
              extra=list(args.agent_flags),
              exercises="dev" if args.exercises_dir.resolve() == EXERCISES.resolve()
              else str(args.exercises_dir))
    if only:
        run.exercises += f" ({len(exercises)} of them)"

    harness = peer_harness(Path(__file__).read_text(encoding="utf-8"))
    resumed: list[str] = []
    kept_by_row: dict[str, dict[str, dict[str, Any]]] = {}  # with --resume, read_kept_tasks()

    def measure(server_api_base: str, served_here: bool) -> None:
        from usage_proxy import UsageProxy

        # Every row reaches the server through one proxy that counts what the server
        # answered it (calls, tokens, the prompt cache's share), the same way for all; from
        # the llama-server served here, a call cut short too (`timings`).
        proxy = UsageProxy(server_api_base, timings=served_here).start()
        api_base = proxy.api_base
        try:
            measure_rows(proxy, api_base)
        finally:
            proxy.stop()

    def measure_rows(proxy: Any, api_base: str) -> None:
        for row in rows:
            started = time.monotonic()
            if row == "agent":
                proxy.tag = "agent/"
                with agent_row_journal(work, run, proxy, args.resume) as earlier:
                    if earlier:
                        resumed.append(earlier)
                        run.note = (args.note + " " if args.note else "") + \
                            f"(resumed: {'; '.join(resumed)})"
                    results = run_agent(exercises, args.model, api_base, work, run.extra, log,
                                        resume=args.resume)
                run.rows[row] = [asdict(r) for r in results]
            else:
                def one(ex: Exercise, row: str = row) -> TaskResult:
                    # A task a stopped invocation left half done starts from a fresh workspace.
                    shutil.rmtree(work / row / ex.name, ignore_errors=True)
                    proxy.tag = f"{row}/{ex.name}"
                    if row == "alone":
                        result = run_alone([ex], args.model, api_base, work, log)[0]
                    elif row == "aider":
                        result = run_aider([ex], args.model, api_base, work, log)[0]
                    elif row == "codex":
                        result = run_codex([ex], args.model, api_base, work, log)[0]
                    else:
                        result = run_mini(row, [ex], args.model, api_base, work, log)[0]
                    served = proxy.totals(f"{row}/{ex.name}")
                    result.cached_tokens = served["cached_tokens"]
                    if row == "codex":  # its JSONL has usage but no count of calls
                        result.model_calls = served["calls"]
                    return result

                run.rows[row], kept = run_peer_row(
                    row, exercises, one, _task_log(work, row), _task_stamp(run, harness),
                    kept_by_row.get(row), log)
                if kept:
                    resumed.append(f"{kept} of the {row} row's tasks from an earlier invocation")
                    run.note = (args.note + " " if args.note else "") + \
                        f"(resumed: {'; '.join(resumed)})"
            run.served[row] = proxy.totals(f"{row}/")
            (work / "run.json").write_text(json.dumps(asdict(run)))  # for `record`
            log(f"{row}: solved {_solved(run.rows[row])} in {time.monotonic() - started:.0f}s")

    def read_kept_tasks() -> None:
        # Before the server starts (seconds of loading a model) and before any row runs: a
        # row that cannot go on says so at once.
        for row in rows if args.resume else ():
            try:
                kept_by_row[row] = resumed_row(work, row, run, _task_stamp(run, harness))
            except ValueError as exc:
                parser.error(str(exc))

    if args.api_base:
        run.server = args.api_base
        read_kept_tasks()
        measure(args.api_base, served_here=False)
    else:
        from local_server import WHEEL, serve

        gguf = _local_model_path(args.local_model)
        run.server = (f"llama-server ({WHEEL[0]}, -dev none --jinja -t 2 -c {CONTEXT} -np 1 "
                      f"--temp 0) "
                      f"with {gguf.name}")
        read_kept_tasks()
        with serve(gguf, work / "server.log", CONTEXT) as api_base:
            measure(api_base, served_here=True)
    if not args.no_record:
        append_run(run)
        RESULTS.write_text(render(load_runs()), encoding="utf-8")
    print(json.dumps({row: _solved(results) for row, results in run.rows.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
