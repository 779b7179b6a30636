"""The sandbox on a platform that does not have it (README: Platforms). Landlock, seccomp,
namespaces and the supervisor are Linux's: elsewhere a restricted mode is refused in one
line before anything runs, and danger-full-access works. Other platforms are simulated
(the decision is `policy.platform_supported`, which asks platform.system(); the CLI's
process is told it runs on Darwin), so these run on Linux and, unlike the rest of
tests/sandbox/, need no Landlock."""
from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from baseagent import Agent
from baseagent.errors import ConfigError
from baseagent.sandbox import SANDBOX_MODES, policy
from baseagent.testing.deterministic import DeterministicClient
from helpers import AGENT, REPO, agent_env

RESTRICTED = [mode for mode in SANDBOX_MODES if mode != "danger-full-access"]


@pytest.fixture
def elsewhere(monkeypatch) -> None:
    """This process as on a platform without the sandbox (macOS, say)."""
    monkeypatch.setattr(policy, "platform_supported", lambda: False)


def shell(command: str) -> dict:
    return {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}


def agent(workspace: Path, sandbox: str, steps: list[dict]) -> Agent:
    return Agent(model_client=DeterministicClient(steps), cwd=workspace, sandbox=sandbox,
                 session=False, verify=False, env={"PATH": os.environ["PATH"]})


def test_linux_is_the_platform_with_the_sandbox():
    on_linux = platform.system() == "Linux"
    assert policy.platform_supported() is on_linux
    assert all((policy.unsupported_mode(mode) is None) is on_linux for mode in RESTRICTED)


@pytest.mark.parametrize("mode", RESTRICTED)
def test_elsewhere_a_restricted_mode_is_one_line_naming_the_way_out(elsewhere, mode):
    reason = policy.unsupported_mode(mode)
    assert reason is not None and "\n" not in reason
    assert reason.startswith(f"sandbox mode {mode} needs Linux")
    assert "--sandbox danger-full-access" in reason
    assert policy.unsupported_mode("danger-full-access") is None


@pytest.mark.parametrize("mode", RESTRICTED)
def test_elsewhere_an_agent_in_a_restricted_mode_is_refused_before_it_runs(
        elsewhere, workspace, mode):
    client_steps = [shell("echo ran > ran.txt"), {"content": "done"}]
    with pytest.raises(ConfigError, match=f"^sandbox mode {mode} needs Linux"):
        agent(workspace, mode, client_steps)
    assert list(workspace.iterdir()) == []  # nothing ran


def test_elsewhere_danger_full_access_runs_commands(elsewhere, workspace):
    with agent(workspace, "danger-full-access",
               [shell("echo ran > ran.txt"), {"content": "done"}]) as running:
        result = running.run("write ran.txt")
    assert result.status == "completed", result
    assert (workspace / "ran.txt").read_text() == "ran\n"


def test_on_linux_a_restricted_mode_is_not_refused(workspace):
    if platform.system() != "Linux":
        pytest.skip("the Linux half of the decision")
    # built, not run: whether Landlock is there is tests/sandbox/test_sandbox.py's business
    agent(workspace, "read-only", [{"content": "done"}]).close()


# The CLI, as a person on macOS meets it: its process believes it is not on Linux.
ON_DARWIN = ("import platform, runpy, sys; platform.system = lambda: 'Darwin'; "
             "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")


def test_the_cli_elsewhere_refuses_a_restricted_mode_in_one_line(workspace, home):
    proc = subprocess.run(
        [sys.executable, "-c", ON_DARWIN, str(AGENT), "--sandbox", "workspace-write",
         "--model", "openai/scripted", "--api-base", "http://127.0.0.1:9/v1", "--json",
         "-i", "touch x"],
        cwd=workspace, env=agent_env(home), capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL)
    assert (proc.returncode, proc.stdout) == (2, "")
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0] == (
        "baseagent: error: sandbox mode workspace-write needs Linux (Landlock, seccomp and "
        "namespaces confine the commands) and this is Darwin: use --sandbox "
        "danger-full-access (sandbox = \"danger-full-access\" in config.toml), or run "
        "baseagent in a Linux VM or container")
    assert list(workspace.iterdir()) == []


def test_the_sandbox_imports_where_libc_has_no_prctl(tmp_path):
    """macOS's libc has no prctl: the tools (which import the sandbox) must still import,
    and asking prctl for something is an OSError, not an AttributeError at import."""
    code = (
        "import ctypes\n"
        "real = ctypes.CDLL\n"
        "class NoPrctl:\n"
        "    def __init__(self, *a, **k): self._lib = real(*a, **k)\n"
        "    def __getattr__(self, name):\n"
        "        if name == 'prctl': raise AttributeError(name)\n"
        "        return getattr(self._lib, name)\n"
        "ctypes.CDLL = NoPrctl\n"
        "import baseagent.tools.tool, baseagent.tools.shell\n"
        "from baseagent.sandbox import landlock\n"
        "try:\n"
        "    landlock.set_no_new_privs()\n"
        "except OSError as exc:\n"
        "    print('refused:', type(exc).__name__, exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("refused: LandlockError")
    assert proc.stdout.strip().endswith("prctl is not available on this platform"), \
        proc.stdout


def test_elsewhere_the_confining_defaults_do_not_apply(elsewhere, workspace):
    """The terminal's workspace-write/on-request and exec's read-only are defaults, not a
    choice: off Linux they give way to full access instead of refusing every run."""
    from baseagent.config.load import load_settings, with_person_present
    from baseagent.exec_cli import exec_defaults

    empty = workspace / "empty.toml"  # not the user's ~/.baseagent/config.toml
    empty.write_text("")
    settings = load_settings({"cwd": workspace}, env={}, config_file=empty)
    assert with_person_present(settings).sandbox == "danger-full-access"
    assert with_person_present(settings).approval_policy == "never"
    assert exec_defaults(settings).sandbox == "danger-full-access"
    chosen = load_settings({"cwd": workspace, "sandbox": "read-only"}, env={},
                           config_file=empty)
    assert exec_defaults(chosen).sandbox == "read-only"  # asked for: refused at the run


def test_on_linux_the_confining_defaults_apply(workspace):
    from baseagent.config.load import load_settings, with_person_present
    from baseagent.exec_cli import exec_defaults

    empty = workspace / "empty.toml"  # not the user's ~/.baseagent/config.toml
    empty.write_text("")
    settings = load_settings({"cwd": workspace}, env={}, config_file=empty)
    present = with_person_present(settings)
    assert (present.sandbox, present.approval_policy) == ("workspace-write", "on-request")
    assert exec_defaults(settings).sandbox == "read-only"
    chosen = load_settings({"cwd": workspace, "approval_policy": "untrusted"}, env={},
                           config_file=empty)
    assert with_person_present(chosen).approval_policy == "untrusted"
