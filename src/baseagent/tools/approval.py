"""Approvals: when a command the model wants to run waits for a person's yes (Codex's model).

Four policies, with Codex's meaning:

- `untrusted`: commands on a known-safe allow-list of read-only programs and argument
  shapes (tools/safe_commands.py) run; any other asks first.
- `on-failure`: every command runs in the sandbox; one that fails the way a sandbox denial
  looks (a write refused, the network unreachable) is offered again, unconfined, to the
  person.
- `on-request`: commands run in the sandbox; the model may ask to run one outside it
  (`with_escalated_permissions` with a `justification` on the shell tool), and the person
  answers.
- `never`: nobody is asked; what the sandbox refuses fails, and the model sees why.

An answer allows the command once, allows its prefix (`git push`, `npm install`) for the
rest of the session, or declines it with a note the model reads. Who answers is the
entry's choice (an `Approver`): the terminal asks the person at the keyboard, a library
caller passes a function; a run with nobody to ask has policy `never`.

Each question and its answer is an `approval` item in the run's events (and so in the
JSONL and the session record).
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from baseagent.emitting import events as engine  # a leaf: it imports nothing of baseagent
# The known-safe allow-list (programs and argument shapes) lives beside, and is asked here.
from baseagent.tools.safe_commands import is_known_safe  # noqa: F401 (re-exported)

ApprovalPolicy = Literal["untrusted", "on-failure", "on-request", "never"]
APPROVAL_POLICIES: tuple[str, ...] = ("untrusted", "on-failure", "on-request", "never")
# Why a command waits: the model asked to leave the sandbox, it is not known to be safe, or
# it failed in the sandbox the way a denial looks; or (`write`) a file tool's write under
# `untrusted` leaves the workspace or goes into a protected path (tools/paths.py).
AskKind = Literal["escalation", "unsafe", "retry", "write"]
Decision = Literal["approved", "approved_for_session", "denied"]

# Shell syntax that writes, substitutes or backgrounds: a command holding it gets no
# session prefix (which commands are known safe is tools/safe_commands.py).
_UNSAFE_SYNTAX = re.compile(r"[><`\n]|\$\(|(?<!&)&(?!&)|\bexec\b")
_SEPARATORS = re.compile(r"&&|\|\||;|\|")

# Programs whose first argument is a subcommand: "allow for the session" allows that pair.
_SUBCOMMANDS = frozenset({"git", "npm", "pnpm", "yarn", "npx", "cargo", "go", "pip", "pip3",
                          "uv", "poetry", "docker", "podman", "kubectl", "apt", "apt-get",
                          "brew", "gh", "make", "dotnet", "gradle", "mvn", "bundle", "gem"})
# Words in a failed command's output that a sandbox denial leaves (Landlock and read-only
# mounts: EACCES/EROFS; seccomp's network refusal: EPERM on socket or connect).
_DENIAL_HINTS = ("permission denied", "read-only file system", "operation not permitted",
                 "network is unreachable", "temporary failure in name resolution",
                 "could not resolve host", "name or service not known")


@dataclass(frozen=True)
class ApprovalRequest:
    """A command waiting for a yes: what, where, why."""

    command: str
    cwd: str
    kind: AskKind
    reason: str = ""  # the model's justification, or what failed in the sandbox
    prefix: str = ""  # what "allow for this session" would allow


@dataclass(frozen=True)
class ApprovalAnswer:
    decision: Decision
    note: str = ""  # with a denial: what the model is told


class Approver(Protocol):
    """Answers one request (the terminal asks the person; a library passes a function)."""

    def __call__(self, request: ApprovalRequest) -> ApprovalAnswer: ...


# The approver that hands each question to the caller: the turn pauses (`requires_action`)
# with an `approval_request` pending call, and the caller's answer continues it (core/loop.py).
REQUIRES_ACTION = "requires_action"
# The name of that pending call.
APPROVAL_CALL = "approval_request"

# Reports a question (answer None) and then its answer, for the run's events.
Reporter = Callable[[ApprovalRequest, "ApprovalAnswer | None"], None]


@dataclass(frozen=True)
class Verdict:
    """What to do with a command: run it (confined or not), or not at all."""

    run: bool
    unconfined: bool = False
    note: str = ""


@dataclass
class Approvals:
    """A run's approval policy, who answers, and the prefixes allowed for the session."""

    policy: ApprovalPolicy = "never"
    approver: Approver | str | None = None  # or REQUIRES_ACTION
    report: Reporter = lambda _request, _answer: None
    allowed: list[tuple[str, ...]] = field(default_factory=list)
    # Answers given ahead, by command (the caller's, through requires_action): the next
    # question about that command takes it instead of asking.
    given: dict[str, ApprovalAnswer] = field(default_factory=dict)

    @property
    def escalation_offered(self) -> bool:
        """Whether the model may ask to leave the sandbox (the shell tool's extra fields)."""
        return self.policy == "on-request" and self.approver is not None

    @property
    def deferred(self) -> bool:
        """Questions go to the caller as pending calls (the turn pauses before the command)."""
        return self.approver == REQUIRES_ACTION

    def question(self, command: str, cwd: str, *, confined: bool, escalate: bool = False,
                 justification: str = "") -> ApprovalRequest | None:
        """The question a command would wait on before it runs (None: it runs at once)."""
        if escalate and confined and self.escalation_offered:
            kind: AskKind = "escalation"
        elif self.policy == "untrusted" and not is_known_safe(command):
            kind = "unsafe"
        else:
            return None
        if command not in self.given and self._allowed(command):
            return None
        return ApprovalRequest(command, cwd, kind, justification, session_prefix(command))

    def give(self, command: str, answer: ApprovalAnswer) -> None:
        """The caller answered the question about `command` ahead of running it."""
        self.given[command] = answer

    def before(self, command: str, cwd: str, *, confined: bool, escalate: bool = False,
               justification: str = "") -> Verdict:
        """Before a command runs: may it, and inside the sandbox or outside?"""
        if escalate and confined and not self.escalation_offered:
            return Verdict(True, note="Note: running outside the sandbox is not available "
                                      f"(approval policy {self.policy}); the command ran "
                                      "in the sandbox.")
        request = self.question(command, cwd, confined=confined, escalate=escalate,
                                justification=justification)
        if request is None:
            return Verdict(True, unconfined=escalate and confined and self.escalation_offered)
        return self._ask(request, unconfined=request.kind == "escalation")

    def retry_unconfined(self, command: str, cwd: str, *, output: str, exit_code: int | None
                         ) -> Verdict | None:
        """After a confined command failed: under `on-failure`, when the failure looks like
        the sandbox's doing, whether to run it again outside (None: no question)."""
        if self.policy != "on-failure" or self.approver is None or self.deferred \
                or exit_code in (0, None) or not looks_denied(output):
            return None
        reason = f"it failed in the sandbox (exit code {exit_code}): {_last_line(output)}"
        return self._ask(ApprovalRequest(command, cwd, "retry", reason,
                                         session_prefix(command)), unconfined=True)

    def _ask(self, request: ApprovalRequest, *, unconfined: bool) -> Verdict:
        given = self.given.pop(request.command, None)
        if given is not None:  # reported when it was given
            return self._follow(request, given, unconfined)
        if self._allowed(request.command):
            return Verdict(True, unconfined=unconfined)
        self.report(request, None)
        if self.approver is None:  # nobody to ask: what needs a yes does not run
            answer = ApprovalAnswer("denied", "nobody is there to approve it")
        elif not callable(self.approver):  # the caller answers only before a command runs
            answer = ApprovalAnswer("denied", "no one can be asked at this point")
        else:
            try:
                answer = self.approver(request)
            except (EOFError, KeyboardInterrupt):
                answer = ApprovalAnswer("denied", "no answer")
        self.report(request, answer)
        return self._follow(request, answer, unconfined)

    def _follow(self, request: ApprovalRequest, answer: ApprovalAnswer,
                unconfined: bool) -> Verdict:
        if answer.decision == "approved_for_session" and request.prefix:
            self.allowed.append(tuple(shlex.split(request.prefix)))
        if answer.decision == "denied":
            return Verdict(False, note=answer.note)
        return Verdict(True, unconfined=unconfined)

    def _allowed(self, command: str) -> bool:
        words = _words(command)
        return words is not None and any(tuple(words[:len(p)]) == p for p in self.allowed)


