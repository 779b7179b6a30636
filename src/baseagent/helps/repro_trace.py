"""What the repository's code did while the issue's example ran, for the line search and the
repository probe: the lines of given places it ran, in order, with the statements each ran in
(`trace_start`/`trace_report`: helps/line_search.py), and the functions that returned part of a
wrong result (`origins_start`/`origins_report`: helps/repo_probe.py).

Like helps/repro_runtime.py, whose program it joins (helps/reproduction.py `check_script`
embeds it after that module), it runs in the repository with nothing of baseagent
importable: standard library only, no `from __future__` (it is not the program's start), and
what it needs of the checks is passed in (`running`: the statement running, the runtime's
`_RUNNING`).
"""
import collections
import os
import sys


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


def trace_start(places, running):
    """Record, from now on, each line run inside `places` ([path relative to the working
    directory, first line, last line]): the code objects that begin within one, and the
    statement each ran in (`running[0]`). Returns the record, for trace_report."""
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
                    statements.add(running[0])
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
