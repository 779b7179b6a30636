"""Real repositories: from an issue to a fix in a real package, beside peers on the same model.

    python bench/repos.py fetch                  # download and hash-check the sdists, make the venv
    python bench/repos.py validate [--only ID]   # each check passes on the pristine source,
                                                 # fails with the bug (prints the suites' times)
    python bench/repos.py run --api-base URL [--rows agent,aider] [-- --prompt-profile full]
    python bench/repos.py record --work DIR      # keep the rows a stopped run finished
    python bench/repos.py report                 # rewrite REPOS_RESULTS.md
    python bench/repos.py localise [--only ID]   # where localisation puts each bug (no model)

The dev set is bench/repos/tasks.json: small permissively licensed pure-Python packages
whose sdists on PyPI carry their test suites, each pinned (version, SHA-256), fetched with
`pip download --no-deps --no-binary :all: --require-hashes` into the git-ignored
bench/.cache/repos/ and checked again here before it is unpacked. Per task
(bench/repos/<id>/): bug.patch, one realistic injected bug applied to the pristine source,
and issue.md, what a user would file (the symptom and a tiny reproduction, never the file,
line or function). The workspace is the sdist unpacked with the bug applied, committed in a
fresh git repository (Aider's repository map reads git). The check puts the pristine tests
and test configuration back, then runs the package's whole suite (timeout-bounded) with the
python of bench/.cache/repos-venv, a venv holding each task's pinned test dependencies
(never the project's own environment).

Rows (the same server, model and temperature 0 for all): `agent` (baseagent batch --oss,
the compact profile; `-- --prompt-profile full` for the full tool loop), `aider` (its
default edit format for the model and its repository map, `--auto-test` with the suite),
`codex`, `mini-tool`, `mini-text`. The model alone has no row: Aider's whole-file method
needs the files to change named, and finding them is half of this task.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
TASKS_DIR = BENCH / "repos"
CACHE = BENCH / ".cache" / "repos"
VENV = BENCH / ".cache" / "repos-venv"
RUNS = BENCH / "repos_runs.jsonl"
RESULTS = BENCH / "REPOS_RESULTS.md"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO / "src"))  # this checkout's baseagent (`localise`)

import exercises as ex  # noqa: E402  (row helpers shared with the exercises)
from exercises import Run, TaskResult, pytest_summary  # noqa: E402

ROWS = ("agent", "aider", "codex", "mini-tool", "mini-text")
PEER_ROWS = ("aider", "codex", "mini-tool", "mini-text")
TEST_RUNNER = "pytest==9.2.0"
# The whole suite of one package: the slowest takes ~30 s on a loaded 2-core machine.
CHECK_TIMEOUT_S = 300
STEP_LIMIT = 30
TASK_TIMEOUT_S = 900
CONFIG_FILES = ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "pytest.ini",
                "conftest.py")
# Modules Python runs at start-up when found on the path (the suites' PYTHONPATH).
HOOK_FILES = ("sitecustomize.py", "usercustomize.py")

TAIL = """
####

