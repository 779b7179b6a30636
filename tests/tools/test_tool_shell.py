"""The shell tool end to end (real bash), plus its output buffer and env helpers."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from baseagent.tools import shell
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ToolError
from baseagent.credentials import DEFAULT_STRIP_PATTERNS, child_env, is_secret_name
from baseagent.tools.output_buffer import (
    HeadTailBuffer,
    clean_terminal_text,
    join_truncated,
    truncate_middle,
)
from helpers import REPO

SRC = REPO / "src"


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    """As the agent builds it: this process's environment minus its secrets."""
    return ToolContext(cwd=tmp_path, env=child_env(os.environ))


def run(ctx: ToolContext, command: str, **kw):
    return shell.run(shell.Args(command=command, **kw), ctx)


def pid_alive(pid: int) -> bool:
    """Alive = exists and is not a zombie (orphans here may never be reaped by init)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2:].split()[0] not in (b"Z", b"X")


def read_pid(path: Path) -> int:
    for _ in range(100):
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.01)
    raise AssertionError(f"{path} never written")


# --- result format and exit codes ---------------------------------------------------------

def test_format_exit_code_and_item(ctx):
    res = run(ctx, "echo hello; exit 3")
    assert re.fullmatch(r"Exit code: 3\nWall time: \d+\.\d seconds\nOutput:\nhello\n", res.output)
    assert res.success is False
    assert res.item == {"command": "echo hello; exit 3", "aggregated_output": "hello\n",
                        "exit_code": 3}


def test_success_on_zero_exit_and_stderr_interleaved(ctx):
    res = run(ctx, "echo a; echo b >&2; echo c")
    assert res.success is True
    assert res.item["exit_code"] == 0
    assert res.item["aggregated_output"] == "a\nb\nc\n"


def test_death_by_signal_reads_as_128_plus_n(ctx):
    assert run(ctx, "kill -9 $$").item["exit_code"] == 128 + signal.SIGKILL


def test_stdin_is_closed_so_cat_returns(ctx):
    res = run(ctx, "cat; echo after", timeout_ms=5000)
    assert res.item["exit_code"] == 0
    assert res.item["aggregated_output"] == "after\n"


def test_nul_in_command_is_a_tool_error(ctx):
    with pytest.raises(ToolError, match="failed to start"):
        run(ctx, "echo a\0b")


def test_args_reject_bad_timeout():
    with pytest.raises(ValidationError):
        shell.Args(command="true", timeout_ms=0)


# --- workdir ------------------------------------------------------------------------------

def test_workdir_relative_to_workspace(ctx, tmp_path):
    (tmp_path / "sub").mkdir()
    res = run(ctx, "pwd", workdir="sub")
    assert res.item["aggregated_output"].strip() == str(tmp_path / "sub")


def test_workdir_missing_or_file_is_tool_error(ctx, tmp_path):
    with pytest.raises(ToolError, match="does not exist"):
        run(ctx, "true", workdir="nope")
    (tmp_path / "f").write_text("x")
    with pytest.raises(ToolError, match="not a directory"):
        run(ctx, "true", workdir="f")


# --- timeouts, background children, interrupts --------------------------------------------

def test_timeout_kills_the_whole_group(ctx, tmp_path):
    pidfile = tmp_path / "pid"
    res = run(ctx, f"sleep 300 & echo $! > {pidfile}; echo started; sleep 300", timeout_ms=500)
    assert res.item["exit_code"] == 124
    assert res.success is False
    assert res.output.endswith("command timed out after 500 milliseconds")
    assert res.item["aggregated_output"] == "started\ncommand timed out after 500 milliseconds"
    assert not pid_alive(read_pid(pidfile))


def test_timeout_defaults_to_context_setting(tmp_path):
    ctx = ToolContext(cwd=tmp_path, env=child_env(os.environ), shell_timeout_ms=300)
    res = run(ctx, "sleep 30")
    assert res.item["exit_code"] == 124
    assert "command timed out after 300 milliseconds" in res.output


def test_sigterm_ignoring_command_gets_sigkill(ctx, tmp_path):
    pidfile = tmp_path / "pid"
    res = run(ctx, f"trap '' TERM; sleep 300 & echo $! > {pidfile}; wait", timeout_ms=300)
    assert res.item["exit_code"] == 124
    assert not pid_alive(read_pid(pidfile))


def test_background_child_holding_the_pipe_does_not_block(ctx, tmp_path):
    pidfile = tmp_path / "pid"
    res = run(ctx, f"sleep 300 & echo $! > {pidfile}; echo done", timeout_ms=20_000)
    assert res.item["exit_code"] == 0
    assert res.item["aggregated_output"] == "done\n"
    assert not pid_alive(read_pid(pidfile))


def test_detached_background_child_is_left_running(ctx, tmp_path):
    # Output redirected away: the pipe closes at once, so the job (a server, say) survives.
    pidfile = tmp_path / "pid"
    res = run(ctx, f"sleep 300 >/dev/null 2>&1 & echo $! > {pidfile}")
    pid = read_pid(pidfile)
    try:
        assert res.item["exit_code"] == 0
        assert pid_alive(pid)
    finally:
        os.kill(pid, signal.SIGKILL)


def test_cancellation_kills_and_marks_failed(tmp_path):
    flag = threading.Event()
    ctx = ToolContext(cwd=tmp_path, env=child_env(os.environ), cancelled=flag.is_set)
    threading.Timer(0.3, flag.set).start()
    pidfile = tmp_path / "pid"
    res = run(ctx, f"echo begun; sleep 300 & echo $! > {pidfile}; wait", timeout_ms=60_000)
    assert res.success is False
    assert res.item["exit_code"] == shell.INTERRUPTED_EXIT_CODE
    assert res.output.endswith("command interrupted")
    assert res.item["aggregated_output"].startswith("begun\n")
    assert not pid_alive(read_pid(pidfile))


# --- output handling ----------------------------------------------------------------------

def test_binary_nul_and_ansi_output_is_clean_json_text(ctx):
    res = run(ctx, r"printf 'a\xff\x00b \033[31mred\033[0m\r\nnext\x07\n\033]0;title\007end\n'")
    text = res.item["aggregated_output"]
    assert text == "a\ufffdb red\nnext\nend\n"
    encoded = json.dumps(res.item, ensure_ascii=False).encode("utf-8")
    assert json.loads(encoded)["aggregated_output"] == text
    assert text in res.output


def test_carriage_return_progress_collapses(ctx):
    res = run(ctx, r"printf '10%%\r50%%\r100%%\ndone\n'")
    assert res.item["aggregated_output"] == "100%\ndone\n"


def test_long_output_is_cut_in_the_middle_for_the_model(ctx):
    res = run(ctx, "seq 1 20000")  # ~108 KB: fits the buffer, not the model budget
    full = "".join(f"{i}\n" for i in range(1, 20001))
    assert res.item["aggregated_output"] == full
    body = res.output.split("Output:\n", 1)[1]
    m = re.search(r"\n\[\.\.\. (\d+) characters truncated \.\.\.\]\n", body)
    assert m
    head, tail = body[: m.start()], body[m.end():]
    assert full.startswith(head) and full.endswith(tail)
    assert len(head) + len(tail) == shell.MODEL_OUTPUT_MAX_CHARS
    assert int(m.group(1)) == len(full) - len(head) - len(tail)


def test_huge_output_keeps_memory_bounded(tmp_path):
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc to read the peak RSS")
    script = f"""
