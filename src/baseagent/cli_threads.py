"""The commands on recorded threads: `sessions` (list, show, search, rm, migrate), `export`
(trajectories) and `diff` / `undo` (a thread's checkpoints).

cli.py adds `commands` to the app; the work is sessions.py's, export/'s and checkpoints/'s.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from baseagent.cli_common import fail_usage

# This module's commands and groups, added to the app by cli.py.
commands = typer.Typer()

sessions_app = typer.Typer(
    help="List, show, search and remove recorded threads (resumable), in the store the "
         "settings name ([storage], docs/STORAGE.md). Alone: the list.\n\n"
         "Examples: baseagent sessions list; baseagent sessions show 0199a213; "
         "baseagent sessions search 'flaky test'; baseagent sessions rm --older-than 30; "
         "baseagent sessions migrate",
    invoke_without_command=True)
commands.add_typer(sessions_app, name="sessions",
                   short_help="Recorded threads: baseagent sessions [list|show ID|search TEXT|rm ID]")

_DIR_HELP = "Session directory of JSONL records [default: session_dir setting, ~/.baseagent/sessions]."
_DB_HELP = "SQLite session database [default: the [storage] setting]."


@sessions_app.callback()
def sessions_default(
    ctx: typer.Context,
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
    db: Optional[Path] = typer.Option(None, "--db", help=_DB_HELP),
) -> None:
    """`baseagent sessions` alone lists the threads (what a person typing it wants)."""
    if ctx.invoked_subcommand is None:
        sessions_list(ctx, directory, db, False, 20)
        print("(baseagent sessions show ID | search TEXT | rm ID | list --json; resume with "
              "baseagent --resume ID)", file=sys.stderr)


def _group_option(ctx: typer.Context, name: str, value: Any) -> Any:
    """An option of the command, else the same of `sessions ... COMMAND`."""
    if value is None and ctx.parent is not None:
        value = ctx.parent.params.get(name)
    return value


def _root_settings(ctx: typer.Context) -> Any:
    """The settings of the root command's --config and --profile, loaded once an
    invocation (kept in the root context: `sessions rm` needs them for the store and for
    the checkpoints' directory)."""
    from baseagent.config.load import ConfigError, load_settings

    root = ctx.find_root()
    if "baseagent.settings" not in root.meta:
        try:
            root.meta["baseagent.settings"] = load_settings(
                {}, config_file=root.params.get("config"), profile=root.params.get("profile"))
        except ConfigError as exc:
            raise fail_usage(str(exc)) from None
    return root.meta["baseagent.settings"]


def _session_dir(ctx: typer.Context, directory: Optional[Path]) -> Path:
    """--dir (of the command or of `sessions --dir D ...`), else the session_dir setting
    (env, the root --config file, defaults)."""
    directory = _group_option(ctx, "directory", directory)
    if directory is not None:
        return directory.expanduser().resolve()
    return _root_settings(ctx).session_dir


def _storage(ctx: typer.Context, directory: Optional[Path], db: Optional[Path]) -> Any:
    """The store a sessions command works on: --db (SQLite), --dir (JSONL), else the
    settings' ([storage], session_dir)."""
    from baseagent.errors import ConfigError
    from baseagent.storage import open_storage
    from baseagent.storage.jsonl import JsonlStorage

    directory = _group_option(ctx, "directory", directory)
    db = _group_option(ctx, "db", db)
    if directory is not None and db is not None:
        raise fail_usage("give --dir (JSONL records) or --db (a SQLite database), not both")
    try:
        if db is not None:
            from baseagent.storage.sqlite import SqliteStorage

            return SqliteStorage(db.expanduser().resolve())
        if directory is not None:
            return JsonlStorage(directory.expanduser().resolve())
        return open_storage(_root_settings(ctx))
    except ConfigError as exc:
        raise fail_usage(str(exc)) from None


@sessions_app.command("list")
def sessions_list(
    ctx: typer.Context,
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
    db: Optional[Path] = typer.Option(None, "--db", help=_DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="One JSON summary per line."),
    limit: int = typer.Option(20, "--limit", "-n", min=0, help="Show the newest N threads (0: all)."),
) -> None:
    """The newest threads first (by thread id: UUIDv7 ids are time-ordered), with their
    workspace."""
    from baseagent import sessions

    summaries = sessions.list_sessions(_storage(ctx, directory, db))
    if limit and len(summaries) > limit:
        print(f"(the newest {limit} of {len(summaries)} threads; --limit N or --limit 0 for "
              "more)", file=sys.stderr)
        summaries = summaries[:limit]
    if as_json:
        for summary in summaries:
            print(sessions.summary_json(summary))
    else:
        print(sessions.render_list(summaries), end="")


@sessions_app.command("show")
def sessions_show(
    ctx: typer.Context,
    thread_id: str = typer.Argument(..., help="Thread id (or a unique prefix of it)."),
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
    db: Optional[Path] = typer.Option(None, "--db", help=_DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="The summary as JSON."),
) -> None:
    """One thread: model, turns, usage, instructions and the history a resume continues."""
    from baseagent import sessions
    from baseagent.records.replay import SessionLoadError

    try:
        summary, history = sessions.show(_storage(ctx, directory, db), thread_id)
    except SessionLoadError as exc:
        raise fail_usage(str(exc)) from None
    print(sessions.summary_json(summary) if as_json else sessions.render_show(summary, history),
          end="\n" if as_json else "")


@sessions_app.command("search")
def sessions_search(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="Words every matching message holds."),
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
    db: Optional[Path] = typer.Option(None, "--db", help=_DB_HELP),
    limit: int = typer.Option(20, "--limit", min=1, max=10_000, help="Show at most N matches."),
    as_json: bool = typer.Option(False, "--json", help="One JSON match per line."),
) -> None:
    """Messages of every thread holding every word of TEXT, newest first. SQLite storage
    searches its full-text index (FTS5); JSONL records are scanned (say so on stderr)."""
    from baseagent import sessions
    from baseagent.records.replay import SessionLoadError

    storage = _storage(ctx, directory, db)
    try:
        hits = storage.search(text, limit)
    except SessionLoadError as exc:
        raise fail_usage(str(exc)) from None
    print(f"(search: {storage.describe_search()})", file=sys.stderr)
    if as_json:
        for hit in hits:
            print(sessions.hit_json(hit))
    else:
        print(sessions.render_hits(hits), end="")