def ask_to_write(approvals: Approvals, what: str, cwd: str, reason: str) -> Verdict:
    """A file tool's write that waits for a yes under `untrusted` (tools/paths.py decides
    which): asked like a command (`what` names the tool and the paths), allowed once at
    most (no session prefix), never outside the sandbox."""
    return approvals._ask(ApprovalRequest(what, cwd, "write", reason), unconfined=False)


def auto_approved(approvals: Approvals | None, command: str) -> bool:
    """Whether `command` runs under `untrusted` without anyone's yes (known to be safe):
    such a command's git runs with the repository's programs turned off (tools/shell.py,
    tools/confined.py `git_override_env`), since no person looked at what it may start."""
    return approvals is not None and approvals.policy == "untrusted" \
        and is_known_safe(command)


def declined_text(note: str) -> str:
    """What the model reads of a command the person declined (the shell's result, or the
    loop's for a command held for the caller's answer)."""
    told = f" Their note: {note}" if note else ""
    return (f"Error: the user declined to run this command.{told} Do not run it again; find "
            "another way, or ask the user in your answer.")


def approval_item(item_id: str, request: ApprovalRequest,
                  answer: ApprovalAnswer | None = None) -> engine.ApprovalItem:
    """The engine's item for a question (answer None: still waiting) or its answer."""
    return engine.ApprovalItem(
        id=item_id, command=request.command, cwd=request.cwd, kind=request.kind,
        reason=request.reason, prefix=request.prefix,
        decision=answer.decision if answer is not None else None,
        note=answer.note if answer is not None else "")