The repository of the Python package `{package}` {version} is in the current directory; the
issue above is a bug in its source. Find its cause and fix it there. The package's tests are
correct; don't change them. Run the package's test suite with:
{command}
"""


@dataclass(frozen=True)
class RepoTask:
    id: str
    package: str
    version: str
    sdist: str
    sha256: str
    license: str
    pythonpath: str
    tests: tuple[str, ...]
    command: tuple[str, ...]
    deps: tuple[str, ...]
    root: Path

    @property
    def name(self) -> str:  # the peer-row helpers of bench/exercises.py key tasks by name
        return self.id

    @property
    def issue(self) -> str:
        return (self.root / "issue.md").read_text(encoding="utf-8")

    @property
    def bug(self) -> str:
        return (self.root / "bug.patch").read_text(encoding="utf-8")

    def buggy_files(self) -> list[str]:
        return [line[6:].strip() for line in self.bug.splitlines() if line.startswith("+++ b/")]

    def test_command(self, python: str | Path | None = None) -> str:
        python = str(python or VENV / "bin" / "python")
        return (f"env PYTHONPATH={shlex.quote(self.pythonpath)} PYTHONDONTWRITEBYTECODE=1 "
                f"{shlex.quote(python)} {shlex.join(self.command)}")


def load_tasks(root: Path = TASKS_DIR, only: list[str] | None = None) -> list[RepoTask]:
    entries = json.loads((root / "tasks.json").read_text(encoding="utf-8"))
    tasks = [RepoTask(e["id"], e["package"], e["version"], e["sdist"], e["sha256"],
                      e["license"], e["pythonpath"], tuple(e["tests"]), tuple(e["command"]),
                      tuple(e["deps"]), root / e["id"]) for e in entries]
    if only:
        missing = sorted(set(only) - {t.id for t in tasks})
        if missing:
            raise SystemExit(f"no such task in {root}: {', '.join(missing)}")
        tasks = [t for t in tasks if t.id in only]
    return tasks


# -- fetch: the pinned sdists, hash-checked, unpacked once ---------------------------------------

class FetchError(RuntimeError):
    pass


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def pristine(task: RepoTask, cache: Path = CACHE) -> Path:
    """The unpacked sdist (its top directory), as released."""
    return cache / "src" / task.sdist.removesuffix(".tar.gz")


def present(task: RepoTask, cache: Path = CACHE) -> bool:
    return (pristine(task, cache) / ".verified").is_file()


def fetch(tasks: list[RepoTask], cache: Path = CACHE) -> None:
    """pip downloads each missing sdist with its pinned hash (pip checks it), then it is
    checked again and unpacked with tarfile's data filter (no links out, no devices)."""
    sdists = cache / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    todo = [t for t in tasks if not present(t, cache)]
    missing = [t for t in todo if not (sdists / t.sdist).is_file()]
    if missing:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as handle:
            for t in missing:
                handle.write(f"{t.package}=={t.version} --hash=sha256:{t.sha256}\n")
            listing = handle.name
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                 "--no-binary", ":all:", "--require-hashes", "-r", listing, "-d", str(sdists)],
                capture_output=True, text=True)
        finally:
            os.unlink(listing)
        if proc.returncode != 0:
            raise FetchError(f"pip download failed: {proc.stderr.strip()[-2000:]}")
    for t in todo:
        archive = sdists / t.sdist
        if not archive.is_file():
            found = sorted(p.name for p in sdists.iterdir())
            raise FetchError(f"{t.sdist} not downloaded (have: {', '.join(found)})")
        if _sha256(archive) != t.sha256:
            archive.unlink()
            raise FetchError(f"{t.sdist}: SHA-256 differs from the pin; removed")
        target = pristine(t, cache)
        shutil.rmtree(target, ignore_errors=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive) as tar:
            tar.extractall(target.parent, filter="data")
        if not target.is_dir():
            raise FetchError(f"{t.sdist} does not unpack into {target.name}/")
        (target / ".verified").write_text(t.sha256 + "\n")


def _wanted(tasks: list[RepoTask]) -> list[str]:
    return sorted({TEST_RUNNER, *(d for t in tasks for d in t.deps)})


def venv_ready(tasks: list[RepoTask], venv: Path = VENV) -> bool:
    """Whether the venv has every pin the tasks' suites need (installs nothing)."""
    stamp = venv / ".installed"
    return (venv / "bin" / "python").exists() and stamp.is_file() and \
        set(_wanted(tasks)) <= set(stamp.read_text().split())


