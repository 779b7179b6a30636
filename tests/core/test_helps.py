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
