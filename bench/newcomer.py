"""A newcomer's first path through baseagent, on a fresh clone, timed (issue 43).

    python bench/newcomer.py                 # clone this checkout's HEAD, walk it, write the results
    python bench/newcomer.py --out FILE      # elsewhere than bench/NEWCOMER_RESULTS.md

The path is what README.md prints, taken from README itself so the two cannot drift:

1. `git clone` (of this checkout, for README's `<this repository>`);
2. the set-up lines of "The two commands" (a virtualenv in the clone, `pip install -e '.[test]'`),
   the line that needs a provider key left out;
3. the "one-minute offline start" block (`docs-test: run quickstart`), its output compared with
   the block README prints under it (ids, token counts, the demo's port and directory aside);
4. for each of the five uses, the page README links to, and that page's first example: the
   first block marked `docs-test: run` (its output compared with the page's), or, on the
   session page, the session itself driven through a pseudo-terminal: the task typed, the
   answer awaited, `/exit`;
5. README's test command, collection only (`python -m pytest --co -q`: the whole suite is not
   a newcomer's first quarter of an hour, and the machine is shared).

Each step is timed with time.monotonic. Reading is estimated from the words of README and the
five pages (every word a reader meets, code blocks included; HTML comments, which a reader does
not see, left out) at READING_WPM words a minute. The commands' time depends on the machine's
load (recorded) and pip's on the network and its cache (recorded as given). Typing or pasting
the commands is not counted. Standard library only.
"""
from __future__ import annotations

import argparse
import fcntl
import os
import platform
import pty
import re
import resource
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "docs"))
from docs_examples import Block, normalise, text_blocks  # noqa: E402  (one reader of the docs)

REPO = Path(__file__).resolve().parents[1]
# Silent reading of English non-fiction by adults: 238 words a minute, the mean of
# Brysbaert (2019), "How many words do we read per minute? A review and meta-analysis of
# reading rate", Journal of Memory and Language 109, 104047.
READING_WPM = 238
READING_SOURCE = ("Brysbaert (2019), How many words do we read per minute?, "
                  "J. Memory and Language 109, 104047: 238 words/min, non-fiction, silent")
BUDGET_MINUTES = 15
# What the session page tells the reader to type.
SESSION_INPUT = ("create hello.py that prints a greeting", "/exit")

_LINK = re.compile(r"\]\((docs/[\w./-]+\.md)\)")


# --- the pure parts (tests/bench/test_newcomer.py) ---------------------------------------

def blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, with the docs-test mark just above each
    (tests/docs reads them the same way: one reader)."""
    return text_blocks(text)


def section(text: str, title: str) -> str:
    """The text of the `## title` section of a Markdown page."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not match:
        raise ValueError(f"no section '## {title}'")
    return match.group(1)


@dataclass
class ReadmePath:
    """What README prints for the path."""
    clone: str
    setup: list[str]
    tests: str
    quickstart: Block
    quickstart_output: Block | None
    pages: list[str]  # docs/... for the five uses, in README's order