import json, sys
from pathlib import Path
sys.path.insert(0, {str(SRC)!r})
from baseagent.tools import shell
from baseagent.tools.context import ToolContext

def hwm_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

import os
ctx = ToolContext(cwd=Path({str(tmp_path)!r}), env=dict(os.environ))
shell.run(shell.Args(command="echo warm"), ctx)
before = hwm_kib()
res = shell.run(shell.Args(command="yes | head -c 200000000"), ctx)
print(json.dumps({{"growth_kib": hwm_kib() - before, "exit": res.item["exit_code"],
                  "agg_len": len(res.item["aggregated_output"]), "out": res.output[-300:]}}))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["exit"] == 0
    assert data["growth_kib"] < 60 * 1024
    assert data["agg_len"] < 200_000
    assert data["out"].endswith("y\ny\n")


def test_progress_receives_growing_output(tmp_path):
    seen: list[str] = []
    ctx = ToolContext(cwd=tmp_path, env=child_env(os.environ), progress=lambda p: seen.append(p["aggregated_output"]))
    res = run(ctx, "for i in 1 2 3 4 5; do echo line$i; sleep 0.2; done")
    final = res.item["aggregated_output"]
    assert final == "".join(f"line{i}\n" for i in range(1, 6))
    assert len(seen) >= 3
    assert all(final.startswith(text) for text in seen)
    assert all(len(a) < len(b) for a, b in zip(seen, seen[1:]))


def test_progress_exception_still_kills_the_command(tmp_path):
    def boom(_payload):
        raise RuntimeError("sink broke")

    ctx = ToolContext(cwd=tmp_path, env=child_env(os.environ), progress=boom)
    pidfile = tmp_path / "pid"
    with pytest.raises(RuntimeError):
        run(ctx, f"echo $$ > {pidfile}; echo x; sleep 300")
    assert not pid_alive(read_pid(pidfile))


# --- environment --------------------------------------------------------------------------

