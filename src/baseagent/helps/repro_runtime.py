"""The program a reproduction check runs (helps/reproduction.py embeds this module's source,
then a call of `main` with the issue's script and its expectations).

It runs in the repository, under the caller's shell tool and its timeout, with nothing of
baseagent importable: standard library only. The script is compiled from its own syntax tree,
each statement an expectation names wrapped in a check, so its line numbers stay the issue's.
Each expectation gets one line, `REPRO n/total MET|NOT MET line L: ...`, in order; the last
line is `REPRO SUMMARY: m of total met`, with how the script ended. The script's own output
is kept, up to a bound. What the repository's code did meanwhile is watched by the modules
embedded after this one when asked: helps/repro_trace.py (the lines run, the origins of a
wrong value), helps/repro_values.py (the values lines saw).
"""
from __future__ import annotations

import ast
import contextlib
import io
import os
import re
import sys

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


# The expectation whose statement is running (0: none), for the watchers (repro_trace.py's
# spectrum, repro_values.py's statements).
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
