"""Measuring instruments: a timed scripted model server and a process runner.

Both agents under test are black boxes launched as subprocesses; everything measured is
observed from outside them (request arrival times at the server, rusage of the process),
so the same method applies to baseagent and to the peer without instrumenting either.
"""
from __future__ import annotations

import os
import signal
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from baseagent.testing import scripted_server as ss

# A session that has not finished by then is stuck (a bug, or a peer retrying): kill it.
DEFAULT_TIMEOUT_S = 600.0


@dataclass
class Exchange:
    """One chat request as the server saw it: when it arrived and when it was answered."""

    entered: float     # headers read (time.time())
    done: float = 0.0  # response fully written and flushed; 0 while still being answered
    kind: str = "other"  # what the responder answered: "step", "final", "other"


class TimedServer(ss.ScriptedServer):
    """The project's scripted server, plus per-request (arrival, answered) timestamps.

    Server time of request k is `done - entered`: reading and parsing the body, estimating
    tokens and streaming the answer. Everything between `done[k]` and `entered[k+1]` is
    the client's: parsing the answer, running the tool, building and sending the next call.
    """

    def __init__(self, responder: Callable[[dict, int], dict | None], **opts: Any) -> None:
        self.exchanges: list[Exchange] = []  # in arrival order; `done` filled in when answered
        self._classify = responder
        self._kind = threading.local()  # the responder and the handler share a thread
        super().__init__(self._respond, **opts)

    def _respond(self, body: dict, index: int) -> dict | None:
        step = self._classify(body, index)
        self._kind.value = (step or {}).pop("_kind", "other")
        return step

    def _handle_chat(self, handler: Any, body: dict, *wire: Any) -> None:
        # `arrived` is stamped by the server's handler once the headers are read, before
        # the body is parsed (ScriptedServer.request_times documents it).
        exchange = Exchange(getattr(handler, "arrived", 0.0) or time.time())
        with self._lock:
            self.exchanges.append(exchange)
        self._kind.value = "other"
        super()._handle_chat(handler, body, *wire)  # wire: the protocol (OpenAI, Anthropic)
        exchange.kind = self._kind.value
        exchange.done = time.time()
        with self._lock:
            # Keep the count, drop the body: 500 bodies of a growing 5 MB history would
            # hold gigabytes in the bench process, and nothing here reads them.
            self._requests[-1] = {}

    def answered(self, index: int, wait: float = 2.0) -> Exchange:
        """Exchange `index` once its answer is written (the client may read the last byte
        a moment before this thread records the time)."""
        deadline = time.monotonic() + wait
        while True:
            with self._lock:
                ex = self.exchanges[index] if index < len(self.exchanges) else None
            if ex is not None and ex.done:
                return ex
            if time.monotonic() > deadline:
                raise RuntimeError(f"request {index} was not answered")
            time.sleep(0.001)


@dataclass
class ProcResult:
    """What one subprocess run left behind."""

    started: float            # time.time() just before the spawn
    ended: float              # time.time() when it was reaped
    returncode: int
    maxrss_kb: int            # peak RSS of the process (and of the largest waited child)
    user_s: float
    sys_s: float
    lines: list[tuple[float, str]] = field(default_factory=list)  # stdout, time-stamped
    stderr: str = ""
    timed_out: bool = False

    @property
    def wall(self) -> float:
        return self.ended - self.started


def run_process(cmd: Sequence[str], *, env: dict[str, str], cwd: Path,
                timeout: float = DEFAULT_TIMEOUT_S, keep_lines: bool = True,
                stderr_path: Path | None = None) -> ProcResult:
    """Run `cmd` to completion; stdout lines are stamped on arrival, rusage via wait4.

    wait4 gives the peak RSS of exactly this process (a child's peak counts only if it is
    larger), where getrusage(RUSAGE_CHILDREN) would mix in every earlier run of the bench.
    """
    err_path = stderr_path or cwd / ".bench-stderr"
    with open(err_path, "wb") as err:
        started = time.time()
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=err, start_new_session=True)
    lines: list[tuple[float, str]] = []
    reader = threading.Thread(target=_read_lines, args=(proc, lines, keep_lines), daemon=True)
    reader.start()
    timed_out = threading.Event()
    watchdog = threading.Timer(timeout, _kill_group, args=(proc.pid, timed_out))
    watchdog.daemon = True
    watchdog.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        watchdog.cancel()
    ended = time.time()
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    reader.join(timeout=10)
    stderr = err_path.read_text(encoding="utf-8", errors="replace")
    return ProcResult(started, ended, proc.returncode, int(usage.ru_maxrss), usage.ru_utime,
                      usage.ru_stime, lines, stderr, timed_out.is_set())


def _read_lines(proc: subprocess.Popen[bytes], out: list[tuple[float, str]], keep: bool) -> None:
    assert proc.stdout is not None
    for raw in proc.stdout:
        if keep:
            out.append((time.time(), raw.decode("utf-8", errors="replace").rstrip("\n")))
    proc.stdout.close()


def _kill_group(pid: int, flag: threading.Event) -> None:
    flag.set()
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def spawn_cost(argv: Sequence[str], *, shell: bool = False, repeats: int = 30,
               cwd: Path | None = None) -> float:
    """Median wall time to run a command to completion, spawned the way an agent spawns it.

    This is the tool's own cost, subtracted from each step: anything an agent spends beyond
    it (polling, output capture, bookkeeping) is that agent's overhead.
    """
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(argv if not shell else argv[0], shell=shell, cwd=cwd,
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, start_new_session=True, check=False)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def timed_runs(cmd: Sequence[str], *, env: dict[str, str], cwd: Path, repeats: int,
               timeout: float = 120.0) -> list[ProcResult]:
    """`repeats` sequential runs of a short command (startup measurements)."""
    return [run_process(cmd, env=env, cwd=cwd, timeout=timeout, keep_lines=False)
            for _ in range(repeats)]