def ensure_venv(tasks: list[RepoTask], venv: Path = VENV,
                log: Callable[[str], None] = print) -> Path:
    """The venv the suites run in, with the tasks' pinned test dependencies; returns its
    python. Installs only what is not there yet."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    wanted = _wanted(tasks)
    stamp = venv / ".installed"
    have = set(stamp.read_text().split()) if stamp.is_file() else set()
    if not set(wanted) <= have:
        log(f"repos venv: installing {' '.join(wanted)}")
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *wanted], check=True)
        stamp.write_text("\n".join(sorted(have | set(wanted))) + "\n")
    return python


# -- a task's workspace and check -----------------------------------------------------------------

def _git(ws: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost",
                    "-c", "commit.gpgsign=false", *args], cwd=ws, check=True,
                   capture_output=True, text=True)


def make_workspace(task: RepoTask, dest: Path, cache: Path = CACHE, bug: bool = True) -> Path:
    """The released source with the bug applied (bug=False: as released), committed in a
    fresh git repository."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(pristine(task, cache), dest, ignore=shutil.ignore_patterns(".verified"))
    if bug:
        proc = subprocess.run(["patch", "-p1", "--batch", "--forward", "--no-backup-if-mismatch"],
                              input=task.bug, cwd=dest, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{task.id}: bug.patch does not apply: {proc.stdout}{proc.stderr}")
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", f"{task.package} {task.version}")
    return dest


def check_command(task: RepoTask, cache: Path = CACHE, python: str | Path | None = None,
                  timeout: int = CHECK_TIMEOUT_S) -> str:
    """Put the pristine tests and test configuration back (and remove any the release has
    not: a conftest.py or sitecustomize.py an agent added would decide the verdict), then
    run the whole suite."""
    source = pristine(task, cache)
    steps = []
    for rel in (*task.tests, *CONFIG_FILES,
                *(str(Path(task.pythonpath) / n) for n in HOOK_FILES)):
        q = shlex.quote(rel)
        if (source / rel).exists():
            steps.append(f"rm -rf {q} && mkdir -p {shlex.quote(str(Path(rel).parent))} && "
                         f"cp -a {shlex.quote(str(source / rel))} {q}")
        else:
            steps.append(f"rm -rf {q}")
    return " && ".join(steps) + f" && timeout {timeout} {task.test_command(python)}"


def run_check(task: RepoTask, ws: Path, cache: Path = CACHE, python: str | Path | None = None
              ) -> tuple[bool, str]:
    proc = subprocess.run(["bash", "-c", check_command(task, cache, python)], cwd=ws,
                          capture_output=True, text=True)
    return proc.returncode == 0, proc.stdout + proc.stderr


def unittest_summary(output: str) -> str:
    """pytest's summary line, or unittest's `Ran N tests` and its verdict."""
    lines = output.strip().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Ran ") and " test" in line:
            verdict = next((v for v in lines[i + 1:] if v.strip()), "")
            return f"{line.split(' in ')[0]}: {verdict.strip()}"
    return pytest_summary(output)


@dataclass
class Validation:
    id: str
    pristine_passes: bool
    bug_fails: bool
    pristine_s: float
    bug_s: float
    pristine_tests: str
    bug_tests: str

    @property
    def ok(self) -> bool:
        return self.pristine_passes and self.bug_fails


def validate(task: RepoTask, work: Path, cache: Path = CACHE,
             python: str | Path | None = None) -> Validation:
    """The check on the released source must pass, and with the bug it must fail."""
    results = []
    for bug in (False, True):
        ws = make_workspace(task, work / task.id / ("bug" if bug else "pristine"), cache, bug)
        started = time.monotonic()
        passed, output = run_check(task, ws, cache, python)
        results.append((passed, round(time.monotonic() - started, 1), unittest_summary(output)))
    (p_ok, p_s, p_t), (b_ok, b_s, b_t) = results
    return Validation(task.id, p_ok, not b_ok, p_s, b_s, p_t, b_t)


def task_instruction(task: RepoTask) -> str:
    return task.issue.rstrip("\n") + "\n" + TAIL.format(
        package=task.package, version=task.version, command=task.test_command())


def convert(tasks: list[RepoTask], out: Path, cache: Path = CACHE) -> Path:
    """Workspaces and a `baseagent batch` task file under `out`; returns the task file."""
    lines = []
    for t in tasks:
        ws = make_workspace(t, out / "workspaces" / t.id, cache)
        lines.append(json.dumps({"id": t.id, "instruction": task_instruction(t),
                                 "workspace": str(ws), "check": check_command(t, cache),
                                 "metadata": {"package": t.package, "version": t.version}}))
    tasks_file = out / "tasks.jsonl"
    tasks_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tasks_file


# -- why a task was lost ---------------------------------------------------------------------------

def changed_files(ws: Path) -> list[str]:
    """The files the agent changed in a workspace (against the committed buggy source)."""
    proc = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ws,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return []
    return sorted(line[3:].strip() for line in proc.stdout.splitlines() if line.strip())


def lost_reason(task: RepoTask, ws: Path, tests: str, ending: str) -> str:
    """One phrase: whether the buggy file was edited at all, then the suite, then how the
    agent ended."""
    changed = [f for f in changed_files(ws) if not f.startswith(task.tests)]
    if not changed:
        lead = "no file edited"
    elif not set(task.buggy_files()) & set(changed):
        lead = f"edited {', '.join(changed[:3])}, not the buggy file"
    else:
        lead = "edited the buggy file"
    lead += f"; suite fails ({tests})" if tests else "; suite fails"
    return ex._short(f"{lead}; {ending}" if ending else lead, 140)


# -- rows --------------------------------------------------------------------------------------

AGENT_BATCH = Path(tempfile.gettempdir()) / "baseagent-repos" / "batch"


def run_agent(tasks: list[RepoTask], model: str, api_base: str, work: Path,
              extra: list[str], log: Callable[[str], None],
              resume: bool = False) -> list[TaskResult]:
    """`baseagent batch --oss` over the tasks, one worker (one server slot); the batch runs
    at one fixed path (see bench/exercises.py AGENT_BATCH) and moves into `work` after;
    `resume`: the batch an earlier invocation left in `work` goes on."""
    out = work / "agent"
    tasks_file = convert(tasks, out / "input")
    home = out / "home"
    home.mkdir(parents=True, exist_ok=True)
    with ex.fixed_batch(out, "repos", AGENT_BATCH, resume=resume):
        command = [sys.executable, str(REPO / "agent.py"), "batch", str(tasks_file),
                   "--out", str(AGENT_BATCH), "--workers", "1", "--oss", "--model", model,
                   "--api-base", api_base, "--temperature", "0",
                   "--context-window", str(ex.CONTEXT), "--max-iterations", str(STEP_LIMIT),
                   "--task-timeout", str(TASK_TIMEOUT_S), "--json", *extra]
        log("agent: " + shlex.join(command))
        proc = subprocess.run(command, env=ex._environment(home), capture_output=True,
                              text=True)
        (out / "batch.stderr").write_text(proc.stderr)
        if proc.returncode != 0:
            raise RuntimeError(f"baseagent batch exited {proc.returncode}: "
                               f"{proc.stderr[-2000:]}")
        rows = {str(r["id"]): r for r in ex._json_lines(AGENT_BATCH / "results.jsonl")}
        return [_agent_result(t, rows.get(t.id)) for t in tasks]


def _agent_result(task: RepoTask, row: dict[str, Any] | None) -> TaskResult:
    if row is None:
        return TaskResult(task.id, False, "error", why="no result")
    usage = row.get("usage") or {}
    output = (row.get("check") or {}).get("output") or ""
    solved = row["status"] == "passed"
    result = TaskResult(task.id, solved, row["status"],
                        ex.session_calls(Path(row.get("session") or "")),
                        int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0),
                        round(float(row.get("duration_s") or 0), 1),
                        tests=unittest_summary(output) if output else "")
    if not solved:
        error = (row.get("error") or "").strip()
        if row["status"] == "error":
            result.why = ex._short(error or "error")
        else:
            ending = ("answered as done" if row.get("agent_status") == "completed"
                      else ex._short(error) or str(row.get("agent_status") or ""))
            result.why = lost_reason(task, Path(row.get("workspace") or ""), result.tests,
                                     ending)
    return result


