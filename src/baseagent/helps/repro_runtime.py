"""The program a reproduction check runs (helps/reproduction.py embeds this module's source,
then a call of `main` with the issue's script and its expectations).

It runs in the repository, under the caller's shell tool and its timeout, with nothing of
baseagent importable: standard library only. The script is compiled from its own syntax tree,
each statement an expectation names wrapped in a check, so its line numbers stay the issue's.
Each expectation gets one line, `REPRO n/total MET|NOT MET line L: ...`, in order; the last
line is `REPRO SUMMARY: m of total met`, with how the script ended. The script's own output
is kept, up to a bound.
"""
from __future__ import annotations

import ast
import collections
import contextlib
import io
import os
import re
import sys
import types

MAX_SCRIPT_OUTPUT = 8_000  # characters of the script's own output kept
MAX_SHOWN = 200  # characters of a value a result line shows
MAX_SEEN = 200_000  # characters of the script's output compared with an expected output


class _Capped(io.TextIOBase):
    """A stream that passes on at most `room` characters, then says it cut the rest."""

    def __init__(self, target, room, seen=None):
        self.target, self.room, self.cut = target, room, False
        self.seen = seen  # a list that keeps what was written, up to MAX_SEEN characters
        self.seen_chars = 0

    def write(self, text):
        if self.seen is not None and self.seen_chars < MAX_SEEN:
            self.seen.append(text[:MAX_SEEN - self.seen_chars])
            self.seen_chars += len(self.seen[-1])
        if self.room > 0:
            self.target.write(text[:self.room])
            self.room -= len(text)
        elif not self.cut:
            self.cut = True
            self.target.write("\n[the script's output was cut here]\n")
        return len(text)

    def flush(self):
        self.target.flush()


