"""How the library Agent is made from its keyword arguments: the options as settings names,
a store object taken apart from them, the thread to resume loaded, and the thread's
checkpoints opened.

Each constructor of the Agent (agent.py: `Agent(...)`, `from_config`, `from_settings`) goes
through these, so they read the arguments one way.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from baseagent.checkpoints import CheckpointError, Checkpoints
from baseagent.config.settings import AgentConfig
from baseagent.compose import builder as assembly
from baseagent.records.replay import LoadedSession
from baseagent.storage import MessageStorage


def checkpoints_for(settings: AgentConfig, prepared: assembly.Prepared) -> Checkpoints:
    """The thread's checkpoints: kept in the session directory when the thread is recorded;
    none recorded in a read-only sandbox (nothing the agent runs may write) or when off."""
    resumed = prepared.resumed
    options: dict[str, Any] = dict(
        thread_id=prepared.thread_id, workspace=Path(settings.cwd).resolve(),
        env=prepared.child_env, turns=resumed.turns if resumed is not None else 0,
        enabled=settings.checkpoints and settings.sandbox != "read-only")
    directory = settings.session_dir / "checkpoints" / prepared.thread_id
    try:
        return Checkpoints(directory=directory if settings.record_session else None, **options)
    except CheckpointError as exc:  # a damaged log: this run's checkpoints stay in memory
        checkpoints = Checkpoints(directory=None, **options)
        checkpoints.note = f"{exc}; this run keeps its checkpoints in memory"
        return checkpoints


def setting_options(options: dict[str, Any], session: bool | None) -> dict[str, Any]:
    """The keyword arguments as Settings' config names (one way for every constructor):
    `session` is `record_session`, and `openapi=` / `specialists=` lists become their
    mappings by name."""
    options = dict(options)
    if session is not None:
        options.setdefault("record_session", session)
    if "openapi" in options:
        options["openapi"] = openapi_tables(options["openapi"])
    if "specialists" in options:
        from baseagent.config.specialists import specialist_tables

        options["specialists"] = specialist_tables(options["specialists"])
    return options


def openapi_tables(value: Any) -> Any:
    """`openapi=[{"name": ..., "spec": ...}, ...]` as the settings' mapping of name to table
    (a mapping is taken as it is)."""
    if isinstance(value, Mapping) or value is None:
        return value
    tables: dict[str, Any] = {}
    for entry in value:
        entry = dict(entry.model_dump() if hasattr(entry, "model_dump") else entry)
        name = entry.pop("name", None)
        if not name:
            from baseagent.errors import ConfigError

            raise ConfigError("each openapi= entry needs a `name`")
        tables[name] = entry
    return tables


def storage_object(options: dict[str, Any]) -> MessageStorage | None:
    """`storage=` given as a store object (taken out of `options`); a kind or a table
    stays in them, for the settings to validate."""
    from baseagent.config.settings import StorageConfig

    value = options.get("storage")
    if value is None or isinstance(value, (str, Mapping, StorageConfig)):
        return None
    if not isinstance(value, MessageStorage):
        from baseagent.errors import ConfigError

        raise ConfigError(f"storage: a {type(value).__name__} is not a MessageStorage "
                          "(baseagent.storage.base), nor \"jsonl\" or \"sqlite\"")
    del options["storage"]
    return value


def resume_thread(settings: AgentConfig, thread_id: str | None, explicit: set[str],
            storage: MessageStorage | None = None) \
        -> tuple[AgentConfig, LoadedSession | None, list[str]]:
    """Load the thread to resume (from `storage`, default the settings' store); its
    record's model, API base and workspace win over everything but the caller's explicit
    keyword arguments."""
    if thread_id is None:
        return settings, None, []
    from baseagent.records.replay import settings_for_resume
    from baseagent.storage import load_thread, open_storage

    store = storage if storage is not None else open_storage(settings)
    try:
        loaded = load_thread(store, thread_id)
    finally:
        if storage is None:
            store.close()
    settings, notes = settings_for_resume(settings, loaded, explicit)
    return settings, loaded, notes