def _peer(row: str, task: RepoTask, work: Path, command: list[str], env: dict[str, str],
          log: Callable[[str], None]) -> tuple[Path, str, str, float]:
    """Run one peer on a fresh workspace: (workspace, status, output, wall s)."""
    ws = make_workspace(task, work / row / task.id / "ws")
    started = time.monotonic()
    status, output = "failed", ""
    try:
        proc = subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True,
                              timeout=TASK_TIMEOUT_S, stdin=subprocess.DEVNULL)
        output = proc.stdout + "\n" + proc.stderr
    except subprocess.TimeoutExpired as exc:
        status = "timeout"
        out = exc.stdout or b""
        output = out.decode(errors="replace") if isinstance(out, bytes) else out
    (ws.parent / f"{row}.log").write_text(output[-250_000:])
    return ws, status, output, round(time.monotonic() - started, 1)


def _peer_result(row: str, task: RepoTask, ws: Path, status: str, wall: float, calls: int,
                 tokens: tuple[int, int], ending: str, log: Callable[[str], None]) -> TaskResult:
    passed, output = run_check(task, ws)
    result = TaskResult(task.id, passed, "passed" if passed else status, calls, tokens[0],
                        tokens[1], wall, tests=unittest_summary(output))
    if not passed:
        result.why = (f"timed out after {TASK_TIMEOUT_S}s; " if status == "timeout" else "") + \
            lost_reason(task, ws, result.tests, ending)
    log(f"{row}: {task.id}: {result.status} ({result.tests}) {wall}s")
    return result


# Aider as it runs on a repository: its default edit format for the model, its repository
# map (git), no files added (it has to find them), --auto-test with the package's suite.
AIDER_REPO_FLAGS = ("--yes-always", "--no-check-update", "--no-analytics", "--no-detect-urls",
                    "--no-show-model-warnings", "--no-pretty", "--no-stream",
                    "--no-fancy-input", "--no-restore-chat-history", "--no-auto-commits",
                    "--auto-test")


def run_aider(task: RepoTask, model: str, api_base: str, work: Path,
              log: Callable[[str], None]) -> TaskResult:
    from agents import AIDER_VENV, ensure_aider

    ensure_aider(log)
    home = work / "aider" / task.id / "home"
    home.mkdir(parents=True, exist_ok=True)
    meta = home / "model-metadata.json"
    meta.write_text(json.dumps({model: {"max_input_tokens": ex.CONTEXT,
                                        "max_output_tokens": ex.ALONE_MAX_TOKENS,
                                        "input_cost_per_token": 0, "output_cost_per_token": 0,
                                        "litellm_provider": "openai", "mode": "chat"}}))
    history = home / "llm-history.txt"
    command = [str(AIDER_VENV / "bin" / "aider"), "--model", model, "--openai-api-base",
               api_base, "--openai-api-key", "local-no-key", "--model-metadata-file", str(meta),
               *AIDER_REPO_FLAGS, "--test-cmd",
               f"timeout {CHECK_TIMEOUT_S} {task.test_command()}",
               "--llm-history-file", str(history), "--chat-history-file", str(home / "chat.md"),
               "--input-history-file", str(home / "input.txt"),
               "--message", task.issue + TAIL.format(package=task.package, version=task.version,
                                                     command=task.test_command())]
    env = {**ex._environment(home), "AIDER_CHECK_UPDATE": "false", "AIDER_ANALYTICS": "false"}
    ws, status, output, wall = _peer("aider", task, work, command, env, log)
    calls = ex.aider_calls(history)
    return _peer_result("aider", task, ws, status, wall, calls, ex.aider_tokens(output),
                        f"{calls} answer(s)", log)


