"""Which commands run under the `untrusted` approval policy without asking: an allow-list
of command and argument shapes (tools/approval.py asks about everything else).

A command is known safe only when bash would run nothing but read-only programs with
arguments this module understands:

- The command line is read the way bash reads it (`words`): quotes and backslashes, the
  separators `;`, `&&`, `||` and `|` between simple commands. Anything that would make
  bash run or expand something the words do not show is unsafe: `$` outside single quotes
  (variables, `$(...)`, `$'...'` escapes), backquotes, redirections, `&`, parentheses,
  brace expansion (`{a,b}`), a comment, a newline outside quotes, a leading `NAME=value`.
- Each simple command names a program in `SHAPES` (exactly, never a path: `./ls` is the
  workspace's program) and fits its `Shape`: every option is one the program is listed to
  take, matched the way getopt reads them (clustered short flags `-nr`, a value attached
  `-oFILE` or in the next word, `--opt=value` and `--opt value`); an unknown option, or a
  long option abbreviated (`--out` for `--output`: GNU and git accept unique prefixes, so
  only exact names are known), is unsafe. Operands are allowed only where the program only
  reads them (`uniq IN OUT` writes OUT: one operand at most; `date MMDDhhmm` sets the
  clock: only `+FORMAT`).
- A glob bash expands (`*`, `?`, `[`) could become any file name the workspace holds, an
  option included (a file named `--output=x`): for a program with options that write or
  run something, a word that starts with a glob is unsafe unless it comes after `--`, and
  a program with a bounded number of operands takes no glob at all.
- `git` takes only harmless global options (`--no-pager`; not `-c`, `-C`, `--git-dir`,
  `--exec-path`) and then a read-only subcommand with its own shape (`git grep` has no
  `-O`, `git log` no `--output`, `git branch` lists only). `find` takes its tests and
  `-print`/`-printf`/`-ls`, never `-exec`, `-ok`, `-delete` or `-fprint`; `sed` takes no
  `-i` and no `-f`, and its script only addresses, `p d q n = l` and `s///` with the flags
  `gpiImM` and digits (no `w`, no `e`).

What a safe program does with a file it reads (a repository's config naming a pager or a
diff driver) is not this module's concern: it decides only what the command line asks for.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

# -- reading the command line as bash would --------------------------------------------------

# Longer commands are asked: the check stays a few milliseconds whatever the model sends
# (tool arguments reach 1 MiB), and no one reads a 16 KiB command as "known safe" anyway.
MAX_COMMAND_CHARS = 16_384

_GLOB = frozenset("*?[")
_SEPARATORS = ("&&", "||", ";", "|")
# Unquoted characters that make bash do more than run the words: redirections, background
# or process groups, subshells, variables and substitutions, comments.
_UNSAFE_UNQUOTED = frozenset("<>&()$`")


@dataclass(frozen=True)
class Word:
    """One word of a simple command as bash would pass it, and whether bash would glob it:
    `glob` (an unquoted `*?[` somewhere), `lead` (one first: it may expand to a name that
    starts with `-`)."""

    text: str
    glob: bool = False
    lead: bool = False


def commands(line: str) -> list[list[Word]] | None:
    """The simple commands of `line` (split at `;`, `&&`, `||`, `|`), each as its words;
    None when bash would do anything else with it (see the module docstring)."""
    out: list[list[Word]] = []
    words: list[Word] = []
    text: list[str] = []
    started = glob = lead = brace = False
    raw: list[str] = []  # the word as written, for brace expansion
    i, n = 0, len(line)

    def end_word() -> bool:
        nonlocal started, glob, lead, brace
        if started:
            written = "".join(raw)
            if brace and ("," in written or ".." in written):
                return False  # brace expansion: {a,b} or {1..3}
            words.append(Word("".join(text), glob, lead))
        text.clear()
        raw.clear()
        started = glob = lead = brace = False
        return True

    while i < n:
        c = line[i]
        if c in " \t":
            if not end_word():
                return None
            i += 1
            continue
        sep = next((s for s in _SEPARATORS if line.startswith(s, i)), None)
        if sep is not None:
            if sep == "|" and line.startswith("|&", i):
                return None
            if not end_word() or not words:
                return None  # `; ls`, `ls ||`: an empty command
            out.append(words)
            words = []
            i += len(sep)
            continue
        if c == "\n" or c in _UNSAFE_UNQUOTED or (c == "#" and not started):
            return None
        if c == "'":
            close = line.find("'", i + 1)
            if close < 0:
                return None
            text.append(line[i + 1:close])
            raw.append(line[i:close + 1])
            started = True
            i = close + 1
            continue
        if c == '"':
            i += 1
            raw.append('"')
            while i < n and line[i] != '"':
                d = line[i]
                if d in "$`":
                    return None
                if d == "\\" and i + 1 < n and line[i + 1] in '$`"\\\n':
                    if line[i + 1] == "\n":
                        return None
                    text.append(line[i + 1])
                    i += 2
                    continue
                text.append(d)
                i += 1
            if i >= n:
                return None  # unclosed
            raw.append('"')
            started = True
            i += 1
            continue
        if c == "\\":
            if i + 1 >= n or line[i + 1] == "\n":
                return None
            text.append(line[i + 1])
            raw.append(line[i:i + 2])
            started = True
            i += 2
            continue
        if c in _GLOB:
            if not glob:  # only the first can have nothing before it (`''*` counts)
                lead = not any(text)
            glob = True
        if c == "{":
            brace = True
        text.append(c)
        raw.append(c)
        started = True
        i += 1
    if not end_word():
        return None
    if words:
        out.append(words)
    elif out:
        return None  # `ls |`: a trailing separator
    return out or None


# -- the shapes of the commands allowed ------------------------------------------------------

@dataclass(frozen=True)
class Shape:
    """What one program may be given and still only read.

    `flags`: options without a value (`-n`, `--reverse`); `valued`: options that take one
    (`-k 2`, `-k2`, `--key=2`, `--key 2`); `optional`: options whose value, if any, is
    attached (`--color`, `--color=never`, `-M50%`). `numeric`: `-5` is a count (head,
    git log). `operands`: how many it may take (None: any number, all read). `harmless`:
    no option it has writes or runs anything, so a glob may stand anywhere. `any_args`:
    it reads no options at all (echo). `check(options, operands)`: what else must hold
    (sed's script, date's `+FORMAT`)."""

    flags: frozenset[str] = frozenset()
    valued: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()
    numeric: bool = False
    operands: int | None = None
    harmless: bool = False
    any_args: bool = False
    check: Callable[[list[tuple[str, str | None]], list[Word]], bool] | None = None


def _set(*groups: str) -> frozenset[str]:
    return frozenset(word for group in groups for word in group.split())


def shape(flags: str = "", valued: str = "", optional: str = "", **rest) -> Shape:
    return Shape(_set(flags), _set(valued), _set(optional), **rest)


@dataclass
class _Parsed:
    options: list[tuple[str, str | None]] = field(default_factory=list)
    operands: list[Word] = field(default_factory=list)
    globbed_option_position: bool = False  # a glob that could have been read as an option


def _next_value(args: list[Word], i: int, parsed: _Parsed) -> str | None:
    """An option's value in the next word `args[i]` (`--opt value`, `-o value`); None when
    there is none or it looks like an option itself (asked, not guessed)."""
    if i >= len(args) or _option_like(args[i].text):
        return None
    parsed.globbed_option_position |= args[i].lead
    return args[i].text


def parse(spec: Shape, args: list[Word]) -> _Parsed | None:
    """`args` read against `spec` the way getopt_long reads them (options anywhere, `--`
    ends them); None when an option is not in the shape or lacks its value."""
    parsed = _Parsed()
    i = 0
    options_end = False
    while i < len(args):
        word = args[i]
        a = word.text
        i += 1
        if options_end or a == "-" or not a.startswith("-"):
            if word.lead and not options_end:
                parsed.globbed_option_position = True
            parsed.operands.append(word)
            continue
        if a == "--":
            options_end = True
            continue
        if a.startswith("--"):
            name, eq, value = a.partition("=")
            if name in spec.optional:
                parsed.options.append((name, value if eq else None))
            elif name in spec.flags and not eq:
                parsed.options.append((name, None))
            elif name in spec.valued:
                if not eq:
                    if (value := _next_value(args, i, parsed)) is None:
                        return None
                    i += 1
                parsed.options.append((name, value))
            else:
                return None
            continue
        if spec.numeric and a[1:].isdigit():
            parsed.options.append(("-" + a[1:], None))
            continue
        j = 1
        while j < len(a):
            name = "-" + a[j]
            rest = a[j + 1:]
            if name in spec.flags:
                parsed.options.append((name, None))
                j += 1
                continue
            if name in spec.optional:
                parsed.options.append((name, rest or None))
            elif name in spec.valued:
                if not rest:
                    if (rest := _next_value(args, i, parsed)) is None:
                        return None
                    i += 1
                parsed.options.append((name, rest))
            else:
                return None
            break
    return parsed


def _option_like(text: str) -> bool:
    """A value in the next word that looks like an option is asked: where a program takes
    that option without a value (or only as `--opt=value`), the word is an option of its
    own, unread here (`grep -e -x` is asked; `grep -e x` and `grep --regexp=-x` are not)."""
    return text.startswith("-") and text != "-"


def fits(spec: Shape, args: list[Word]) -> bool:
    """Whether a program of shape `spec` given `args` only reads."""
    if spec.any_args:
        return True
    parsed = parse(spec, args)
    if parsed is None:
        return False
    if parsed.globbed_option_position and not spec.harmless:
        return False  # a file named `--output=x` would be read as that option
    if spec.operands is not None:
        if len(parsed.operands) > spec.operands or any(w.glob for w in parsed.operands):
            return False
    return spec.check is None or spec.check(parsed.options, parsed.operands)


# -- sed: a script that only prints ----------------------------------------------------------

_RE_BODY = r"(?:[^/\\\n]|\\.)*"
_SED_ADDR = rf"(?:\d+(?:~\d+)?|\$|/{_RE_BODY}/[IM]*)"
_SED_RANGE = rf"(?:{_SED_ADDR}(?:\s*,\s*(?:{_SED_ADDR}|[+~]\d+))?\s*!?)?"
_SED_CMD = (rf"(?:[pdnNgGhHxlPDFz=]|[qQ]\d*|s/{_RE_BODY}/{_RE_BODY}/[gpiImM0-9]*"
            rf"|y/{_RE_BODY}/{_RE_BODY}/)")
_WHITESPACE = re.compile(r"\s+")
_SED_SCRIPT = re.compile(rf"\s*{_SED_RANGE}\s*{_SED_CMD}\s*(?:[;\n]\s*{_SED_RANGE}\s*"
                         rf"{_SED_CMD}\s*)*;?\s*", re.DOTALL)


def sed_script_only_prints(script: str) -> bool:
    """A sed script of addresses and the commands that print, delete from the output or
    substitute in it (no `w`/`W`/`r`/`R`/`e`, no `s///w` or `s///e`, no blocks). Runs of
    whitespace are one space first, so the pattern's optional spaces never backtrack over
    a long run (a newline separates commands as `;` does)."""
    script = _WHITESPACE.sub(" ", script.replace("\n", ";"))
    return _SED_SCRIPT.fullmatch(script) is not None


def _sed_check(options: list[tuple[str, str | None]], operands: list[Word]) -> bool:
    scripts = [v or "" for name, v in options if name in ("-e", "--expression")]
    if not scripts:
        if not operands:
            return False
        scripts = [operands[0].text]
    return all(sed_script_only_prints(s) for s in scripts)


def _date_check(_options: list[tuple[str, str | None]], operands: list[Word]) -> bool:
    return all(w.text.startswith("+") for w in operands)  # anything else sets the clock


# -- find: tests and printing actions ----------------------------------------------------------

_FIND_GLOBAL = _set("-H -L -P")
_FIND_FLAGS = _set(
    "-print -print0 -ls -prune -quit -true -false -empty -readable -writable -executable",
    "-nouser -nogroup -depth -d -follow -xdev -mount -noleaf -daystart -ignore_readdir_race",
    "-noignore_readdir_race -not -a -o -and -or ! ( ) ,")
_FIND_VALUED = _set(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname -type",
    "-xtype -maxdepth -mindepth -size -mtime -mmin -atime -amin -ctime -cmin -newer -anewer",
    "-cnewer -used -user -group -uid -gid -perm -links -inum -samefile -fstype -regextype",
    "-printf -context")
_FIND_NEWER = re.compile(r"-newer[aBcmt][aBcmt]")


def _find_fits(args: list[Word]) -> bool:
    i = 0
    while i < len(args) and args[i].text in _FIND_GLOBAL:
        i += 1
    if i < len(args) and (args[i].text == "-D" or re.fullmatch(r"-O\d", args[i].text)):
        i += 2 if args[i].text == "-D" else 1
    while i < len(args) and not args[i].text.startswith(("-", "(", "!", ")", ",")):
        if args[i].lead:
            return False  # a path glob could expand to `-delete`
        i += 1
    while i < len(args):
        word = args[i]
        if word.lead:
            return False
        if word.text in _FIND_FLAGS:
            i += 1
        elif word.text in _FIND_VALUED or _FIND_NEWER.fullmatch(word.text):
            if i + 1 >= len(args) or args[i + 1].lead:
                return False
            i += 2
        else:
            return False  # -exec, -execdir, -ok, -okdir, -delete, -fprint*, -fls, unknown
    return True


# -- git ---------------------------------------------------------------------------------------

_GIT_GLOBAL = _set("--no-pager -P --no-optional-locks --literal-pathspecs --glob-pathspecs",
                   "--noglob-pathspecs --icase-pathspecs --no-replace-objects")
_DIFF_FLAGS = ("-p -u -s --patch --no-patch --raw --patch-with-raw --patch-with-stat "
               "--numstat --shortstat --summary --name-only --name-status --compact-summary "
               "--full-index --binary --no-renames --check --text -a -R -w -b "
               "--ignore-all-space --ignore-space-change --ignore-space-at-eol "
               "--ignore-blank-lines --ignore-cr-at-eol --minimal --patience --histogram "
               "--no-ext-diff --no-textconv --no-color --no-prefix --exit-code --quiet "
               "--color-words --irreversible-delete -D --find-copies-harder -z "
               "--function-context -W --indent-heuristic --no-indent-heuristic "
               "--no-color-moved --ita-invisible-in-index --default-prefix")
_DIFF_VALUED = ("--diff-filter --src-prefix --dst-prefix --line-prefix --diff-algorithm "
                "--anchored --stat-width --stat-name-width --stat-count --stat-graph-width "
                "-O --orderfile --skip-to --rotate-to --ignore-matching-lines -I "
                "--word-diff-regex --inter-hunk-context")
_DIFF_OPTIONAL = ("-U --unified -M --find-renames -C --find-copies -B --break-rewrites "
                  "--color --word-diff --abbrev --relative --dirstat -X --color-moved "
                  "--stat --submodule --ignore-submodules --ws-error-highlight -l")
_REV_FLAGS = ("--all --branches --tags --remotes --reflog --stdin --not --first-parent "
              "--merges --no-merges --no-min-parents --no-max-parents --reverse "
              "--topo-order --date-order --author-date-order --left-right --left-only "
              "--right-only --cherry --cherry-mark --cherry-pick --boundary --full-history "
              "--dense --sparse --simplify-merges --simplify-by-decoration --ancestry-path "
              "--walk-reflogs -g --follow --parents --children --graph --oneline "
              "--abbrev-commit --no-abbrev-commit --no-decorate --source --use-mailmap "
              "--no-walk --do-walk --relative-date --show-signature --show-notes "
              "--no-notes --expand-tabs --no-expand-tabs --regexp-ignore-case -i "
              "--extended-regexp -E --fixed-strings -F --perl-regexp --basic-regexp "
              "--all-match --invert-grep --remove-empty --show-linear-break --pickaxe-all "
              "--pickaxe-regex --log-size --mailmap --no-mailmap --single-worktree "
              "--full-diff --cc -c -m -t -r --combined-all-paths --no-graph --show-pulls "
              "--bisect --ignore-missing --exclude-first-parent-only --count "
              "--clear-decorations")
_REV_VALUED = ("-n --max-count --skip --since --after --until --before --author "
               "--committer --grep --grep-reflog --min-parents --max-parents --date "
               "--format --since-as-filter --exclude --glob --decorate-refs "
               "--decorate-refs-exclude -S -G -L --diff-merges --max-age --min-age --encoding")
_REV_OPTIONAL = "--pretty --decorate --no-walk --show-linear-break --notes --expand-tabs"

_LOG = shape(f"{_DIFF_FLAGS} {_REV_FLAGS}", f"{_DIFF_VALUED} {_REV_VALUED}",
             f"{_DIFF_OPTIONAL} {_REV_OPTIONAL}", numeric=True)
_DIFF = shape(f"{_DIFF_FLAGS} --cached --staged --no-index --merge-base -1 -2 -3 --base "
              "--ours --theirs -0", _DIFF_VALUED, _DIFF_OPTIONAL)


def _lists_only(*listing: str) -> Callable[[list[tuple[str, str | None]], list[Word]], bool]:
    """`git branch` / `git tag` create one when given a name: operands only with a
    listing option (a pattern to match)."""
    def check(options: list[tuple[str, str | None]], operands: list[Word]) -> bool:
        return not operands or any(name in listing for name, _ in options)
    return check


GIT_SHAPES: dict[str, Shape] = {
    "status": shape("-s --short -b --branch --show-stash --long -v --verbose -z --null "
                    "--no-renames --ahead-behind --no-ahead-behind --renames --no-column",
                    "--find-renames",
                    "--porcelain -u --untracked-files --ignored --ignore-submodules "
                    "--column"),
    "log": _LOG,
    "show": _LOG,
    "diff": _DIFF,
    "shortlog": shape(f"-n -s -e -c -w --numbered --summary --email --committer "
                      f"{_REV_FLAGS}", f"--group --format {_REV_VALUED}",
                      f"{_REV_OPTIONAL}", numeric=True),
    "branch": shape("-a --all -r --remotes -l --list -v -vv --verbose -q --quiet "
                    "--show-current --no-color --ignore-case -i --omit-empty",
                    "--contains --no-contains --merged --no-merged --points-at --sort "
                    "--format", "--color --abbrev --column --no-column",
                    check=_lists_only("-l", "--list")),
    "tag": shape("-l --list -n --ignore-case -i --no-color --omit-empty",
                 "--contains --no-contains --merged --no-merged --points-at --sort "
                 "--format", "--color --column --no-column",
                 check=_lists_only("-l", "--list")),
    "rev-parse": shape("--show-toplevel --show-prefix --show-cdup --git-dir --git-common-dir "
                       "--absolute-git-dir --is-inside-work-tree --is-inside-git-dir "
                       "--is-bare-repository --is-shallow-repository --verify -q --quiet "
                       "--symbolic --symbolic-full-name --all --branches --tags --remotes "
                       "--show-superproject-working-tree --local-env-vars --revs-only "
                       "--no-revs --flags --no-flags --sq --not --show-object-format "
                       "--show-ref-format --default",
                       "--prefix --since --after --until --before --path-format --git-path "
                       "--resolve-git-dir --exclude",
                       "--short --abbrev-ref --disambiguate --glob"),
    "ls-files": shape("-c -d -m -o -i -s -u -k -z -t -v -f --cached --deleted --modified "
                      "--others --ignored --stage --unmerged --killed --directory "
                      "--no-empty-directory --exclude-standard --full-name "
                      "--recurse-submodules --error-unmatch --eol --debug --sparse "
                      "--deduplicate", "-x --exclude -X --exclude-from "
                      "--exclude-per-directory --with-tree --format", "--abbrev"),
    "blame": shape("-b --root --show-stats -l -t -p --porcelain --line-porcelain -c -s -e "
                   "-f -n --show-name --show-number --show-email --incremental -w "
                   "--minimal --progress --no-progress --color-lines --color-by-age "
                   "--reverse --first-parent --score-debug --no-textconv",
                   "-L --date -S --contents --ignore-rev --ignore-revs-file",
                   "-M -C --abbrev"),
    "grep": shape("--cached --untracked --no-index --index --no-exclude-standard "
                  "--exclude-standard --recurse-submodules -a --text -I "
                  "-i --ignore-case -w --word-regexp -v --invert-match -h -H --full-name "
                  "-E --extended-regexp -G --basic-regexp -F --fixed-strings -P "
                  "--perl-regexp -n --line-number --column -l --files-with-matches "
                  "--name-only -L --files-without-match -z --null -o --only-matching -c "
                  "--count --no-color --break --heading -p --show-function -W "
                  "--function-context --and --or --not --all-match -q --quiet -r "
                  "--recursive --no-recursive --no-textconv",
                  "-e -f --max-depth -A --after-context -B --before-context -C --context "
                  "--threads -m --max-count", "--color"),
    "describe": shape("--all --tags --long --always --first-parent --exact-match --debug "
                      "--contains", "--candidates --match --exclude",
                      "--abbrev --dirty --broken"),
    "remote": shape("-v --verbose", operands=0),
}


def _git_fits(args: list[Word]) -> bool:
    i = 0
    while i < len(args) and args[i].text.startswith("-"):
        if args[i].text not in _GIT_GLOBAL:
            return False  # -c, -C, --git-dir, --work-tree, --exec-path, --config-env, ...
        i += 1
    if i >= len(args) or args[i].glob:
        return False
    spec = GIT_SHAPES.get(args[i].text)
    return spec is not None and fits(spec, args[i + 1:])


# -- the programs ------------------------------------------------------------------------------

_GREP = shape(
    "-i -y -v -w -x -c -l -L -n -h -H -o -q -s -r -R -E -F -G -P -a -I -z -Z -b -T -U "
    "--ignore-case --no-ignore-case --invert-match --word-regexp --line-regexp --count "
    "--files-with-matches --files-without-match --line-number --no-filename "
    "--with-filename --only-matching --quiet --silent --no-messages --recursive "
    "--dereference-recursive --extended-regexp --fixed-strings --basic-regexp "
    "--perl-regexp --text --null --null-data --byte-offset --initial-tab --line-buffered "
    "--binary",
    "-e -f -A -B -C -m -d -D --regexp --file --after-context --before-context --context "
    "--max-count --directories --devices --include --exclude --exclude-dir "
    "--exclude-from --label --binary-files --group-separator",
    "--color --colour --no-group-separator", numeric=True, harmless=True)
_HEAD = shape("-q -v -z --quiet --silent --verbose --zero-terminated",
              "-n -c --lines --bytes", numeric=True, harmless=True)

SHAPES: dict[str, Shape] = {
    "echo": Shape(any_args=True),
    "true": Shape(any_args=True),
    "false": Shape(any_args=True),
    "pwd": shape("-L -P", operands=0, harmless=True),
    "cd": shape("-L -P -e -@", operands=1),
    "whoami": shape(operands=0, harmless=True),
    "printenv": shape("-0 --null", harmless=True),
    "env": shape("-0 --null", operands=0),  # `env CMD` runs CMD
    "which": shape("-a", harmless=True),
    "cat": shape("-A -b -e -E -n -s -t -T -u -v --show-all --number-nonblank --number "
                 "--squeeze-blank --show-ends --show-tabs --show-nonprinting", harmless=True),
    "nl": shape("-p --no-renumber", "-b -d -f -h -i -l -n -s -v -w --body-numbering "
                "--section-delimiter --footer-numbering --header-numbering "
                "--line-increment --join-blank-lines --number-format --number-separator "
                "--starting-line-number --number-width", harmless=True),
    "head": _HEAD,
    "tail": shape("-q -v -z -f -F --quiet --silent --verbose --zero-terminated --retry",
                  "-n -c -s --lines --bytes --sleep-interval --pid --max-unchanged-stats",
                  "--follow", numeric=True, harmless=True),
    "wc": shape("-c -m -l -L -w --bytes --chars --lines --max-line-length --words",
                "--files0-from --total", harmless=True),
    "ls": shape(
        "-a -A -b -B -c -C -d -f -F -g -G -h -H -i -k -l -L -m -n -N -o -p -q -Q -r -R -s "
        "-S -t -u -U -v -x -X -Z -1 --all --almost-all --escape --ignore-backups "
        "--directory --classify --file-type --no-group --human-readable --si "
        "--dereference-command-line --dereference-command-line-symlink-to-dir "
        "--dereference --inode --kibibytes --numeric-uid-gid --literal --indicator-style "
        "--hide-control-chars --show-control-chars --quote-name --reverse --recursive "
        "--size --context --zero --full-time --group-directories-first --author",
        "-I -T -w --block-size --format --hide --ignore --quoting-style --sort --time "
        "--time-style --tabsize --width --indicator-style",
        "--color --colour --hyperlink --classify", harmless=True),
    "file": shape("-b -c -d -E -h -i -k -l -L -n -N -p -r -s -z -Z -0 --brief --checking-"
                  "printout --debug --keep-going --list --dereference --no-dereference "
                  "--mime --mime-type --mime-encoding --no-buffer --no-pad "
                  "--preserve-date --raw --special-files --uncompress --uncompress-noreport "
                  "--print0 --extension --apple",
                  "-e -F -f -P --exclude --exclude-quiet --separator --files-from "
                  "--parameter"),  # no -C (compiles a magic file), no -m
    "stat": shape("-L -f -t --dereference --file-system --terse",
                  "-c --format --printf --cached", harmless=True),
    "du": shape("-0 -a -b -c -D -h -H -k -l -L -m -P -s -S -x --null --all --apparent-size "
                "--bytes --total --dereference-args --human-readable --si --inodes "
                "--count-links --dereference --no-dereference --separate-dirs --summarize "
                "--one-file-system --time",
                "-B -d -t -X --block-size --max-depth --threshold --exclude --exclude-from "
                "--files0-from --time-style", "--time", harmless=True),
    "df": shape("-a -h -H -i -k -l -P -T --all --human-readable --si --inodes --local "
                "--portability --print-type --total --no-sync --sync",
                "-B -t -x --block-size --type --exclude-type", "--output", harmless=True),
    "tree": shape("-a -d -l -f -x -q -N -Q -p -u -g -s -h -D -F -v -t -c -U -r -i -A -S -n "
                  "-C -J -X --dirsfirst --filesfirst --noreport --prune --matchdirs "
                  "--ignore-case --gitignore --du --si --inodes --device --fromfile "
                  "--info --noreport",
                  "-L -P -I --filelimit --charset --sort --timefmt --gitfile --infofile "
                  "--hintro --houtro"),  # no -o (writes the listing to a file), no -R/-H
    "sort": shape("-b -d -f -g -i -M -h -n -R -r -V -c -C -m -s -u -z --ignore-leading-blanks "
                  "--dictionary-order --ignore-case --general-numeric-sort "
                  "--ignore-nonprinting --month-sort --human-numeric-sort --numeric-sort "
                  "--random-sort --reverse --version-sort --merge --stable --unique "
                  "--zero-terminated --debug",
                  "-k -t -S --key --field-separator --buffer-size --sort --parallel "
                  "--batch-size --files0-from --random-source",
                  "--check"),  # no -o/--output, -T/--temporary-directory, --compress-program
    "uniq": shape("-c -d -D -u -i -z --count --repeated --unique --ignore-case "
                  "--zero-terminated", "-f -s -w --skip-fields --skip-chars --check-chars",
                  "--all-repeated --group", operands=1),  # uniq IN OUT writes OUT
    "cut": shape("-s -z -n --complement --only-delimited --zero-terminated",
                 "-b -c -f -d --bytes --characters --fields --delimiter --output-delimiter",
                 harmless=True),
    "tr": shape("-c -C -d -s -t --complement --delete --squeeze-repeats --truncate-set1",
                operands=2),
    "diff": shape("-a -b -B -c -d -e -E -i -n -N -p -q -r -s -t -T -u -w -y -Z --text "
                  "--ignore-space-change --ignore-blank-lines --ignore-case --ed --rcs "
                  "--new-file --unidirectional-new-file --show-c-function --brief "
                  "--recursive --report-identical-files --expand-tabs --initial-tab "
                  "--ignore-all-space --side-by-side --ignore-tab-expansion "
                  "--ignore-trailing-space --strip-trailing-cr --minimal --speed-large-files "
                  "--suppress-common-lines --suppress-blank-empty --left-column --normal "
                  "--no-dereference --ignore-file-name-case --no-ignore-file-name-case",
                  "-C -U -W -x -X -F -I -S -D --label --exclude --exclude-from "
                  "--ignore-matching-lines --show-function-line --starting-file --from-file "
                  "--to-file --width --tabsize --horizon-lines --ifdef --line-format "
                  "--old-line-format --new-line-format --unchanged-line-format "
                  "--old-group-format --new-group-format --changed-group-format "
                  "--unchanged-group-format",
                  "--color --context --unified", harmless=True),  # no -l (runs pr)
    "basename": shape("-a -z --multiple --zero", "-s --suffix", harmless=True),
    "dirname": shape("-z --zero", harmless=True),
    "realpath": shape("-e -m -L -P -q -s -z --canonicalize-existing --canonicalize-missing "
                      "--logical --physical --quiet --strip --no-symlinks --zero",
                      "--relative-to --relative-base", harmless=True),
    "readlink": shape("-f -e -m -n -q -s -v -z --canonicalize --canonicalize-existing "
                      "--canonicalize-missing --no-newline --quiet --silent --verbose "
                      "--zero", harmless=True),
    "date": shape("-u -R --utc --universal --rfc-email --debug",
                  "-d -r -f --date --reference --file", "-I --iso-8601 --rfc-3339",
                  check=_date_check),  # no -s/--set; an operand other than +FORMAT sets it
    "grep": _GREP,
    "rg": shape(
        "-i -S -s -v -w -x -c -l -n -N -o -q -F -P -U -L -H -I -a -u -p -b -0 -. "
        "--ignore-case --smart-case --case-sensitive --invert-match --word-regexp "
        "--line-regexp --count --count-matches --files-with-matches --files-without-match "
        "--line-number --no-line-number --only-matching --quiet --fixed-strings --pcre2 "
        "--multiline --multiline-dotall --follow --with-filename --no-filename --text "
        "--hidden --no-hidden --no-ignore --no-ignore-vcs --no-ignore-dot --no-ignore-global "
        "--no-ignore-parent --no-ignore-exclude --no-ignore-files --no-ignore-messages "
        "--ignore --unrestricted --files --type-list --json --no-json --vimgrep --heading "
        "--no-heading --pretty --byte-offset --null --null-data --trim --column "
        "--no-column --stats --debug --trace --passthru --no-messages --no-config "
        "--sort-files --crlf --no-crlf --line-buffered --block-buffered --one-file-system "
        "--binary --no-binary --glob-case-insensitive --ignore-file-case-insensitive "
        "--no-unicode --unicode --no-mmap --mmap --max-columns-preview --include-zero "
        "--no-pcre2-unicode --auto-hybrid-regex --no-auto-hybrid-regex --invert-match "
        "-h --help -V --version",
        "-e -f -g -t -T -A -B -C -m -d -j -E -M -r --regexp --file --glob --iglob --type "
        "--type-not --type-add --type-clear --after-context --before-context --context "
        "--max-count --max-depth --threads --encoding --max-columns --replace --sort "
        "--sortr --max-filesize --ignore-file --path-separator --context-separator "
        "--field-match-separator --field-context-separator --regex-size-limit "
        "--dfa-size-limit --colors --color --engine --hyperlink-format --generate",
        ""),  # no --pre, --pre-glob, -z/--search-zip, --hostname-bin
    "sed": shape("-n -E -r -s -u -z --quiet --silent --regexp-extended --separate "
                 "--unbuffered --null-data --posix --debug --sandbox",
                 "-e -l --expression --line-length", check=_sed_check),
    # no -i/--in-place, no -f/--file (a script the check cannot read)
}


def is_known_safe(command: str) -> bool:
    """Whether every simple command of `command` is a known read-only program given only
    arguments it reads (the module docstring). A command longer than MAX_COMMAND_CHARS is
    asked, whatever it holds."""
    if len(command) > MAX_COMMAND_CHARS:
        return False
    parts = commands(command)
    return parts is not None and all(_simple_safe(words) for words in parts)


def _simple_safe(words: list[Word]) -> bool:
    name, args = words[0], words[1:]
    if name.glob or "=" in name.text:
        return False  # a glob for a program name; `NAME=value CMD`
    if name.text == "git":
        return _git_fits(args)
    if name.text == "find":
        return _find_fits(args)
    spec = SHAPES.get(name.text)
    return spec is not None and fits(spec, args)


def names() -> Iterable[str]:
    """The programs known safe (git and find included)."""
    return sorted({*SHAPES, "git", "find"})