def parse_decision(text: str) -> ApprovalAnswer | None:
    """A caller's answer to a pending approval: `approved`, `approved_for_session`,
    `denied` or `denied: NOTE`, or that as JSON `{"decision": ..., "note": ...}`."""
    import json

    stripped = text.strip()
    try:
        data = json.loads(stripped)
    except ValueError:
        data = None
    if isinstance(data, dict):
        decision, note = data.get("decision"), data.get("note") or ""
    else:
        decision, _, note = stripped.partition(":")
        decision = decision.strip()
    if decision not in ("approved", "approved_for_session", "denied") \
            or not isinstance(note, str):
        return None
    return ApprovalAnswer(decision, note.strip())  # type: ignore[arg-type]


def session_prefix(command: str) -> str:
    """What "allow for this session" allows: the program and, for a program known to take
    one, its subcommand (`git push`, `npm install`, `python3 -m pytest`, `mkdir`). Nothing
    for compound commands."""
    if _SEPARATORS.search(command) or _UNSAFE_SYNTAX.search(command):
        return ""
    words = _words(command)
    if not words:
        return ""
    name = words[0].rsplit("/", 1)[-1]
    if name in _SUBCOMMANDS and len(words) > 1 and re.fullmatch(r"[a-z][a-z0-9-]*", words[1]):
        return shlex.join(words[:2])
    if re.fullmatch(r"python3?(\.\d+)?", name) and len(words) > 2 and words[1] == "-m":
        return shlex.join(words[:3])
    return shlex.join(words[:1])


def looks_denied(output: str) -> bool:
    text = output.lower()
    return any(hint in text for hint in _DENIAL_HINTS)


def _words(command: str) -> list[str] | None:
    try:
        return shlex.split(command)
    except ValueError:
        return None


def _last_line(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""