@sessions_app.command("rm")
def sessions_rm(
    ctx: typer.Context,
    thread_ids: Optional[list[str]] = typer.Argument(None, help="Thread ids to delete."),
    older_than: Optional[float] = typer.Option(None, "--older-than", metavar="DAYS", min=0, help="Delete every record not updated for DAYS days."),
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
    db: Optional[Path] = typer.Option(None, "--db", help=_DB_HELP),
) -> None:
    """Delete records: by id, or prune with --older-than DAYS."""
    from baseagent import sessions
    from baseagent.records.replay import SessionLoadError

    if not thread_ids and older_than is None:
        raise fail_usage("give thread ids or --older-than DAYS")
    storage = _storage(ctx, directory, db)
    # A thread's checkpoints live beside the JSONL records (--dir, or the session dir).
    checkpoints = _session_dir(ctx, directory) / "checkpoints"
    try:
        removed = sessions.remove(storage, thread_ids or [], checkpoints, os.environ)
    except SessionLoadError as exc:
        raise fail_usage(str(exc)) from None
    if older_than is not None:
        pruned = sessions.prune(storage, older_than, checkpoints=checkpoints, env=os.environ)
        if not pruned:
            print(f"no record older than {older_than:g} days: nothing removed", file=sys.stderr)
        removed += pruned
    for where in removed:
        print(f"removed {where}")


@sessions_app.command("migrate")
def sessions_migrate(
    ctx: typer.Context,
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
    db: Optional[Path] = typer.Option(None, "--db", help="The SQLite database to fill [default: the [storage] path, ~/.baseagent/sessions.db]."),
) -> None:
    """Copy every JSONL record of the session directory into the SQLite database. Safe to
    rerun: threads already there are left as they are; the JSONL files are not touched."""
    from baseagent.errors import ConfigError
    from baseagent.storage.migrate import migrate, render_report
    from baseagent.storage.sqlite import SqliteStorage

    source = _session_dir(ctx, directory)
    db = _group_option(ctx, "db", db)
    target_path = db.expanduser().resolve() if db is not None else _root_settings(ctx).storage.path
    try:
        target = SqliteStorage(target_path)
    except ConfigError as exc:
        raise fail_usage(str(exc)) from None
    try:
        report = migrate(source, target)
    finally:
        target.close()
    sys.stdout.write(render_report(report, source, target_path))
    raise typer.Exit(1 if report.failed else 0)