def run_mini(mode: str, task: RepoTask, model: str, api_base: str, work: Path,
             log: Callable[[str], None]) -> TaskResult:
    from agents import PEER_VENV, ensure_peer

    ensure_peer(log)
    config = ["-c", "mini.yaml"] if mode == "mini-tool" else \
        ["-c", "mini_textbased.yaml", "--model-class", "litellm_textbased"]
    home = work / mode / task.id / "home"
    home.mkdir(parents=True, exist_ok=True)
    traj = work / mode / task.id / "traj.json"
    command = [str(PEER_VENV / "bin" / "mini"), "-y", "--exit-immediately", "-m", model, "-t",
               task_instruction(task), *config, "-c", f"model.model_kwargs.api_base={api_base}",
               "-c", "model.model_kwargs.temperature=0", "-c", f"agent.step_limit={STEP_LIMIT}",
               "-c", "agent.cost_limit=0", "-o", str(traj)]
    env = {**ex._environment(home), "MSWEA_CONFIGURED": "true",
           "MSWEA_COST_TRACKING": "ignore_errors"}
    ws, status, _, wall = _peer(mode, task, work, command, env, log)
    calls, exit_status, tokens = ex._mini_trajectory(traj)
    return _peer_result(mode, task, ws, status, wall, calls, tokens,
                        f"exit: {exit_status or '?'}", log)


def run_codex(task: RepoTask, model: str, api_base: str, work: Path,
              log: Callable[[str], None]) -> TaskResult:
    from codex_bench import CODEX_NPM, install_codex

    install_codex()
    home = work / "codex" / task.id / "home"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(ex.CODEX_ROW_CONFIG.format(
        model=model.split("/", 1)[-1], base_url=api_base.rstrip("/"),
        idle_ms=TASK_TIMEOUT_S * 1000))
    ws_path = work / "codex" / task.id / "ws"
    command = [str(CODEX_NPM), "exec", "--json", "--skip-git-repo-check",
               "--dangerously-bypass-approvals-and-sandbox", "-C", str(ws_path),
               task_instruction(task)]
    env = {**ex._environment(home), "CODEX_HOME": str(codex_home),
           "LOCAL_MODEL_KEY": "local-no-key"}
    env = {k: v for k, v in env.items() if not k.startswith("CODEX_") or k == "CODEX_HOME"}
    ws, status, output, wall = _peer("codex", task, work, command, env, log)
    prompt, cached, completion, ended = ex.codex_usage(output)
    result = _peer_result("codex", task, ws, status, wall, 0, (prompt, completion),
                          f"codex: {ended}", log)
    result.cached_tokens = cached
    return result


# -- runs and the report -----------------------------------------------------------------------

PEER_ENTRIES = ("run_aider", "run_codex", "run_mini")


def bug_lines(task: RepoTask) -> dict[str, set[int]]:
    """The lines the bug wrote, by file, as numbered in the workspace (the patch's `+`
    lines, counted from each hunk's start in the new file; for a line it removed, the line
    before where it was)."""
    lines: dict[str, set[int]] = {}
    path, number = None, 0
    for line in task.bug.splitlines():
        if line.startswith("+++ b/"):
            path = line[6:].strip()
        elif line.startswith("@@") and path is not None:
            number = int(line.split("+")[1].split(",")[0].split()[0])
        elif line.startswith("+") and path is not None:
            lines.setdefault(path, set()).add(number)
            number += 1
        elif line.startswith("-") and not line.startswith("---") and path is not None:
            # a line the bug removed: the one before where it was
            lines.setdefault(path, set()).add(number - 1)
        elif line.startswith(" ") and path is not None:
            number += 1
    return lines


@dataclass
class Localised:
    id: str
    rank: int | None  # where the definition holding the bug is in localise's ranking
    symbol: str  # that definition ("" when none holds it)
    shown: bool  # whether the repository probe's first message shows it
    top: str  # the definition ranked first
    origins: tuple[str, ...] = ()  # the functions the example showed a wrong value came from
    swept: int | None = None  # where the bug's line is in the line search's sweep (1-based)
    saw: str = ""  # what the bug's line saw, as its rewrite question says (helps/line_values)


