"""The two agents under test: how each is launched, scripted and (for the peer) installed.

Both are driven by the same scripted server with the same command per step; only the tool
name and the way each ends differ, because those are part of each agent's protocol.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
AGENT = REPO / "agent.py"
PEER_VENV = BENCH / ".peer-venv"
# The peer release the issue names; its tool calls work with our litellm pin (1.105.0).
PEER_PACKAGE = "mini-swe-agent==2.4.6"
# A model name litellm does not know: no cost lookup succeeds, for either agent.
MODEL = "openai/bench-model"
TASK = "Run the commands the model asks for."
# The peer ends when a command prints this as its first output line.
PEER_SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
# Steps the agent may take beyond the scripted ones (verification, a compaction call).
ITERATION_HEADROOM = 10

Responder = Callable[[dict, int], "dict | None"]


def litellm_pin() -> str:
    """Our own litellm requirement, read from pyproject so the peer always gets the same."""
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    for dep in data["project"]["dependencies"]:
        if dep.replace(" ", "").startswith("litellm=="):
            return dep.replace(" ", "")
    raise RuntimeError("pyproject.toml has no exact litellm pin")


def base_env(home: Path) -> dict[str, str]:
    """The environment both agents get: a private HOME, a dummy key, no remote cost map.

    LITELLM_LOCAL_MODEL_COST_MAP is set for every process (ours sets it itself anyway):
    without it litellm fetches its price list from the internet at import, and on an
    offline machine it retries for seconds, which would measure the network, not the agent.
    """
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BASEAGENT_", "MSWEA_", "OPENAI_", "LITELLM_"))}
    env.update({"HOME": str(home), "OPENAI_API_KEY": "dummy",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    return env


# -- scripts -----------------------------------------------------------------------------------

def _counting_responder(steps: int, tool_name: str, command: str,
                        finish: Callable[[], dict]) -> Responder:
    """`steps` tool calls running `command`, then `finish()` for every later request.

    Requests without tools (a compaction summary, say) get a plain answer and do not count
    as steps, so an agent that summarises its history still plays the same script.
    """
    served = 0

    def respond(body: dict, _index: int) -> dict:
        nonlocal served
        if not body.get("tools"):
            return {"content": "Summary: the commands ran.", "_kind": "other"}
        if served < steps:
            served += 1
            return {"tool_calls": [{"name": tool_name, "arguments": {"command": command}}],
                    "_kind": "step"}
        return {**finish(), "_kind": "final"}

    return respond


def ours_responder(steps: int, command: str) -> Responder:
    return _counting_responder(steps, "shell", command, lambda: {"content": "Done."})


def peer_responder(steps: int, command: str) -> Responder:
    return _counting_responder(
        steps, "bash", command,
        lambda: {"tool_calls": [{"name": "bash", "arguments": {"command": f"echo {PEER_SUBMIT}"}}]})


# -- command lines -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Agent:
    name: str
    help_cmd: list[str]
    session_cmd: Callable[[str, int, Path], list[str]]  # (api_base, steps, workdir) -> argv
    responder: Callable[[int, str], Responder]
    spawn: tuple[list[str], bool]  # how its shell tool starts a command: (argv, shell=True?)
    extra_env: dict[str, str]


def ours() -> Agent:
    def session(api_base: str, steps: int, _work: Path) -> list[str]:
        return [sys.executable, str(AGENT), "--model", MODEL, "--api-base", api_base, "--json",
                "--max-iterations", str(steps + ITERATION_HEADROOM), "--instruction", TASK]

    return Agent("baseagent", [sys.executable, str(AGENT), "--help"], session, ours_responder,
                 (["bash", "-c", "true"], False), {})


def peer() -> Agent:
    mini = str(PEER_VENV / "bin" / "mini")

    def session(api_base: str, _steps: int, work: Path) -> list[str]:
        return [mini, "-y", "--exit-immediately", "-m", MODEL, "-t", TASK, "-c", "mini.yaml",
                "-c", f"model.model_kwargs.api_base={api_base}", "-o", str(work / "traj.json")]

    return Agent("mini-swe-agent", [mini, "--help"], session, peer_responder,
                 (["true"], True),
                 {"MSWEA_CONFIGURED": "true", "MSWEA_COST_TRACKING": "ignore_errors"})


# -- peer installation -------------------------------------------------------------------------

def peer_versions() -> tuple[str, str] | None:
    """(mini-swe-agent, litellm) versions installed in the peer venv, or None."""
    python = PEER_VENV / "bin" / "python"
    if not python.exists():
        return None
    probe = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; "
         "print(m.version('mini-swe-agent'), m.version('litellm'))"],
        capture_output=True, text=True, check=False)
    parts = probe.stdout.split()
    return (parts[0], parts[1]) if probe.returncode == 0 and len(parts) == 2 else None


def ensure_peer(log: Callable[[str], None]) -> tuple[str, str]:
    """Create bench/.peer-venv with the peer and our litellm pin, unless it is already right."""
    want = (PEER_PACKAGE.split("==")[1], litellm_pin().split("==")[1])
    have = peer_versions()
    if have == want:
        return have
    log(f"installing {PEER_PACKAGE} with {litellm_pin()} into {PEER_VENV} (one time, ~2 min)")
    if not (PEER_VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
    # pip compiles bytecode at install, as any user's install would.
    subprocess.run([str(PEER_VENV / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    PEER_PACKAGE, litellm_pin()], check=True)
    have = peer_versions()
    if have != want:
        raise RuntimeError(f"peer venv has {have}, wanted {want}")
    return have


# -- Aider, a peer row of bench/exercises.py ----------------------------------------------------

AIDER_VENV = BENCH / ".aider-venv"
# The release the issue names; it installs on Python 3.11 in a venv of its own (its pins
# would fight ours: litellm, openai, numpy ...).
AIDER_PACKAGE = "aider-chat==0.86.2"


def aider_version() -> str | None:
    """The aider-chat version installed in bench/.aider-venv, or None."""
    python = AIDER_VENV / "bin" / "python"
    if not python.exists():
        return None
    probe = subprocess.run([str(python), "-c", "import importlib.metadata as m; "
                            "print(m.version('aider-chat'))"],
                           capture_output=True, text=True, check=False)
    return probe.stdout.strip() if probe.returncode == 0 and probe.stdout.strip() else None


def ensure_aider(log: Callable[[str], None]) -> str:
    """Create bench/.aider-venv with aider-chat, unless it is already there."""
    want = AIDER_PACKAGE.split("==")[1]
    if aider_version() == want:
        return want
    log(f"installing {AIDER_PACKAGE} into {AIDER_VENV} (one time, a few minutes)")
    if not (AIDER_VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(AIDER_VENV)], check=True)
    subprocess.run([str(AIDER_VENV / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    AIDER_PACKAGE], check=True)
    have = aider_version()
    if have != want:
        raise RuntimeError(f"aider venv has {have}, wanted {want}")
    return have
