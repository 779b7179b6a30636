"""The values lines of the repository saw while the issue's example ran them, for the line
search's rewrite question (helps/line_values.py reads the report and makes the sentence).

For each line watched: the names it mentions as they were before it ran (and the function's
other locals, as a debugger lists them), and after it (those it changed, what it returned,
the exception it raised), in each statement checked that ran it (its first run there). Only
values made of exact built-in types are turned into text, so no repository code runs in the
hook; an object's attributes (`self.x`, `link.expires`) are read from its own __dict__ or its
class's, as they are kept. Bounds: the names per line, a value's characters, a container's
items, the report.

Like helps/repro_runtime.py, whose program it joins (helps/reproduction.py `check_script`
embeds it after that module), it runs in the repository with nothing of baseagent
importable: standard library only, no `from __future__`, and what it needs of the checks is
passed in (`running`: the statement running, the runtime's `_RUNNING`).
"""
import json
import os
import sys
import types

VALUE_NAMES = 8
VALUE_CHARS = 160  # a table of a dozen entries
VALUE_ITEMS = 20
VALUES_REPORT_CHARS = 6_000  # the whole report (the first lines watched kept)
_PLAIN = (int, float, bool, str, bytes, complex, type(None))


def _plain(value, depth=0):
    """Whether `value` is made of exact built-in types only (so repr runs no other code)."""
    kind = type(value)
    if kind in _PLAIN:
        return True
    if depth >= 2 or kind not in (list, tuple, set, frozenset, dict) or len(value) > VALUE_ITEMS:
        return False
    if kind is dict:
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    return all(_plain(item, depth + 1) for item in value)


def _value_text(value):
    if not _plain(value):
        return None
    text = repr(value)
    return text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS] + "..."


_MISSING = object()
_CO_OPTIMIZED = 0x1  # a function's frame (inspect.CO_OPTIMIZED)


def _named(frame, name):
    """A name's value in a frame (a local, else a global), `x.attr` from what the object
    itself holds (its own __dict__, then its class's); _MISSING when there is none (or
    reading it would run the repository's code: no property, no __getattr__)."""
    base, _, attr = name.partition(".")
    value = frame.f_locals.get(base, _MISSING)
    if value is _MISSING:  # a module's table the line reads (`nth[n % 10]`)
        value = frame.f_globals.get(base, _MISSING)
    if not attr or value is _MISSING:
        return value
    kind = type(value)
    if issubclass(kind, type):  # a class: its attributes are not an instance's
        return _MISSING
    mro = type.__getattribute__(kind, "__mro__")
    for cls in mro:  # the instance's own __dict__, through the interpreter's descriptor only
        slot = type.__getattribute__(cls, "__dict__").get("__dict__")
        if slot is not None:
            if type(slot) is types.GetSetDescriptorType:
                own = slot.__get__(value, kind)
                if type(own) is dict and attr in own:
                    return own[attr]
            break
    for cls in mro:
        held = type.__getattribute__(cls, "__dict__")
        if attr in held:
            held = held[attr]
            # a __slots__ entry: read by the interpreter's own code
            if type(held) is types.MemberDescriptorType:
                try:
                    return held.__get__(value, kind)
                except AttributeError:  # not set
                    return _MISSING
            return held
    return _MISSING


def _snapshot(frame, names):
    """The names' values that may be shown (plain built-ins), as text."""
    out = {}
    for name in names:
        value = _named(frame, name)
        text = None if value is _MISSING else _value_text(value)
        if text is not None:
            out[name] = text
    return out


def _others(frame, names, room):
    """The function's other locals that may be shown, as a debugger lists them, `room` at
    most (none for a module's or a class's body: their locals are its namespace)."""
    if not frame.f_code.co_flags & _CO_OPTIMIZED or room <= 0:
        return {}
    out = {}
    for name, value in frame.f_locals.items():
        if name in names or name.startswith("__"):
            continue
        text = _value_text(value)
        if text is not None:
            out[name] = text
            if len(out) >= room:
                break
    return out


def values_start(watched, running):
    """Record, from now on, the values each watched line saw ([path relative to the working
    directory, line, [names it mentions]]), by the statement running (`running[0]`). Returns
    the record, for values_report."""
    by_file = {}
    for i, (path, number, names) in enumerate(watched):
        real = os.path.realpath(os.path.join(os.getcwd(), path))
        by_file.setdefault(real, {})[number] = (i, list(names)[:VALUE_NAMES])
    recorded = {}  # (watched index, statement) -> {"before": ..., "after": ..., ...}
    files = {}  # a code object's file name -> its watched lines, or None
    script_line = [0]  # the line of the example running

    def script(frame, event, arg):
        if event == "line":
            script_line[0] = frame.f_lineno
        return script

    def call(frame, event, arg):
        filename = frame.f_code.co_filename
        if filename == "<reproduction>":
            return script
        lines = files.get(filename, _MISSING)
        if lines is _MISSING:
            lines = files[filename] = by_file.get(os.path.realpath(filename))
        if not lines:
            return None
        pending = [None]  # the record of the watched line this frame ran last, its names

        def close(event, arg):
            record, names = pending[0]
            pending[0] = None
            try:
                if event == "return":
                    record["returned"] = _value_text(arg)
                elif event == "exception":
                    record["raised"] = arg[0].__name__
                    return
                seen = {**record["before"], **record.get("also", {})}
                after = _snapshot(frame, [*names, *record.get("also", ())])
                record["after"] = {k: v for k, v in after.items()
                                   if seen.get(k, _MISSING) != v}
            except Exception:  # noqa: BLE001 - watching must never change what runs
                pass

        def line(frame, event, arg):
            if pending[0] is not None:
                close(event, arg)
            if event == "line":
                found = lines.get(frame.f_lineno)
                if found is not None:
                    key = (found[0], running[0])
                    if key not in recorded:
                        try:
                            before = _snapshot(frame, found[1])
                            recorded[key] = {"before": before, "line": script_line[0],
                                             "also": _others(frame, found[1],
                                                             VALUE_NAMES - len(before))}
                            pending[0] = (recorded[key], found[1])
                        except Exception:  # noqa: BLE001
                            pass
            return line
        return line

    sys.settrace(call)
    return recorded


def values_report(recorded, checks):
    """One line per watched line run, `REPRO VALUES i {json}`: what it saw in the first
    statement checked that ran it and went wrong, else in the example's own set-up (a
    statement not checked, statement 0: it may make what a later one shows), else in the
    first that went right; the statement's number, whether its expectation was met, and the
    example's line that ran it; VALUES_REPORT_CHARS in all, the first lines watched first."""
    sys.settrace(None)
    chosen = {}
    for (i, n), record in sorted(recorded.items()):
        met = checks.done.get(n) if n else None
        rank = 0 if met is False else 2 if n else 1
        if i not in chosen or rank < chosen[i][0]:
            chosen[i] = (rank, n, met, record)
    room = VALUES_REPORT_CHARS
    for i, (_, n, met, record) in sorted(chosen.items()):
        line = f"REPRO VALUES {i} {json.dumps({'statement': n, 'met': met, **record})}\n"
        room -= len(line)
        if room < 0:
            break
        sys.stdout.write(line)
    sys.stdout.flush()