def localised(task: RepoTask, work: Path, cache: Path = CACHE,
              python: Path | None = None) -> Localised:
    """Where helps/localise.py puts the bug of `task`, without a model: the rank of the
    innermost definition holding a line the bug wrote, and whether the repository probe
    would show it (helps/repo_probe.py's bounds; with `python`, the tasks' interpreter, the
    issue's example is run as the probe runs it, and the functions its wrong value came
    from are shown too; then traced, for where the bug's line falls in the line search's
    sweep, with no line picked before it, and watched, for what its rewrite question says the
    line saw). Deterministic and quick, so a change to
    localisation is measured on every task before a run of hours."""
    from baseagent.helps import line_search, line_values, repo_probe
    from baseagent.helps.localise import localise
    from baseagent.helps.repo_attempts import traced_lines
    from baseagent.helps.reproduction import check_script, read_origins, reproduction_from

    ws = make_workspace(task, work / task.id, cache)
    instruction = task_instruction(task)  # the text the agent is given
    found = localise(instruction, ws)
    repro = reproduction_from(instruction)

    def run(program: str) -> str:
        assert python is not None
        return subprocess.run([str(python), "-"], input=program, cwd=ws,
                              env={**os.environ, "PYTHONPATH": task.pythonpath,
                                   "PYTHONDONTWRITEBYTECODE": "1"},
                              capture_output=True, text=True, timeout=300).stdout

    origins = read_origins(run(check_script(repro, origins=True))) \
        if python is not None and repro is not None else []
    made = repo_probe.origin_candidates(origins, ws)[:repo_probe.ORIGINS_SHOWN]
    shown = repo_probe.code_shown(found, ws, made)
    wrote = bug_lines(task)
    swept, saw = None, ""
    if python is not None and repro is not None:
        places = line_search.trace_places(shown)
        trace, suspicion = traced_lines(run(check_script(repro, trace=places)), places)
        lines = line_search.shown_lines(shown, {s.candidate.path: (ws / s.candidate.path)
                                                .read_text(encoding="utf-8") for s in shown})
        ran_last = line_search.traced_order(trace, suspicion, lines)
        order = line_search.sweep(ran_last, shown, {c.symbol for c in made}, lambda line: True)
        swept = next((i for i, line in enumerate(order, 1)
                      if line.number in wrote.get(line.path, ())), None)
        watch = line_values.watched([(line.path, line.number, line.text) for line in lines
                                     if line.number in wrote.get(line.path, ())])
        seen = line_values.read_values(run(check_script(repro, values=watch)))
        saw = " ".join(filter(None, (line_values.saw_sentence(v, line_values.statement_of(
            v, repro)) for _, v in sorted(seen.items()))))
    hits = [(c.end - c.start, rank, c) for rank, c in enumerate(found.candidates, 1)
            if any(c.start <= n <= c.end for n in wrote.get(c.path, ()))]
    shown_at = [s.candidate for s in shown]
    top = found.candidates[0].symbol if found.candidates else ""
    names = tuple(o.name for o in origins)
    if not hits:  # not ranked: shown only when an origin holds it
        held = sorted((c.end - c.start, c.symbol) for c in shown_at
                      if any(c.start <= n <= c.end for n in wrote.get(c.path, ())))
        return Localised(task.id, None, held[0][1] if held else "", bool(held), top, names,
                         swept, saw)
    _, rank, best = min(hits, key=lambda h: (h[0], h[1]))
    return Localised(task.id, rank, best.symbol,
                     any((c.path, c.symbol) == (best.path, best.symbol) for c in shown_at), top,
                     names, swept, saw)