@commands.command("export", short_help="Trajectories: baseagent export ID --format atif",
             epilog="Examples: baseagent export 0199a213 --format atif; "
                    "baseagent export --all --format sharegpt -o train.jsonl")
def export_command(
    ctx: typer.Context,
    thread_id: Optional[str] = typer.Argument(None, help="Thread id (or a unique prefix)."),
    fmt: str = typer.Option("atif", "--format", "-f", help="atif | sharegpt | openai"),
    export_all: bool = typer.Option(False, "--all", help="Every session in the directory, one JSON document per line."),
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
    db: Optional[Path] = typer.Option(None, "--db", help=_DB_HELP),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to FILE instead of stdout."),
) -> None:
    """Export trajectories: ATIF v1.7, ShareGPT (training) or the raw OpenAI messages."""
    from baseagent.records.replay import SessionLoadError
    from baseagent.export import FORMATS, dumps, export_thread

    if fmt not in FORMATS:
        raise fail_usage(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    if export_all == (thread_id is not None):
        raise fail_usage("give a THREAD_ID or --all")
    storage = _storage(ctx, directory, db)
    documents = []
    try:
        keys = [info.thread_id for info in storage.list_threads()][::-1] if export_all \
            else [storage.resolve(thread_id or "")]
        for key in keys:
            documents.append(export_thread(storage, key, fmt))
    except SessionLoadError as exc:
        raise fail_usage(str(exc)) from None
    # One thread: a readable document (ShareGPT stays one line: it is a training line).
    pretty = not export_all and fmt != "sharegpt"
    text = "".join(dumps(doc, pretty) + "\n" for doc in documents)
    if output is None:
        sys.stdout.write(text)
    else:
        from baseagent.fsutil import atomic_write

        output.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(output, text.encode("utf-8"))


# -- checkpoints: a thread's turns as changes to the workspace (checkpoints/, docs/CHECKPOINTS.md)

_THREAD_ARG = typer.Argument(None, metavar="THREAD", help="Thread id (or a unique prefix) [default: the newest thread with checkpoints in this directory].")


def _checkpoint_dir(ctx: typer.Context, thread_id: Optional[str], directory: Optional[Path]) -> Path:
    from baseagent.checkpoints.command import NoThread, find_thread

    try:
        return find_thread(_session_dir(ctx, directory), Path.cwd(), thread_id)
    except NoThread as exc:
        raise fail_usage(str(exc)) from None


def _finish(outcome: Any) -> None:
    sys.stdout.write(outcome.out)
    if outcome.err:
        print(f"baseagent: {outcome.err}", file=sys.stderr)
    raise typer.Exit(outcome.code)


@commands.command("diff", short_help="What a thread's last turn changed: baseagent diff [THREAD] [--session]",
             epilog="Examples: baseagent diff; baseagent diff --session; baseagent diff 0199a213 > turn.patch")
def diff_command(
    ctx: typer.Context,
    thread_id: Optional[str] = _THREAD_ARG,
    session: bool = typer.Option(False, "--session", help="Every turn of the thread (not undone), not just the last."),
    stat: bool = typer.Option(False, "--stat", help="Only the changed files, no diff."),
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
) -> None:
    """The changes of the thread's last turn that changed the workspace, as a unified diff."""
    from baseagent.checkpoints import command

    _finish(command.diff(_checkpoint_dir(ctx, thread_id, directory), _git_env(), session, stat))


@commands.command("undo", short_help="Put the workspace back as it was before a thread's last turn: baseagent undo [THREAD]",
             epilog="Examples: baseagent undo; baseagent undo 0199a213")
def undo_command(
    ctx: typer.Context,
    thread_id: Optional[str] = _THREAD_ARG,
    directory: Optional[Path] = typer.Option(None, "--dir", help=_DIR_HELP),
) -> None:
    """Undo the thread's last turn that changed the workspace (again: the one before). Refuses,
    changing nothing, when a file that turn changed has changed since it ended."""
    from baseagent.checkpoints import command

    _finish(command.undo(_checkpoint_dir(ctx, thread_id, directory), _git_env()))


def _git_env() -> dict[str, str]:
    """What git needs of this process's environment (PATH), and nothing else."""
    import os

    return {"PATH": os.environ.get("PATH", os.defpath)}