def _shown(value):
    text = value if isinstance(value, str) else repr(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "..."


def _norm(text):
    return " ".join(str(text).split())


def _raised(exc):
    return f"raised {type(exc).__name__}: {_shown(str(exc))}" if str(exc) \
        else f"raised {type(exc).__name__}"


# The expectation whose statement is running (0: none), for the trace's spectrum.
_RUNNING = [0]


class Checks:
    def __init__(self, expectations, out):
        self.expectations = expectations  # n -> {kind, expected, candidates, source, line}
        self.out = out
        self.done = {}  # n -> met
        self.wrong = []  # (what a statement gave, what it should have given) when not met

    def _report(self, n, met, got):
        if n in self.done:
            return  # a statement run again (a loop): its first result stands
        self.done[n] = met
        e = self.expectations[n]
        want = "an exception " + e["expected"] if e["kind"] == "raises" \
            else "a true assertion" if e["kind"] == "assert" \
            else _shown(e["expected"].replace("\n", " / ")) if e["kind"] == "output" \
            else _shown(e["expected"])
        self.out.write(f"REPRO {n}/{len(self.expectations)} {'MET' if met else 'NOT MET'} "
                       f"line {e['line']}: {e['source']} -> {got}; expected {want}\n")
        self.out.flush()

    def _matches(self, n, texts):
        wanted = {_norm(c) for c in self.expectations[n]["candidates"]}
        return any(_norm(t) in wanted for t in texts)

    def value(self, n, thunk, echo=False, reraise=False):
        """A statement that gives a value: an expression, an assignment, print(x)."""
        e = self.expectations[n]
        try:
            _RUNNING[0] = n
            value = thunk()
        except Exception as exc:
            if e["kind"] == "raises":
                names = [c.__name__ for c in type(exc).__mro__]
                self._report(n, e["expected"] in names, _raised(exc))
            else:
                self._report(n, False, _raised(exc))
            if reraise:
                raise
            return None
        finally:
            _RUNNING[0] = 0
        if echo:
            print(value)
        if e["kind"] == "raises":
            self._report(n, False, f"gave {_shown(value)} (no exception)")
        elif e["kind"] == "assert":
            self._report(n, bool(value), "true" if value else "false")
        else:
            texts = [str(value), repr(value)]
            met = self._matches(n, texts)
            if not met:
                self.wrong.append((texts[0][:MAX_SEEN], e["candidates"]))
            self._report(n, met, f"gave {_shown(str(value))}")
        return value

    def printed(self, n, thunk):
        """A print call with several arguments or keywords: what it prints is compared."""
        e = self.expectations[n]
        buffer = io.StringIO()
        try:
            _RUNNING[0] = n
            with contextlib.redirect_stdout(buffer):
                thunk()
        except Exception as exc:
            sys.stdout.write(buffer.getvalue())
            if e["kind"] == "raises":
                names = [c.__name__ for c in type(exc).__mro__]
                self._report(n, e["expected"] in names, _raised(exc))
            else:
                self._report(n, False, _raised(exc))
            return
        finally:
            _RUNNING[0] = 0
        text = buffer.getvalue()
        sys.stdout.write(text)
        if e["kind"] == "raises":
            self._report(n, False, f"printed {_shown(text.strip())} (no exception)")
        else:
            met = self._matches(n, [text.strip()])
            if not met:
                self.wrong.append((text.strip()[:MAX_SEEN], e["candidates"]))
            self._report(n, met, f"printed {_shown(text.strip())}")

    def output(self, printed):
        """The expectations on everything the script printed: its lines must hold the
        expected lines, in order and next to each other (whitespace folded)."""
        got = [_norm(line) for line in printed.splitlines() if line.strip()]
        for n, e in self.expectations.items():
            if e["kind"] != "output" or n in self.done:
                continue
            wanted = [_norm(line) for line in e["expected"].splitlines() if line.strip()]
            met = any(got[i:i + len(wanted)] == wanted
                      for i in range(len(got) - len(wanted) + 1))
            self._report(n, met, f"printed {_shown(' / '.join(got[-5:]))}")

    def finish(self, ended):
        for n, e in self.expectations.items():
            if n not in self.done:
                self.done[n] = False
                self.out.write(f"REPRO {n}/{len(self.expectations)} NOT MET line {e['line']}: "
                               f"{e['source']} -> not reached; expected {_shown(e['expected'])}\n")
        met = sum(self.done.values())
        self.out.write(f"REPRO SUMMARY: {met} of {len(self.expectations)} met; {ended}\n")
        self.out.flush()


class _Wrap(ast.NodeTransformer):
    """Each statement at an expectation's line, wrapped in its check."""

    def __init__(self, by_line):
        self.by_line = by_line  # line -> n

    def _thunk(self, expr):
        return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None,
                                             kwonlyargs=[], kw_defaults=[], kwarg=None,
                                             defaults=[]), body=expr)

    def _call(self, method, n, expr, **flags):
        keywords = [ast.keyword(arg=k, value=ast.Constant(v)) for k, v in flags.items()]
        return ast.Call(func=ast.Attribute(value=ast.Name("__repro_checks", ast.Load()),
                                           attr=method, ctx=ast.Load()),
                        args=[ast.Constant(n), self._thunk(expr)], keywords=keywords)

    def visit_Expr(self, node):
        n = self.by_line.get(node.lineno)
        if n is None:
            return node
        value = node.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
                and value.func.id == "print":
            if len(value.args) == 1 and not value.keywords \
                    and not isinstance(value.args[0], ast.Starred):
                call = self._call("value", n, value.args[0], echo=True)
            else:
                call = self._call("printed", n, value)
        else:
            call = self._call("value", n, value)
        return ast.copy_location(ast.Expr(call), node)

    def visit_Assign(self, node):
        n = self.by_line.get(node.lineno)
        if n is None:
            return node
        node.value = self._call("value", n, node.value, reraise=True)
        return node

    def visit_Assert(self, node):
        n = self.by_line.get(node.lineno)
        if n is None:
            return node
        return ast.copy_location(ast.Expr(self._call("value", n, node.test)), node)