def readme_path(readme: str) -> ReadmePath:
    two = next(b for b in blocks(section(readme, "The two commands")) if b.lang == "bash")
    lines = [line.split(" #")[0].strip() for line in two.code.splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    clone = next(line for line in lines if line.startswith("git clone"))
    tests = next(line for line in lines if "pytest" in line)
    # The agent's own run needs a provider's key (README says so): not a newcomer's step here.
    setup = [line for line in lines if line not in (clone, tests) and "sk-..." not in line]
    every = blocks(readme)
    quick = next(b for b in every if b.mark == "run" and b.name == "quickstart")
    output = next((b for b in every if b.mark == "output" and b.name == "quickstart"), None)
    pages = _LINK.findall(section(readme, "Five ways to use it"))
    return ReadmePath(clone, setup, tests, quick, output, list(dict.fromkeys(pages)))


def count_words(markdown: str) -> int:
    """The words a reader meets: prose, tables and code alike; HTML comments (not shown) and
    fence lines left out; a token with no letter or digit in it (`|`, `-`, `#`) is no word."""
    text = re.sub(r"<!--.*?-->", " ", markdown, flags=re.S)
    text = "\n".join(line for line in text.splitlines() if not line.startswith("```"))
    return sum(1 for token in text.split() if re.search(r"[^\W_]", token))


def reading_minutes(words: int, wpm: int = READING_WPM) -> float:
    return words / wpm


# --- the walk ---------------------------------------------------------------------------

@dataclass
class Step:
    name: str
    command: str
    seconds: float = 0.0
    cpu: float = 0.0  # CPU seconds of the processes the step waited for (user + system)
    ok: bool = False
    note: str = ""
    output: str = field(default="", repr=False)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _demo_dir() -> Path:
    """A fresh directory as long as `/tmp/demo`, so output cut at a fixed width cuts alike."""
    for _ in range(200):
        path = Path("/tmp/n" + os.urandom(2).hex()[:3])
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise RuntimeError("no free /tmp/nXXX directory")


class Walk:
    def __init__(self, clone: Path, home: Path) -> None:
        self.clone = clone
        venv = clone / ".venv"
        self.setup_env = {k: v for k, v in os.environ.items()
                          if not k.endswith("_API_KEY") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        # `. .venv/bin/activate`, as the set-up line does for the lines after it.
        self.setup_env.update(VIRTUAL_ENV=str(venv), NO_COLOR="1",
                              PATH=f"{venv / 'bin'}:{self.setup_env['PATH']}")
        # After the set-up (which keeps pip's cache, as a newcomer's machine would), a home of
        # its own: the demo's session records and prompt history stay out of the real one.
        self.env = dict(self.setup_env, HOME=str(home))

    def shell(self, step: Step, script: str, timeout: float = 900, *, expected: Block | None = None,
              cwd: Path | None = None, lang: str = "bash") -> Step:
        port, scratch = str(_free_port()), _demo_dir()
        # The demo's fixed port and directory become this run's own (others may use them).
        code = script.replace("/tmp/demo", str(scratch)).replace("8765", port)
        if lang == "python":
            path = scratch / "example.py"
            path.write_text(code, encoding="utf-8")
            argv = ["python", str(path)]
        else:
            argv = ["bash", "-c", "set -euo pipefail\n" + code]
        started, cpu = time.monotonic(), _children_cpu()
        try:
            env = self.setup_env if step.name == "set up" else self.env
            proc = subprocess.Popen(argv, cwd=cwd or self.clone, env=env, text=True,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                out, _ = proc.communicate(timeout=timeout)
            finally:
                _kill_group(proc.pid)
            step.seconds, step.cpu = time.monotonic() - started, _children_cpu() - cpu
            step.output = out
            step.ok = proc.returncode == 0
            if not step.ok:
                step.note = f"exit {proc.returncode}: {out.strip().splitlines()[-1:] or ''}"
            elif expected is not None:
                same = normalise(out, {str(scratch): "/tmp/demo", port: "8765"}) == \
                    normalise(expected.code, {})
                step.note = "output as printed" if same else "output differs from the page"
                step.ok = same
        except subprocess.TimeoutExpired:
            step.seconds, step.note = time.monotonic() - started, f"timed out after {timeout} s"
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return step

    def session(self, step: Step, script: str) -> Step:
        """The session page's block on a pseudo-terminal: type the task, await the answer, leave."""
        port, scratch = str(_free_port()), _demo_dir()
        code = script.replace("/tmp/demo", str(scratch)).replace("8765", port)
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 110, 0, 0))
        env = dict(self.env, TERM="xterm-256color")
        started, cpu = time.monotonic(), _children_cpu()
        proc = subprocess.Popen(["bash", "-c", code], cwd=self.clone, env=env, stdin=slave,
                                stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)
        seen = bytearray()

        def until(needle: str, timeout: float) -> bool:
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                ready, _, _ = select.select([master], [], [], 0.2)
                if ready:
                    try:
                        seen.extend(os.read(master, 65536))
                    except OSError:
                        return False
                    if needle.encode() in seen:
                        return True
            return False

        try:
            task, leave = SESSION_INPUT
            checks = [until("›", 120)]
            os.write(master, task.encode() + b"\r")
            checks.append(until("completed · turn 1", 120))
            del seen[:]
            checks.append(until("›", 30))
            time.sleep(0.3)  # the prompt drawn, the line editor reading
            os.write(master, leave.encode() + b"\r")
            checks.append(until("To continue this thread", 30))
            proc.wait(timeout=30)
            step.seconds, step.cpu = time.monotonic() - started, _children_cpu() - cpu
            step.ok = all(checks) and proc.returncode == 0 and (scratch / "hello.py").is_file()
            step.note = ("the task typed, the answer shown, /exit" if step.ok else
                         f"prompt/answer/prompt/exit seen: {checks}, exit {proc.returncode}")
        except subprocess.TimeoutExpired:
            step.seconds, step.note = time.monotonic() - started, "the session did not end"
        finally:
            _kill_group(proc.pid)
            os.close(master)
            shutil.rmtree(scratch, ignore_errors=True)
        return step


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def first_example(page_text: str) -> tuple[Block | None, Block | None]:
    """A use page's first runnable example and the output it prints, if it prints one."""
    every = blocks(page_text)
    run = next((b for b in every if b.mark == "run"), None)
    if run is None:
        return None, None
    return run, next((b for b in every if b.mark == "output" and b.name == run.name), None)


def walk(source: Path, work: Path) -> tuple[list[Step], dict[str, int]]:
    clone = work / "baseagent"
    steps: list[Step] = []
    readme = (source / "README.md").read_text(encoding="utf-8")
    path = readme_path(readme)

    step = Step("clone", path.clone.replace("<this repository>", str(source)))
    started, cpu = time.monotonic(), _children_cpu()
    done = subprocess.run(["git", "clone", "-q", str(source), str(clone)], capture_output=True,
                          text=True)
    step.seconds, step.ok = time.monotonic() - started, done.returncode == 0
    step.cpu = _children_cpu() - cpu
    step.note = "a local clone (no network)" if step.ok else done.stderr.strip()
    steps.append(step)
    if not step.ok:
        return steps, {}
    (work / "home").mkdir()
    walker = Walk(clone, work / "home")
    readme = (clone / "README.md").read_text(encoding="utf-8")
    path = readme_path(readme)
    for line in path.setup:
        step = walker.shell(Step("set up", line), line)
        steps.append(step)
    steps.append(walker.shell(Step("quick start", "README's offline start"), path.quickstart.code,
                              300, expected=path.quickstart_output))
    words = {"README.md": count_words(readme)}
    for page in path.pages:
        text = (clone / page).read_text(encoding="utf-8")
        words[page] = count_words(text)
        run, output = first_example(text)
        if run is not None:
            steps.append(walker.shell(Step(f"example: {page}", f"its first example ({run.lang})"),
                                      run.code, 300, expected=output, lang=run.lang))
        else:
            block = next(b for b in blocks(text) if b.lang in ("bash", "sh"))
            steps.append(walker.session(Step(f"example: {page}", "its session, on a pty"),
                                        block.code))
    tests = path.tests.replace("pytest -q", "pytest --co -q")
    steps.append(walker.shell(Step("tests (collected)", tests), tests, 600))
    if steps[-1].ok:
        count = re.search(r"(\d+) tests? collected", steps[-1].output)
        steps[-1].note = f"{count.group(1)} tests collected" if count else ""
    return steps, words


def report(steps: list[Step], words: dict[str, int], load: tuple[tuple[float, ...], ...]) -> str:
    wall = sum(s.seconds for s in steps)
    cpu = sum(s.cpu for s in steps)
    total_words = sum(words.values())
    read_min = reading_minutes(total_words)
    loaded, idle = read_min + wall / 60, read_min + cpu / 60

    def verdict(minutes: float) -> str:
        return "under" if minutes < BUDGET_MINUTES else "OVER"

    out = ["# A newcomer's path, measured", "",
           "`python bench/newcomer.py` (its docstring says what it does and why): a fresh clone of",
           "HEAD; every command README and the five use pages print, run as printed, each timed;",
           "reading time from the words read.", "",
           f"- **Total as measured here: {loaded:.1f} minutes** ({verdict(loaded)} the "
           f"{BUDGET_MINUTES}-minute budget): reading {read_min:.1f} min + commands "
           f"{wall / 60:.1f} min ({wall:.0f} s of wall time on this shared machine)",
           f"- **On an idle machine: about {idle:.1f} minutes** ({verdict(idle)} the budget): "
           f"reading + the commands' CPU time, {cpu:.0f} s (what they take when they need not "
           "wait for the CPU; network and disk waits aside)",
           f"- Reading: {total_words:,} words at {READING_WPM} words/min ({READING_SOURCE}); "
           f"at a slower 200 words/min: {reading_minutes(total_words, 200):.1f} min",
           f"- Machine: {platform.machine()}, {os.cpu_count()} cores, load average "
           f"{load[0][0]:.2f} before and {load[1][0]:.2f} after; niceness {os.nice(0)}; "
           f"Python {platform.python_version()}; "
           "pip from its local cache as found (a first install downloads the wheels)",
           "- Not counted: typing or pasting the commands, getting a provider key, the whole "
           "test suite (collected only)", "",
           "## Commands", "", "| step | command | wall s | CPU s | result |",
           "|---|---|---:|---:|---|"]
    for s in steps:
        result = ("ok" if s.ok else "**failed**") + (f": {s.note}" if s.note else "")
        out.append(f"| {s.name} | `{s.command}` | {s.seconds:.1f} | {s.cpu:.1f} | {result} |")
    out.append(f"| **all** | | **{wall:.0f}** | **{cpu:.0f}** | |")
    out += ["", "## Reading", "", "| page | words | minutes |", "|---|---:|---:|"]
    for page, count in words.items():
        out.append(f"| {page} | {count:,} | {reading_minutes(count):.1f} |")
    out.append(f"| **all** | **{total_words:,}** | **{read_min:.1f}** |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=REPO, help="the checkout to clone")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "NEWCOMER_RESULTS.md")
    args = parser.parse_args(argv)
    before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="newcomer-") as work:
        steps, words = walk(args.source.resolve(), Path(work))
    after = os.getloadavg()
    text = report(steps, words, (before, after))
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0 if all(s.ok for s in steps) else 1


if __name__ == "__main__":
    sys.exit(main())
