"""The read-run loop of the interactive session, over the library's Agent.

One `Agent` per thread. Every instruction the user enters is `agent.run()` on the same
thread, rendered by the terminal sink handed to the Agent. Ctrl-C during a turn calls
`agent.cancel()` (through the same SignalGuard the one-shot CLI uses) and the session goes
on; a second Ctrl-C before the turn has stopped exits at once. `/new` builds a new Agent,
`/resume ID` one with the recorded thread, `/model NAME` one on the same thread with
another model; `/cost` reads `agent.usage`.

The header is drawn before the agent (and litellm) is imported; the Agent starts importing
litellm in the background when it is built, so it is ready by the time the user has typed
the first instruction, and every later turn reaches the model at once.
"""
from __future__ import annotations

import gc
import os
import signal
import sys
from pathlib import Path
from typing import Any, Mapping

from baseagent.config.settings import Settings
from baseagent.errors import ConfigError, InputError
from baseagent.exit_codes import EXIT_OK, exit_code_for_signal

# Where the prompt keeps its history between sessions.
HISTORY_FILE = Path("~/.baseagent/prompt_history")
# Signals that end the session (after stopping the turn), as opposed to SIGINT (Ctrl-C),
# which only stops the turn.
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
# How many threads `/resume` alone offers, and the prompt that reads the choice.
RECENT_THREADS = 10
PICK_PROMPT = "resume which? (number or id, Enter: none) › "
APPROVAL_POLICIES = ("untrusted", "on-failure", "on-request", "never")
# What /init asks of the agent (the file is the agent's work: it reads the workspace first).
INIT_PROMPT = (
    "Write a file named AGENTS.md at the root of this workspace: a short guide for coding "
    "agents working here. Look at the workspace first (its layout, build and test files, "
    "README). Cover, in Markdown with brief sections: what the project is; how to set it up, "
    "build it and run its tests (the exact commands); where things are (the main "
    "directories and entry points); the conventions of its code and commits. Keep it under "
    "about 60 lines, state only what you found, and write nothing but AGENTS.md.")


def start(settings: Settings, *, resume: Any = None, notes: tuple[str, ...] | list[str] = (),
          env: Mapping[str, str] | None = None, first: str | None = None,
          images: Any = ()) -> int:
    """Run the interactive session until the user leaves; returns the exit code.
    `first`: the session's first message (`baseagent "TASK"` on a terminal), sent with
    `images` before the prompt is shown.

    Raises ConfigError before anything is drawn when the model string cannot work.
    """
    from baseagent.compose.builder import RunBuilder
    from baseagent.runner import early_header, terminal_caps

    env = os.environ if env is None else env
    # The first thread's builder checks the model string before anything slow is imported.
    from baseagent.interactive.approver import TerminalApprover

    approver = TerminalApprover()
    builder = RunBuilder(settings, env=env, approver=approver, person_present=True)
    builder.check_model_string()
    caps = terminal_caps(env)  # NO_COLOR, TERM: the header's and the renderer's
    thread_id = early_header(settings, resume, notes, caps)
    from baseagent.output.redact import install_stderr

    # Before litellm is imported (the Agent starts that): see runner.run.
    install_stderr(builder.redactor)

    from baseagent.output.pretty import PrettySink

    typeahead = _hold_typeahead()
    sink = PrettySink(caps=caps)
    session = InteractiveSession(settings, sink, env, approver=approver)
    session.open(settings, resume=resume, notes=notes, thread_id=thread_id, headed=True,
                 builder=builder, replay=True)
    from baseagent.interactive.commands import KEYS

    sink.message(KEYS + " · /help")
    try:
        code = session.loop(first, images)
        if code == EXIT_OK:  # the person left (Ctrl-D, /exit): how to come back
            session.farewell()
        return code
    finally:
        session.close()
        sink.close()
        typeahead()
        gc.freeze()  # teardown would walk litellm's objects for seconds (see runner.py)