def main(script, expectations):
    """Run `script` with its expectations ([{n, line, kind, expected, candidates, source}])
    checked, and report them. Returns the checks (what was wrong: `Checks.wrong`)."""
    out = sys.stdout
    for folder in (os.path.join(os.getcwd(), "src"), os.getcwd()):
        if os.path.isdir(folder) and folder not in sys.path:
            sys.path.insert(0, folder)
    checks = Checks({e["n"]: e for e in expectations}, out)
    tree = _Wrap({e["line"]: e["n"] for e in expectations}).visit(ast.parse(script))
    ast.fix_missing_locations(tree)
    namespace = {"__name__": "__main__", "__repro_checks": checks}
    ended = "the script ran to its end"
    seen = []
    sys.stdout = _Capped(out, MAX_SCRIPT_OUTPUT, seen)
    sys.stderr = _Capped(sys.__stderr__, MAX_SCRIPT_OUTPUT)
    try:
        exec(compile(tree, "<reproduction>", "exec"), namespace)
    except SystemExit as exc:
        ended = f"the script exited ({exc.code})"
    except BaseException as exc:  # noqa: BLE001 - the script's own failure is the report
        line = None
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == "<reproduction>":
                line = tb.tb_lineno
            tb = tb.tb_next
        where = f" at line {line}" if line is not None else ""
        ended = f"the script stopped{where}: {_raised(exc)}"
    finally:
        sys.stdout.flush()
        sys.stdout, sys.stderr = out, sys.__stderr__
    checks.output("".join(seen))
    checks.finish(re.sub(r"\s+", " ", ended))
    return checks


# The lines of the code shown that the script ran, last ones kept (the line search's trace:
# helps/line_search.py). A wrong value comes from the path the code took; its last lines are
# where the line search looks first.
TRACE_KEEP = 120
# And which statements each line ran in (the spectrum), for so many lines at most.
SPECTRUM_KEEP = 2_000


class _Trace:
    def __init__(self):
        self.seen = collections.deque(maxlen=TRACE_KEEP)  # (place, line), in order
        self.ran_in = {}  # (place, line) -> the expectations whose statements ran it (0: none)


def trace_start(places):
    """Record, from now on, each line run inside `places` ([path relative to the working
    directory, first line, last line]): the code objects that begin within one, and the
    statement each ran in. Returns the record, for trace_report."""
    resolved = [(os.path.realpath(os.path.join(os.getcwd(), path)), start, end)
                for path, start, end in places]
    traced = _Trace()
    codes = {}  # code object -> its place's index, -1 for none

    def place_of(code):
        index = codes.get(code)
        if index is None:
            path = os.path.realpath(code.co_filename)
            index = next((i for i, (p, start, end) in enumerate(resolved)
                          if p == path and start <= code.co_firstlineno <= end), -1)
            codes[code] = index
        return index

    def call(frame, event, arg):
        index = place_of(frame.f_code)
        if index < 0:
            return None

        def line(frame, event, arg):
            if event == "line":
                where = (index, frame.f_lineno)
                traced.seen.append(where)
                statements = traced.ran_in.get(where)
                if statements is None and len(traced.ran_in) < SPECTRUM_KEEP:
                    statements = traced.ran_in[where] = set()
                if statements is not None:
                    statements.add(_RUNNING[0])
            return line
        return line

    sys.settrace(call)
    return traced


def trace_report(traced, checks):
    """Two lines. `REPRO TRACE place:line ...`: what trace_start recorded, in the order it
    ran. `REPRO SPECTRUM failed passed place:line:f:p ...`: the statements checked that
    failed and passed, and of each line run in how many of each it ran (a line run outside
    any statement checked, by the script's own set-up, counts as run in all)."""
    sys.settrace(None)
    failed = {n for n, met in checks.done.items() if not met}
    passed = {n for n, met in checks.done.items() if met}
    counts = []
    for (index, number), statements in traced.ran_in.items():
        if 0 in statements:
            f, p = len(failed), len(passed)
        else:
            f, p = len(statements & failed), len(statements & passed)
        counts.append(f"{index}:{number}:{f}:{p}")
    sys.stdout.write("REPRO TRACE " + " ".join(f"{i}:{n}" for i, n in traced.seen) + "\n")
    sys.stdout.write(f"REPRO SPECTRUM {len(failed)} {len(passed)} " + " ".join(counts) + "\n")
    sys.stdout.flush()