def peer_harness(source: str | None = None, exercises_source: str | None = None) -> str:
    """The peer rows' code: this file's peer functions and what they reach, and the
    exercises' helpers they share (bench/exercises.py's own fingerprint). Two commits with
    the same fingerprint measure the peers alike."""
    if source is None:
        source = Path(__file__).read_text(encoding="utf-8")
    if exercises_source is None:
        exercises_source = (BENCH / "exercises.py").read_text(encoding="utf-8")
    text = ex.reached_source(source, PEER_ENTRIES)
    text += ex.peer_harness(exercises_source)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _harness_at(commit: str) -> str:
    sources = []
    for name in ("bench/repos.py", "bench/exercises.py"):
        proc = subprocess.run(["git", "-C", str(REPO), "show", f"{commit}:{name}"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise ValueError(f"cannot read {name} at {commit}: {proc.stderr.strip()}")
        sources.append(proc.stdout)
    return peer_harness(*sources)


def _solved(rows: list[dict[str, Any]]) -> str:
    return f"{sum(1 for r in rows if r['solved'])}/{len(rows)}"


def latest_rows(runs: list[Run]) -> dict[str, tuple[Run, list[dict[str, Any]]]]:
    """Each row's latest measurement, the agent row once per set of flags (`agent` for the
    compact profile, `agent --prompt-profile full` beside it): label -> (run, results)."""
    columns: dict[str, tuple[Run, list[dict[str, Any]]]] = {}
    for run in runs:
        for row, results in run.rows.items():
            label = row if row != "agent" or not run.extra else f"agent {shlex.join(run.extra)}"
            columns[label] = (run, results)
    order = [*(k for k in columns if k.startswith("agent")),
             *(n for n in ROWS if n in columns and n != "agent"),
             *sorted(k for k in columns if not k.startswith("agent") and k not in ROWS)]
    return {k: columns[k] for k in order}


def render(runs: list[Run]) -> str:
    lines = ["# Real repositories with a real local model", "",
             "Rendered by `python bench/repos.py report` from `bench/repos_runs.jsonl`. Method: "
             "bench/repos.py's docstring and bench/README.md (Real repositories); the tasks: "
             "bench/repos/.", ""]
    if not runs:
        lines += ["No run recorded yet. `python bench/repos.py validate` proves each task; "
                  "`python bench/repos.py run` measures the rows.", ""]
    else:
        columns = latest_rows(runs)
        lines += ["## Each row's latest run", "",
                  "| row | solved | model calls | input tokens | output tokens | cached input "
                  "| wall s | run (commit) |", "|---|---:|---:|---:|---:|---:|---:|---|"]
        for label, (run, rows) in columns.items():
            row = label.split(" ")[0]
            lines.append(f"| {label} | {_solved(rows)} | {sum(r['model_calls'] for r in rows)} "
                         f"| {sum(r['input_tokens'] for r in rows)} | "
                         f"{sum(r['output_tokens'] for r in rows)} | "
                         f"{ex.cached_share(run.served.get(row))} | "
                         f"{sum(r['wall_s'] for r in rows):.0f} | {run.started} "
                         f"({run.commit}) |")
        models = sorted({f"`{run.model}` served by {run.server}" for run, _ in columns.values()})
        lines += ["", f"Model: {'; '.join(models)}; temperature 0.", "",
                  "### Every row, per task (each lost task's reason)", "",
                  "| task | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
        names = list(dict.fromkeys(r["name"] for _, rows in columns.values() for r in rows))
        by_label = {k: {r["name"]: r for r in rows} for k, (_, rows) in columns.items()}
        for name in names:
            cells = [("-" if (r := by_label[k].get(name)) is None else
                      "solved" if r["solved"] else f"✗ {r['why']}") for k in columns]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## Every run", "", "| started (UTC) | commit | rows | flags | note |",
              "|---|---|---|---|---|"]
    for run in runs:
        cells = ", ".join(f"{n} {_solved(r)}" for n, r in run.rows.items())
        lines.append(f"| {run.started} | {run.commit} | {cells} | "
                     f"`{shlex.join(run.extra) or '-'}` | {run.note} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    fetch_p = sub.add_parser("fetch", help="download and verify the sdists; make the venv")
    fetch_p.add_argument("--only", default="")
    fetch_p.add_argument("--no-venv", action="store_true")
    val = sub.add_parser("validate", help="the check passes without the bug, fails with it")
    val.add_argument("--only", default="")
    val.add_argument("--work", type=Path, default=None)
    run_p = sub.add_parser("run", help="run rows on the tasks and record the results")
    run_p.add_argument("--rows", default="agent", help=f"comma-separated, of {', '.join(ROWS)}")
    run_p.add_argument("--only", default="")
    run_p.add_argument("--model", default="openai/local")
    run_p.add_argument("--api-base", default=None,
                       help="an OpenAI-compatible server; default: serve the local model here "
                            "as bench/exercises.py does (llama-server, --temp 0)")
    run_p.add_argument("--local-model", default=ex.DEFAULT_MODEL_FILE)
    run_p.add_argument("--work", type=Path, default=None)
    run_p.add_argument("--note", default="")
    run_p.add_argument("--no-record", action="store_true")
    run_p.add_argument("--resume", action="store_true",
                       help="keep the tasks an earlier run in the same --work finished (the "
                            "agent row: its batch, at the same commit and flags)")
    run_p.add_argument("agent_flags", nargs="*", help="extra baseagent flags, after `--`")
    loc = sub.add_parser("localise", help="where localisation puts each bug (no model)")
    loc.add_argument("--only", default="")
    sub.add_parser("report", help="rewrite REPOS_RESULTS.md")
    rec = sub.add_parser("record", help="record the rows a stopped run had finished")
    rec.add_argument("--work", type=Path, required=True, action="append")
    rec.add_argument("--note", default=None)
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(f"[{_dt.datetime.now():%H:%M:%S}] {message}", file=sys.stderr, flush=True)

    if args.command == "report":
        RESULTS.write_text(render(ex.load_runs(RUNS)), encoding="utf-8")
        return 0
    if args.command == "record":
        try:
            run = ex.combine_runs([Run(**json.loads((w / "run.json").read_text()))
                                   for w in args.work], harness_at=_harness_at,
                                  note=args.note)
        except (OSError, ValueError) as exc:
            parser.error(str(exc))
        ex.append_run(run, RUNS)
        RESULTS.write_text(render(ex.load_runs(RUNS)), encoding="utf-8")
        print(json.dumps({row: _solved(results) for row, results in run.rows.items()}))
        return 0
    only = [n for n in args.only.split(",") if n]
    tasks = load_tasks(only=only)
    fetch(tasks)
    if args.command == "fetch":
        if not args.no_venv:
            ensure_venv(tasks, log=log)
        print(json.dumps({t.id: str(pristine(t)) for t in tasks}, indent=1))
        return 0
    if args.command == "localise":
        work = Path(tempfile.mkdtemp(prefix="baseagent-repos-localise-"))
        python = VENV / "bin" / "python" if venv_ready(tasks) else None
        if python is None:
            log("the tasks' venv is not made (`fetch`): the examples are not run, no origins")
        print("| task | rank of the bug's definition | shown first | ranked first | origins "
              "| the bug's line in the sweep | what the bug's line saw |")
        print("|---|---:|---|---|---|---:|---|")
        try:
            for task in tasks:
                found = localised(task, work, python=python)
                print(f"| {found.id} | {found.rank or '-'} {found.symbol} "
                      f"| {'yes' if found.shown else 'no'} | {found.top} "
                      f"| {', '.join(found.origins) or '-'} | {found.swept or '-'} "
                      f"| {found.saw.replace('|', '/') or '-'} |",
                      flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return 0
    python = ensure_venv(tasks, log=log)
    if args.command == "validate":
        work = args.work or Path(tempfile.mkdtemp(prefix="baseagent-repos-validate-"))
        bad = 0
        print("| task | released: check | s | with the bug: check | s | valid |")
        print("|---|---|---:|---|---:|---|")
        for task in tasks:
            v = validate(task, work, python=python)
            bad += not v.ok
            print(f"| {v.id} | {'passes' if v.pristine_passes else 'FAILS'} ({v.pristine_tests}) "
                  f"| {v.pristine_s} | {'fails' if v.bug_fails else 'PASSES'} ({v.bug_tests}) "
                  f"| {v.bug_s} | {'yes' if v.ok else 'NO'} |", flush=True)
        return 1 if bad else 0

    rows = [r for r in args.rows.split(",") if r]
    unknown = sorted(set(rows) - set(ROWS))
    if unknown:
        parser.error(f"unknown rows: {', '.join(unknown)}")
    work = args.work or Path(tempfile.mkdtemp(prefix="baseagent-repos-"))
    work.mkdir(parents=True, exist_ok=True)
    log(f"work directory: {work}")
    run = Run(started=f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M}",
              commit=ex._commit(), model=args.model, server=args.api_base or "",
              load=ex._load(),
              note=args.note, extra=list(args.agent_flags),
              exercises="repos" + (f" ({len(tasks)} of them)" if only else ""))
    gguf = None
    if not args.api_base:
        from local_server import WHEEL

        gguf = ex._local_model_path(args.local_model)
        run.server = (f"llama-server ({WHEEL[0]}, -dev none --jinja -t 2 -c {ex.CONTEXT} -np 1 "
                      f"--temp 0) with {gguf.name}")
    stamp = ex._task_stamp(run, peer_harness())
    kept_by_row = {}
    for row in rows if args.resume else ():
        try:
            kept_by_row[row] = ex.resumed_row(work, row, run, stamp)
        except ValueError as exc:
            parser.error(str(exc))
    def measure(api_base: str, served_here: bool) -> None:
        from usage_proxy import UsageProxy

        # `timings`: from the llama-server served here, a call cut short counts its tokens.
        proxy = UsageProxy(api_base, timings=served_here).start()
        try:
            for row in rows:
                started = time.monotonic()
                if row == "agent":
                    proxy.tag = "agent/"
                    with ex.agent_row_journal(work, run, proxy, args.resume) as earlier:
                        if earlier:
                            run.note = (run.note + " " if run.note else "") + f"({earlier})"
                        results = run_agent(tasks, args.model, proxy.api_base, work,
                                            run.extra, log, resume=args.resume)
                    run.rows[row] = [asdict(r) for r in results]
                else:
                    def one(task: RepoTask, row: str = row) -> TaskResult:
                        shutil.rmtree(work / row / task.id, ignore_errors=True)
                        proxy.tag = f"{row}/{task.id}"
                        if row == "aider":
                            result = run_aider(task, args.model, proxy.api_base, work, log)
                        elif row == "codex":
                            result = run_codex(task, args.model, proxy.api_base, work, log)
                        else:
                            result = run_mini(row, task, args.model, proxy.api_base, work, log)
                        served = proxy.totals(f"{row}/{task.id}")
                        result.cached_tokens = served["cached_tokens"]
                        if row == "codex":
                            result.model_calls = served["calls"]
                        return result

                    run.rows[row], kept = ex.run_peer_row(
                        row, tasks, one, ex._task_log(work, row), stamp, kept_by_row.get(row), log)
                    if kept:
                        run.note = (run.note + " " if run.note else "") + \
                            f"({kept} of the {row} row's tasks from an earlier invocation)"
                run.served[row] = proxy.totals(f"{row}/")
                (work / "run.json").write_text(json.dumps(asdict(run)))
                log(f"{row}: solved {_solved(run.rows[row])} in "
                    f"{time.monotonic() - started:.0f}s")
        finally:
            proxy.stop()

    if gguf is None:
        measure(args.api_base, served_here=False)
    else:
        from local_server import serve

        with serve(gguf, work / "server.log", ex.CONTEXT) as api_base:
            measure(api_base, served_here=True)
    if not args.no_record:
        ex.append_run(run, RUNS)
        RESULTS.write_text(render(ex.load_runs(RUNS)), encoding="utf-8")
    print(json.dumps({row: _solved(results) for row, results in run.rows.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
