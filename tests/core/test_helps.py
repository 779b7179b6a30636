"""The helps for weak models behind their one contract (helps/contract.py): the loop knows
only the contract, each help is a TurnHelp, and the composition root's list follows the
prompt profile."""
from __future__ import annotations

import ast

from baseagent.helps import for_profile
from baseagent.helps.contract import TurnHelp
from baseagent.helps.named_files import NamedFiles
from baseagent.helps.nudges import Nudges
from baseagent.helps.probe import Probe
from baseagent.helps.prose_code import ProseCode
from baseagent.helps.stumbles import Stumbles
from helpers import REPO

SRC = REPO / "src" / "baseagent"


def imported_modules(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_the_loop_imports_the_contract_and_no_help():
    helps = {m for m in imported_modules(SRC / "core" / "loop.py")
             if m.startswith("baseagent.helps")}
    assert helps == {"baseagent.helps.contract"}


def test_no_help_imports_the_loop():
    for path in (SRC / "helps").glob("*.py"):
        assert "baseagent.core.loop" not in imported_modules(path), path.name


def test_the_profiles_compose_their_helps_in_order():
    def kinds(helps):
        return [type(h) for h in helps]

    assert kinds(for_profile()) == [Stumbles, ProseCode, Nudges]
    assert kinds(for_profile("apply", show_named_files=True, probe=True)) == [
        Stumbles, Probe, NamedFiles, ProseCode, Nudges]
    # The probe writes through the prose-code help: without "apply" there is none.
    assert kinds(for_profile("tell", probe=True)) == [Stumbles, ProseCode, Nudges]
    assert kinds(for_profile("off")) == [Stumbles, Nudges]
    assert all(TurnHelp in type(h).__mro__ for h in for_profile("apply", True, True))


def test_a_help_overrides_only_the_hooks_it_uses():
    class Quiet(TurnHelp):
        pass

    help = Quiet()
    assert help.start_turn(None, "task") == "task"  # type: ignore[arg-type]
    assert help.before_first_step(None) is None  # type: ignore[arg-type]
    assert help.after_reply(None, None) is False  # type: ignore[arg-type]


def test_test_runs_get_a_few_times_the_first_run_within_bounds():
    from baseagent.helps.test_time import TestClock, timed_out

    clock = TestClock()
    assert clock.timeout_ms(120_000) is None  # nothing timed yet: the shell's default
    assert clock.timeout_s(120_000) == 120.0  # the probes' own runs: the cap itself
    clock.saw("Exit code: 124\nWall time: 120.0 seconds\nOutput:\n"
              "command timed out after 120000 milliseconds")
    assert clock.reference is None  # a run that was stopped times nothing
    clock.saw("Exit code: 1\nWall time: 0.2 seconds\nOutput:\n1 failed in 0.01s")
    assert clock.timeout_ms(120_000) == 5_000  # the floor
    assert clock.timeout_s(120_000) == 5.0
    clock.saw("Exit code: 0\nWall time: 9.0 seconds\nOutput:\n")  # the first run stands
    assert clock.timeout_ms(120_000) == 5_000
    clock.reset()
    clock.saw("Exit code: 0\nWall time: 40.0 seconds\nOutput:\n")
    assert clock.timeout_ms(120_000) == 120_000  # never past the shell's own
    assert timed_out("...\ncommand timed out after 5000 milliseconds") == 5.0