def _hold_typeahead() -> Any:
    """Stop the terminal echoing what is typed before the prompt is up (or while a turn
    runs): the prompt shows it when it reads it, instead of the line being printed twice in
    the middle of the output. Ctrl-C keeps working (signals are untouched). Returns the
    function that puts the terminal back as it was."""
    from baseagent.interactive.terminal_mode import echo

    return echo(sys.stdin, shown=False)


# How much of a resumed thread is shown again before the prompt (`--resume`, `/resume`).
REPLAY_MESSAGES = 12
REPLAY_WIDTH = 100


def replay_lines(history: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The earlier conversation of a resumed thread, compactly: its last messages, the
    person's after the prompt mark and the agent's indented, one line each (the first line
    of the text, cut at REPLAY_WIDTH); the tool calls and their output are left out."""
    from baseagent.core.context.compaction import HEAD_MESSAGES
    from baseagent.interactive.prompt import PROMPT

    shown: list[tuple[str, str]] = []
    for message in history[HEAD_MESSAGES:]:
        text = _text_of(message.get("content")).strip()
        role = message.get("role")
        if not text or role not in ("user", "assistant"):
            continue
        first = text.splitlines()[0]
        more = len(first) > REPLAY_WIDTH or "\n" in text
        first = first[:REPLAY_WIDTH] + ("…" if more else "")
        shown.append((f"{PROMPT}{first}", "bold") if role == "user" else (f"  {first}", ""))
    if not shown:
        return []
    lines = [("earlier in this thread:", "dim")]
    if len(shown) > REPLAY_MESSAGES:
        lines.append((f"  … {len(shown) - REPLAY_MESSAGES} earlier messages "
                      "(baseagent sessions show ID: all of them)", "dim"))
    return lines + shown[-REPLAY_MESSAGES:]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content
                        if isinstance(part, dict) and part.get("type") == "text")
    return ""


class InteractiveSession:
    """The current thread's Agent and the loop that feeds it."""

    def __init__(self, settings: Settings, sink: Any, env: Mapping[str, str],
                 input_line: Any = None, approver: Any = None) -> None:
        self.settings = settings
        # Who answers approval questions (interactive/approver.py): the person, here.
        self.approver = approver
        self.sink = sink
        self.env = env
        self.agent: Any = None
        self._input = input_line
        self._resumed_turns = 0
        self._held_images: list[Any] = []  # --image with no task: for the first line
        self._exit_code: int | None = None

    # -- the thread's Agent ------------------------------------------------------------------

    def open(self, settings: Settings, *, resume: Any = None, notes: Any = (),
             thread_id: str | None = None, headed: bool = False, builder: Any = None,
             quiet: bool = False, replay: bool = False) -> None:
        """Make the Agent of a thread current (the previous one is closed). Raises
        ConfigError, leaving the current agent as it was, when the new one cannot be built
        (a model string that cannot work among them). `builder`: the run's, when start()
        began it (compose/builder.py RunBuilder)."""
        from baseagent.agent import Agent

        if builder is None:
            from baseagent.compose.builder import RunBuilder

            builder = RunBuilder(settings, env=self.env, approver=self.approver,
                                 person_present=True)
        agent = Agent.from_settings(settings, resume=resume, env=self.env, sinks=[self.sink],
                                    notes=notes, thread_id=thread_id, builder=builder)
        if self.agent is not None:
            self.agent.close()
        self.agent = agent
        turns = resume.turns if resume is not None else 0
        self.sink.bind_usage(lambda: agent.usage, turns)
        if headed:
            self.sink.headed(agent.thread_id)
        elif not quiet:
            self.sink.header(thread_id=agent.thread_id, model=settings.model,
                             cwd=str(settings.cwd), sandbox=settings.sandbox,
                             api_base=settings.api_base,
                             resumed_turns=turns if resume is not None else None, notes=notes)
        if replay and resume is not None:
            for line, style in replay_lines(resume.history):
                self.sink.message(line, style)

    def close(self) -> None:
        if self.agent is not None:
            self.agent.close()

    def farewell(self) -> None:
        """On leaving: the command that resumes the current thread (once it is recorded)."""
        from baseagent.runner import resume_hint

        if self.agent is None or not self._started(self.agent):
            return  # nothing said on this thread: nothing to come back to
        hint = resume_hint(self.agent.settings, self.agent.thread_id)
        if hint is not None:
            self.sink.message(hint, "")

    # -- the loop ----------------------------------------------------------------------------

    def loop(self, first: str | None = None, images: Any = ()) -> int:
        from baseagent.interactive.commands import UnknownCommand, instruction_text, parse

        if self._input is None:
            from baseagent.interactive.prompt import InputLine

            self._input = InputLine(HISTORY_FILE.expanduser(),
                                    workspace=lambda: Path(self.agent.settings.cwd))
        if first is not None:  # the seeded session: the task typed on the command line
            from baseagent.interactive.prompt import PROMPT

            self.sink.message(f"{PROMPT}{first}", "")
            self._send(first, images)
        elif images:  # --image without a task: sent with the first line typed
            self._held_images = list(images)
            self.sink.message(f"{len(images)} image(s) will go with your first message", "")
        from baseagent.interactive.prompt import EmptyLineInterrupt

        armed = False  # Ctrl-C was pressed at an empty prompt: a second one leaves
        while self._exit_code is None:
            try:
                line = self._input.read()
            except EmptyLineInterrupt:
                if armed:
                    return EXIT_OK
                armed = True
                self.sink.message("Ctrl-C again to leave (or Ctrl-D)", "dim")
                continue
            except KeyboardInterrupt:
                armed = False
                continue  # Ctrl-C at the prompt: the line is dropped, the session stays
            except EOFError:
                return EXIT_OK
            armed = False
            if not line.strip():
                continue
            try:
                command = parse(line)
            except UnknownCommand as exc:
                self.sink.message(str(exc), "yellow")
                continue
            if command is None:
                self._send(instruction_text(line))
            elif self.command(command.name, command.argument):
                return EXIT_OK
        return self._exit_code

    def _send(self, line: str, images: Any = ()) -> None:
        """A line the person typed, with the files it mentions (@path) and the images
        dropped on it attached (interactive/mentions.py)."""
        from baseagent.interactive.mentions import attach

        attached = attach(line, Path(self.agent.settings.cwd))
        images = [*self._held_images, *images]
        self._held_images = []
        for note in attached.notes:
            self.sink.message(note, "")
        self.turn(attached.text, [*images, *attached.images])

    def turn(self, instruction: str, images: Any = ()) -> None:
        """One turn of the current thread; Ctrl-C stops it and the session goes on."""
        from baseagent.signals import SignalGuard

        agent = self.agent
        turns_before = self.sink.turns
        guard = SignalGuard(agent).install()
        self.sink.waiting()
        try:
            result = agent.run(instruction, images=images)
        except (ConfigError, InputError) as exc:
            self.sink.stop_waiting()
            self.sink.message(f"error: {exc}", "red")
            return
        finally:
            guard.close()
        self.sink.stop_waiting()
        if self.sink.turns == turns_before and result.status == "interrupted":
            self.sink.message("■ interrupted before the model was reached", "yellow")
        if agent.checkpoint_note:  # a workspace too big to record: /undo cannot reach back
            self.sink.message(agent.checkpoint_note, "yellow")
        if guard.signal_number in ENDING_SIGNALS:
            self._exit_code = exit_code_for_signal(guard.signal_number)

    # -- commands ----------------------------------------------------------------------------

    def command(self, name: str, argument: str) -> bool:
        """Carry out one slash command; True when the session should end."""
        from baseagent.interactive.commands import help_lines

        if name == "/exit":
            return True
        if name == "/help":
            for line in help_lines():
                self.sink.message(line, "")
            return False
        try:
            if name == "/new":
                self.open(self.agent.settings)
            elif name == "/resume":
                self._resume(argument)
            elif name == "/model":
                self._switch_model(argument)
            elif name == "/cost":
                self._cost()
            elif name in ("/diff", "/undo"):
                self._checkpoint(name, argument)
            elif name == "/compact":
                self._compact()
            elif name == "/clear":
                self._clear()
            elif name == "/init":
                self._init()
            elif name == "/status":
                self._status()
            elif name == "/approvals":
                self._approvals(argument)
        except ConfigError as exc:
            self.sink.message(f"error: {exc}", "red")
        return False

    def _resume(self, thread_id: str) -> None:
        from baseagent.records.replay import settings_for_resume
        from baseagent.storage import load_thread, open_storage

        if not thread_id:
            thread_id = self._pick_thread() or ""
            if not thread_id:
                return
        store = open_storage(self.agent.settings)
        try:
            loaded = load_thread(store, thread_id)
        finally:
            store.close()
        # The record's model, API base and workspace: what the thread was about.
        settings, notes = settings_for_resume(self.agent.settings, loaded, ())
        self.open(settings, resume=loaded, notes=notes, replay=True)

    def _pick_thread(self) -> str | None:
        """`/resume` alone: list this workspace's recent threads and read the person's
        choice (a number from the list, or an id); None when they choose none."""
        from baseagent.sessions import recent_in, render_choices
        from baseagent.storage import open_storage

        settings = self.agent.settings
        store = open_storage(settings)
        try:
            threads = recent_in(store, settings.cwd, RECENT_THREADS,
                                exclude=self.agent.thread_id)
        finally:
            store.close()
        if not threads:
            self.sink.message(f"no other thread recorded in {settings.cwd} "
                              "(`baseagent sessions` lists every workspace's)", "yellow")
            return None
        self.sink.message("recent threads in this workspace:", "")
        for line in render_choices(threads):
            self.sink.message(line, "")
        try:
            answer = self._input.read(PICK_PROMPT).strip()
        except (KeyboardInterrupt, EOFError):
            answer = ""
        if not answer:
            self.sink.message("not resumed", "")
            return None
        if answer.isdigit():
            if not 1 <= int(answer) <= len(threads):
                raise ConfigError(f"no thread numbered {answer} (1 to {len(threads)})")
            return threads[int(answer) - 1].thread_id
        return answer

    def _switch_model(self, model: str) -> None:
        current = self.agent
        settings = current.settings.model_copy()
        try:
            settings.model = model
        except ValueError as exc:
            raise ConfigError(f"invalid model {model!r}: {exc}") from None
        # open() builds the new thread (its model string checked) before it gives up this one.
        self.open(settings, resume=self._as_resume(current), thread_id=current.thread_id)

    def _as_resume(self, agent: Any) -> Any:
        """The current thread as a resume point: its record when there is one, else what
        the agent holds in memory (a thread run with --no-session). None before any turn
        (then only the thread id carries over)."""
        from baseagent.compose.builder import session_path
        from baseagent.records.replay import LoadedSession, SessionLoadError
        from baseagent.llm.types import UsageTotals
        from baseagent.storage import load_thread, open_storage

        if not self._started(agent):
            return None
        path = session_path(agent.settings, agent.thread_id)
        if agent.settings.record_session:
            store = open_storage(agent.settings)
            try:
                return load_thread(store, agent.thread_id)  # written as it goes: every turn
            except SessionLoadError:
                pass  # not recorded after all: what the agent holds
            finally:
                store.close()
        usage = agent.usage
        totals = UsageTotals(usage.input_tokens, usage.cached_input_tokens, usage.output_tokens,
                             usage.cost_usd or 0.0, usage.cost_usd is not None)
        return LoadedSession(thread_id=agent.thread_id, path=path, history=agent.history,
                             usage=totals, turns=self.sink.turns)

    @staticmethod
    def _started(agent: Any) -> bool:
        return any(m.get("role") == "assistant" for m in agent.history)

    def _checkpoint(self, name: str, argument: str) -> None:
        """/diff [session] and /undo: the thread's checkpoints (checkpoints/)."""
        from baseagent.checkpoints import CheckpointError

        if name == "/diff" and argument not in ("", "session"):
            raise ConfigError(f"/diff takes nothing or `session`, not {argument!r}")
        try:
            if name == "/undo":
                self.sink.message(str(self.agent.undo()), "")
                return
            diff = self.agent.diff(session=argument == "session")
        except CheckpointError as exc:
            self.sink.message(str(exc), "yellow")
            return
        self.sink.message(diff.summary(), "")
        if diff.files:
            self.sink.detail("", diff.text)

    def _compact(self) -> None:
        from baseagent.errors import BaseAgentError

        if not self._started(self.agent):
            self.sink.message("nothing to compact yet", "")
            return
        try:
            self.sink.message(self.agent.compact(), "")
        except BaseAgentError as exc:  # the summary's model call failed for good
            self.sink.message(f"not compacted: {exc}", "yellow")

    def _clear(self) -> None:
        if sys.stdout.isatty() and self.env.get("TERM", "") != "dumb":
            sys.stdout.write("\x1b[H\x1b[2J\x1b[3J")
            sys.stdout.flush()
        self.open(self.agent.settings)

    def _init(self) -> None:
        target = Path(self.agent.settings.cwd) / "AGENTS.md"
        if target.exists() or target.is_symlink():
            self.sink.message(f"{target} exists already: /init leaves it as it is (ask the "
                              "agent to update it, or remove it first)", "yellow")
            return
        self.turn(INIT_PROMPT)

    def _status(self) -> None:
        from baseagent.cost_text import cost_text

        agent = self.agent
        settings = agent.settings
        usage = agent.usage
        occupancy = agent.context_occupancy()
        if occupancy is None:
            context = "measured after the first turn"
        else:
            used, room = occupancy
            left = max(0, room - used)
            context = f"~{used:,} of {room:,} tokens used · {100 * left // max(room, 1)}% left"
        rows = [
            ("model", settings.model + (f" · {settings.api_base}" if settings.api_base else "")),
            ("thread", agent.thread_id),
            ("workspace", str(settings.cwd)),
            ("sandbox", settings.sandbox + (" · network on" if settings.sandbox_network
                                            and settings.sandbox != "danger-full-access"
                                            else "")),
            ("approvals", settings.approval_policy),
            ("tokens", f"{usage.input_tokens:,} in ({usage.cached_input_tokens:,} cached) · "
                       f"{usage.output_tokens:,} out · {cost_text(usage.cost_usd)}"),
            ("context", context),
        ]
        for label, value in rows:
            self.sink.message(f"  {label:<10} {value}", "")

    def _approvals(self, policy: str) -> None:
        current = self.agent.settings.approval_policy
        if not policy:
            self.sink.message(f"approvals: {current} (/approvals POLICY: "
                              f"{' | '.join(APPROVAL_POLICIES)})", "")
            return
        if policy not in APPROVAL_POLICIES:
            raise ConfigError(f"no approval policy {policy!r} (choose from "
                              f"{', '.join(APPROVAL_POLICIES)})")
        agent = self.agent
        settings = agent.settings.model_copy(update={"approval_policy": policy})
        # the same thread, asked as the new policy says from the next command on
        self.open(settings, resume=self._as_resume(agent), thread_id=agent.thread_id,
                  quiet=True)
        self.sink.message(f"approvals: {policy} for this session (was {current})", "")

    def _cost(self) -> None:
        from baseagent.cost_text import cost_text

        usage = self.agent.usage
        self.sink.message(
            f"thread {self.agent.thread_id}: {usage.input_tokens:,} tokens in "
            f"({usage.cached_input_tokens:,} cached) · {usage.output_tokens:,} out · "
            f"{cost_text(usage.cost_usd)} · model {self.agent.settings.model}", "")