def test_secrets_are_not_inherited(tmp_path, monkeypatch):
    monkeypatch.setenv("FOO_API_KEY", "sk-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    monkeypatch.setenv("FOO_VISIBLE", "plain")
    ctx = ToolContext(cwd=tmp_path, env=child_env(os.environ))
    res = run(ctx, 'echo "[$FOO_API_KEY][$GITHUB_TOKEN][$FOO_VISIBLE]"')
    assert res.item["aggregated_output"] == "[][][plain]\n"


def test_context_env_is_used_as_given(tmp_path):
    ctx = ToolContext(cwd=tmp_path, env={"PATH": os.environ["PATH"], "ONLY_THIS": "1"})
    res = run(ctx, 'echo "$ONLY_THIS-${HOME:-nohome}"')
    assert res.item["aggregated_output"] == "1-nohome\n"


def test_child_env_patterns():
    base = {"OPENAI_API_KEY": "x", "my_token": "x", "AWS_SECRET_ACCESS_KEY": "x",
            "DB_PASSWORD": "x", "PATH": "/bin", "TOKENIZERS_PARALLELISM": "false"}
    assert child_env(base) == {"PATH": "/bin", "TOKENIZERS_PARALLELISM": "false"}
    assert child_env(base, ["PATH"]) == {k: v for k, v in base.items() if k != "PATH"}
    assert is_secret_name("anthropic_api_key", DEFAULT_STRIP_PATTERNS)
    assert not is_secret_name("HOME")


# --- output buffer helpers ----------------------------------------------------------------

def test_head_tail_buffer_small_output_is_kept_whole():
    buf = HeadTailBuffer(8, 8)
    buf.write(b"abc")
    buf.write(b"defghijk")
    assert buf.dropped == 0
    assert buf.text() == "abcdefghijk"


def test_head_tail_buffer_keeps_ends_and_counts_dropped():
    buf = HeadTailBuffer(4, 6)
    data = bytes(range(48, 48 + 40))  # '0'..'W'
    for i in range(0, len(data), 3):
        buf.write(data[i:i + 3])
    buf.write(b"")
    assert buf.head == data[:4]
    assert buf.tail == data[-6:]
    assert buf.dropped == len(data) - 10
    assert buf.total == len(data)
    assert buf.text() == "0123\n[... 30 bytes truncated ...]\nRSTUVW"
    big = HeadTailBuffer(2, 3)
    big.write(b"0123456789")  # one chunk bigger than the tail
    assert (big.head, big.tail, big.dropped) == (b"01", b"789", 5)


def test_head_tail_buffer_does_not_split_characters_at_the_seams():
    buf = HeadTailBuffer(5, 5)
    buf.write("ééééé".encode() + b"x" * 20 + "ééé".encode())  # é is two bytes
    head, tail = buf.texts()
    assert head == "éé" and tail == "éé"
    assert "\ufffd" not in buf.text()


def test_truncate_middle():
    assert truncate_middle("short", 10) == "short"
    text = "".join(str(i % 10) for i in range(100))
    cut = truncate_middle(text, 20)
    assert cut == text[:10] + "\n[... 80 characters truncated ...]\n" + text[-10:]
    assert truncate_middle(text, 0) == "\n[... 100 characters truncated ...]\n"


def test_join_truncated_reports_omitted_even_when_short():
    assert join_truncated("ab", "cd", 10, omitted=5) == "ab\n[... 5 characters truncated ...]\ncd"
    # Unused budget on one side goes to the other.
    assert join_truncated("a", "0123456789", 6) == "a\n[... 5 characters truncated ...]\n56789"


def test_clean_terminal_text():
    raw = "\x1b[1;32mok\x1b[0m\ttab\x1b]8;;http://x\x07link\x1b]8;;\x07\r\nab\x08c\x00\x7f\x9b\n"
    assert clean_terminal_text(raw) == "ok\ttablink\nac\n"
    assert clean_terminal_text("abcdef\rXY") == "XYcdef"


def test_progress_carries_a_bounded_tail_not_everything(tmp_path):
    # A command printing continuously: each progress event holds at most the newest
    # PROGRESS_TAIL_BYTES and says how much came before; the result keeps head and tail.
    seen: list[str] = []
    ctx = ToolContext(cwd=tmp_path, env=child_env(os.environ),
                      progress=lambda p: seen.append(p["aggregated_output"]))
    res = run(ctx, "end=$((SECONDS+2)); while [ $SECONDS -lt $end ]; do "
                   "seq 1 2000; done; echo last-line")
    assert len(seen) >= 3
    limit = shell.PROGRESS_TAIL_BYTES + 60
    assert all(len(text) <= limit for text in seen), max(map(len, seen))
    assert any(text.startswith("[... ") and " earlier bytes ...]\n" in text for text in seen)
    assert sum(map(len, seen)) < 40 * limit
    assert res.item["aggregated_output"].endswith("last-line\n")
    assert res.item["aggregated_output"].startswith("1\n2\n3\n")
