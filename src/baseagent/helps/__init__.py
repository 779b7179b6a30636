"""Helps for a model that needs them (small local models most of all), one module each,
behind one contract (helps/contract.py) that the loop calls at named points of a turn.

- stumbles.py: a reply that is not an answer (empty, cut off, repeating, an unreadable
  call) gets a note, never a resend; the turn ends when it keeps happening.
- probe.py: the compact profile's whole-file probe before the conversation, and its search
  with the tests (its messages and best attempt: probe_plan.py; the scratch copy where
  candidates are tested: scratch.py; a test run's counts and failures: test_report.py; how
  long a test run may take, and a stopped one reported as likely looping: test_time.py).
- named_files.py: the files the task names, shown with it (the compact profile).
- localised_code.py: with a task that names no file, the code its names lead to (ranked by
  localise.py) shown with it (the compact profile).
- repo_probe.py: for such a task with a test command, the issue and that code once without
  tools, answered with SEARCH/REPLACE edits (edit_form.py), kept only if the issue's example
  (reproduction.py) and the suite pass (the compact profile).
- prose_code.py: code left in a reply's text, written to its file or the model told
  (which blocks are whole files: code_blocks.py; SEARCH/REPLACE edits, checked before
  they are written: edit_form.py).
- reproduction.py: an issue's reproduction as a check program (repro_runtime.py, with
  repro_trace.py or repro_values.py to watch the code) the agent runs before and after its
  change; a building block, not a help of its own.
- nudges.py: a reply that only announces its next step or echoes what it was shown (echo.py).

The loop knows only the contract; `for_profile` composes the list the composition root
(compose/) hands it. This package imports core's leaves (evidence, turn), never
core/loop.py.
"""
from __future__ import annotations

from baseagent.helps.contract import TurnContext, TurnHelp
from baseagent.helps.localised_code import LocalisedCode
from baseagent.helps.named_files import NamedFiles
from baseagent.helps.nudges import Nudges
from baseagent.helps.probe import Probe
from baseagent.helps.probe_plan import MAX_REPAIR_ROUNDS, SEARCH_CANDIDATES
from baseagent.helps.repo_probe import RepoProbe
from baseagent.helps.prose_code import ProseCode, ProseCodeMode
from baseagent.helps.stumbles import Stumbles
from baseagent.helps.test_time import TestClock
from baseagent.tools.tool import DEFAULT_SHELL_TIMEOUT_MS

__all__ = ["TurnContext", "TurnHelp", "for_profile"]


def for_profile(prose_code: ProseCodeMode = "apply", show_named_files: bool = False,
                probe: bool = False, probe_rounds: int = MAX_REPAIR_ROUNDS,
                shell_timeout_ms: int = DEFAULT_SHELL_TIMEOUT_MS,
                localise: bool = False, repair_candidates: int = SEARCH_CANDIDATES,
                repair_temperature: float | None = 0.7) -> list[TurnHelp]:
    """The helps of a turn, in the order the loop calls them. The probe writes its files
    through the prose-code help, so it comes only with prose_code "apply"; it sees the task
    before the named files are added to it. Both time their test runs with one clock, never
    longer than `shell_timeout_ms` (the shell's default). The probes' search rounds draw
    `repair_candidates` each, sampled at `repair_temperature` (None: the run's).
    `localise`: a task that names no file gets the code its names lead to shown with it,
    and with `probe` and a test command the repository probe before the conversation."""
    clock = TestClock()
    helps: list[TurnHelp] = [Stumbles()]
    if probe and prose_code == "apply":
        helps.append(Probe(probe_rounds, clock, repair_candidates, repair_temperature,
                           shell_timeout_ms))
    if show_named_files:
        helps.append(NamedFiles())
    localised = LocalisedCode() if localise else None
    if localised is not None:
        helps.append(localised)
        if probe:
            helps.append(RepoProbe(localised, clock, shell_timeout_ms=shell_timeout_ms,
                                   candidates=repair_candidates,
                                   temperature=repair_temperature))
    if prose_code != "off":
        helps.append(ProseCode(prose_code, clock, shell_timeout_ms,
                               led_to=localised.named if localised is not None else None))
    helps.append(Nudges())
    return helps