# Where a wrong value came from (the repository probe's origins: helps/repo_probe.py): the
# repository's functions (not its tests) that returned, while the script ran, a string or a
# number that is part of what a statement wrongly gave and of nothing it should have given.
# Only values of exact built-in types are turned into text, so no repository code runs in
# the hook. Bounds: the returns kept, the values kept per function, a value's length, the
# origins printed.
ORIGINS_KEEP = 20_000
ORIGIN_VALUES = 8
ORIGIN_CHARS = 200
ORIGINS_SHOWN = 10


def origins_start():
    """Record, from now on, the values the repository's functions return. Returns where
    they go, for origins_report."""
    import datetime
    import decimal

    root = os.path.realpath(os.getcwd()) + os.sep
    scalars = {str, int, float, complex, decimal.Decimal, datetime.date, datetime.datetime,
               datetime.time, datetime.timedelta}
    returned = {}  # (path, first line, name) -> {value text: when it first returned it}
    places = {}  # a code object's file -> its path relative to the root, or None
    count = [0]

    def place(filename):
        rel = places.get(filename, 0)
        if rel == 0:
            path = os.path.realpath(filename)
            rel = path[len(root):] if path.startswith(root) else None
            if rel is not None and any(part.startswith(("test", "conftest")) or
                                       part.endswith(("_test.py", "_tests.py"))
                                       for part in rel.split(os.sep)):
                rel = None
            places[filename] = rel
        return rel

    def profile(frame, event, arg):
        if event != "return" or type(arg) not in scalars or count[0] >= ORIGINS_KEEP:
            return
        try:
            code = frame.f_code
            rel = place(code.co_filename)
            if rel is None:
                return
            text = arg if type(arg) is str else str(arg)
            if not 3 <= len(text) <= ORIGIN_CHARS:
                return
            count[0] += 1
            values = returned.setdefault(
                (rel, code.co_firstlineno, getattr(code, "co_qualname", code.co_name)), {})
            if len(values) < ORIGIN_VALUES and text not in values:
                values[text] = count[0]
        except Exception:  # noqa: BLE001 - watching must never change what the script does
            return

    sys.setprofile(profile)
    return returned


def origins_report(returned, wrong):
    """One line, `REPRO ORIGINS path:line:name:length ...`: the functions that made a part
    of a wrong result (not in what it should have been): the first to return it, not those
    that passed it on; the shortest such value first."""
    sys.setprofile(None)
    made = {}  # a wrong part -> (when it was first returned, by which function)
    for key, values in returned.items():
        for text, when in values.items():
            if (text not in made or when < made[text][0]) and any(
                    text in got and text != got.strip() and not any(text in w for w in wanted)
                    for got, wanted in wrong):
                made[text] = (when, key)
    found = sorted((len(text), when, key) for text, (when, key) in made.items())
    names = list(dict.fromkeys(key for _, _, key in found))
    lengths = {key: length for length, _, key in reversed(found)}
    sys.stdout.write("REPRO ORIGINS " + " ".join(
        f"{path}:{line}:{name}:{lengths[(path, line, name)]}"
        for path, line, name in names[:ORIGINS_SHOWN]
        if ":" not in path and " " not in path + name) + "\n")
    sys.stdout.flush()


# The values a line saw (the line search's rewrite question: helps/line_values.py): for
# each line watched, the names it mentions as they were before it ran (and the function's
# other locals, as a debugger lists them), and after it (those it changed, what it
# returned, the exception it raised), in the first statement checked that
# ran it (each statement's first run of the line). Only values made of exact built-in types
# are turned into text, so no repository code runs in the hook; an object's attributes
# (`self.x`, `link.expires`) are read from its own __dict__ or its class's, as they are
# kept. Bounds: the names per line, a value's characters, a container's items.
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
_SLOT = types.MemberDescriptorType
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
            if type(held) is _SLOT:  # a __slots__ entry: read by the interpreter's own code
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


def values_start(watched):
    """Record, from now on, the values each watched line saw ([path relative to the working
    directory, line, [names it mentions]]). Returns the record, for values_report."""
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
                    key = (found[0], _RUNNING[0])
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
    import json

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
