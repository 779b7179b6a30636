"""The kernel sandbox (Landlock + seccomp): what commands and file tools may touch, end to
end through the CLI, and the pieces (policy, confinement to one thread)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from baseagent.sandbox import landlock
from baseagent.sandbox.policy import Policy, confine, unavailable_notice
from baseagent.tools import write_file
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ToolError
from helpers import run_agent
from reliability import shell

# This machine's kernel has Landlock (ABI 7); CI runs on the same kind of machine.
pytestmark = pytest.mark.skipif(landlock.abi() < 1 and not os.environ.get("CI"),
                                reason="no Landlock on this kernel")


@pytest.fixture
def outside():
    """A directory outside the workspace and outside every temp dir."""
    path = Path(tempfile.mkdtemp(prefix="baseagent-outside-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def commands(outside: Path, port: int) -> str:
    return (f"echo in > inside.txt && echo wrote-inside; "
            f"echo out > {outside}/out.txt && echo wrote-outside; "
            f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected; "
            f"python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)' "
            f"2>/dev/null && echo udp; true")


@pytest.mark.parametrize("mode, flags, expected", [
    ("danger-full-access", [], ["wrote-inside", "wrote-outside", "connected", "udp"]),
    ("workspace-write", [], ["wrote-inside"]),
    ("workspace-write", ["--sandbox-network"], ["wrote-inside", "connected", "udp"]),
    ("read-only", [], []),
])
def test_the_sandbox_binds_commands(scripted_server, workspace, home, outside, mode, flags,
                                    expected):
    server = scripted_server([])
    server.extend([{"tool_calls": [shell(commands(outside, server.port))]},
                   {"content": "done"}, {"content": "verified"}])
    run = run_agent(["--sandbox", mode, *flags, "-i", "try"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    output = run.completed_items("command_execution")[0]["aggregated_output"]
    shown = [w for w in ("wrote-inside", "wrote-outside", "connected", "udp") if w in output]
    assert shown == expected, output
    assert (outside / "out.txt").exists() == ("wrote-outside" in expected)
    if mode != "danger-full-access":
        # Landlock's refusal, or (where the supervisor could make one) the read-only mount's
        assert "Permission denied" in output or "Read-only file system" in output
    assert "warning" not in run.stderr


def test_exec_config_key_turns_the_network_on(scripted_server, workspace, home, outside):
    server = scripted_server([])
    server.extend([{"tool_calls": [shell(commands(outside, server.port))]},
                   {"content": "done"}, {"content": "verified"}])
    run = run_agent(["exec", "--json", "--sandbox", "workspace-write", "-c",
                     f'openai_base_url="{server.api_base}"', "-m", "openai/scripted",
                     "-c", "sandbox_workspace_write.network_access=true", "try"],
                    cwd=workspace, home=home)
    assert run.returncode == 0, run.stderr
    output = run.completed_items("command_execution")[0]["aggregated_output"]
    assert "connected" in output and "wrote-outside" not in output


def test_a_symlink_swapped_in_after_the_check_cannot_carry_a_write_out(tmp_path, outside,
                                                                      monkeypatch):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    ctx = ToolContext(cwd=ws, sandbox="workspace-write", env={"TMPDIR": str(ws)})
    real_stat = write_file._stat_or_none

    def swap_then_stat(path):
        # Between the tool's path check and its write, `sub` becomes a link outside.
        shutil.rmtree(ws / "sub")
        (ws / "sub").symlink_to(outside, target_is_directory=True)
        return real_stat(path)

    monkeypatch.setattr(write_file, "_stat_or_none", swap_then_stat)
    # The directory held for the write is not the one checked (tools/paths.held_parent);
    # were it taken anyway, Landlock would refuse (Permission denied).
    with pytest.raises(ToolError, match="Permission denied|directory changed"):
        write_file.run(write_file.Args(file_path="sub/f.txt", content="x"), ctx)
    assert list(outside.iterdir()) == []


def test_confinement_is_the_threads_not_the_agents(tmp_path, outside):
    policy = Policy.build("read-only", tmp_path)
    with pytest.raises(PermissionError):
        confine(policy, lambda: (outside / "x").write_text("x"))
    with pytest.raises(PermissionError):
        confine(policy, lambda: socket.socket(socket.AF_INET6))
    assert confine(policy, lambda: socket.socket(socket.AF_UNIX).close()) is None
    # this thread, and the process, are as they were
    (outside / "x").write_text("x")
    socket.socket(socket.AF_INET).close()
    assert subprocess.run(["bash", "-c", f"echo y > {outside}/y"]).returncode == 0


def test_policy_roots_and_the_fallback_notice(tmp_path, monkeypatch):
    extra = tmp_path / "extra"
    extra.mkdir()
    (tmp_path / "ws").mkdir()
    policy = Policy.build("workspace-write", tmp_path / "ws", [extra, tmp_path / "missing"],
                          {"TMPDIR": "/tmp"})
    # the roots that exist, resolved once; a missing one grants nothing
    assert policy.writable == (tmp_path / "ws", extra, Path("/tmp"), Path("/dev/shm"))
    assert not policy.network and policy.enforced
    assert policy.allows_write(extra / "a") and not policy.allows_write(Path("/etc/x"))
    assert Policy.build("read-only", tmp_path).writable == ()
    assert not Policy.build("danger-full-access", tmp_path).restricted
    assert unavailable_notice("workspace-write") is None
    monkeypatch.setattr(landlock, "_abi_cache", 0)  # a kernel without Landlock
    assert not policy.enforced
    assert confine(policy, lambda: "ran unrestricted") == "ran unrestricted"
    assert unavailable_notice("read-only") == (
        "this kernel has no Landlock: --sandbox read-only binds the file tools only, "
        "not commands")
    assert unavailable_notice("danger-full-access") is None


def _user_namespaces() -> bool:
    try:
        return int(Path("/proc/sys/user/max_user_namespaces").read_text()) > 0 and \
            Path("/proc/sys/kernel/unprivileged_userns_clone").read_text().strip() != "0"
    except FileNotFoundError:
        return True  # no such switch: allowed
    except (OSError, ValueError):
        return False


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="runs the supervisor as another user (root switches to nobody)")
@pytest.mark.skipif(not _user_namespaces(), reason="unprivileged user namespaces are off")
def test_a_non_root_command_gets_its_mount_namespace_through_a_user_namespace(outside):
    """CI runs as root; as any other user the supervisor needs a user namespace to give a
    command its read-only mounts: run it as nobody and check the same guarantees."""
    from baseagent.sandbox.supervisor import executable

    supervisor = executable()
    if supervisor is None:
        pytest.skip("no C compiler for the supervisor")
    outside.chmod(0o755)
    binary = outside / "supervisor"
    shutil.copy(supervisor.path, binary)
    binary.chmod(0o755)
    workspace = outside / "ws"
    (workspace / ".git").mkdir(parents=True)
    for path in (workspace, workspace / ".git"):
        os.chown(path, 65534, 65534)
    mine = outside / "theirs.txt"  # a file of the same user, outside the roots
    mine.write_text("x")
    os.chown(mine, 65534, 65534)
    policy = Policy.build("workspace-write", workspace, env={"TMPDIR": str(workspace)})
    confinement = policy.supervisor_args()
    command = (f"id -u; echo a > f && echo wrote; echo b > .git/x || echo git-read-only; "
               f"chmod 600 {mine} || echo chmod-refused; grep CapEff /proc/self/status; "
               "kill -0 $PPID 2>/dev/null || echo supervisor-out-of-reach")
    try:
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", str(binary),
             *confinement.args, "-1", "-1", "500", "--", "bash", "-c", command],
            cwd=workspace, pass_fds=confinement.fds, capture_output=True, text=True,
            timeout=30)
    finally:
        confinement.close()
        policy.close()
    assert done.stdout.split("\n")[:1] == ["65534"], (done.stdout, done.stderr)
    for line in ("wrote", "git-read-only", "chmod-refused", "CapEff:\t0000000000000000",
                 "supervisor-out-of-reach"):
        assert line in done.stdout, (done.stdout, done.stderr)
    assert "Read-only file system" in done.stderr
    assert (stat_mode := os.stat(mine).st_mode & 0o777) == 0o644, oct(stat_mode)
