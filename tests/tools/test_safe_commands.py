"""The known-safe allow-list (tools/safe_commands.py): which commands `-a untrusted` runs
without asking. Table-driven: ordinary read-only commands that must stay auto-approved, and
the attacks (each runs code, writes a file or changes state) that must be asked. End to end
through the CLI: tests/cli/test_untrusted_allow_list.py."""
from __future__ import annotations

import pytest

from baseagent.tools.safe_commands import (MAX_COMMAND_CHARS, Word, commands, is_known_safe,
                                           sed_script_only_prints)

SAFE = [
    # the ordinary ones
    "ls", "ls -la", "ls -lah --color=never src", "ls -1 --sort=time", "ls *.py",
    "cat f", "cat -n a.py b.py", "cat a.py | grep def", "grep -rn x .", "grep -rn 'a|b' src",
    "grep -E 'x$' f", "grep -C 3 -e foo -e bar f", "grep --include='*.py' -rl TODO .",
    "grep -5 foo f", "grep -rn foo src/*.py", "head -n 5 f", "head -5 f", "head -n5 f",
    "tail -n +10 f", "tail -f log", "wc -l", "wc -l a.py b.py", "pwd", "pwd; echo hi",
    "echo 'hello world'", "echo -e 'a\\tb'", "true", "false", "which python3", "whoami",
    "printenv PATH", "env", "cd src && ls", "cd -", "basename a/b.py .py", "dirname a/b",
    "realpath -e .", "readlink -f x", "date", "date +%s", "date -u +%Y-%m-%d",
    "date -d yesterday +%F", "file a.py", "file -b --mime-type a.py", "stat -c %s f",
    "du -sh .", "du -h --max-depth=1 .", "df -h", "df --output=source,avail .",
    "tree -L 2", "tree -a -I node_modules", "nl -ba f", "cut -d: -f1 /etc/passwd",
    "cut -f 2 --output-delimiter=, f", "tr a-z A-Z", "tr -d '\\r'", "diff a b",
    "diff -u a b", "diff -ru --exclude=.git x y",
    # sort and uniq read their operands
    "sort f", "sort -nr f", "sort -k2,2n -t, f", "sort -S 1k f", "sort -u a b c",
    "sort --key=2 --field-separator=: f", "sort -c f", "uniq f", "uniq -c f",
    "sort f | uniq -c | sort -nr | head", "uniq", "cat f | uniq -d",
    # find with its tests and printing actions
    "find .", "find . -name '*.py'", "find src -type f -name '*.py' -print",
    "find . -maxdepth 2 -type d", "find . \\( -name a -o -name b \\) -print0",
    "find . -newer a.py", "find . -path ./node_modules -prune -o -name '*.js' -print",
    "find . -size +1M -ls", "find -L . -name x", "find . -newermt 2020-01-01",
    "find . -name '*.py' -printf '%p\\n'", "find . ! -name '*.pyc'",
    # sed that only prints
    "sed -n 1,5p f", "sed -n '10,20p' f", "sed 's/a/b/g' f", "sed -n '/start/,/end/p' f",
    "sed -e 1d -e 's/x/y/' f", "sed -ne 5p f", "sed -n '$p' f", "sed 5q f",
    "sed -E 's/(a|b)+/x/2' f", "cat f | sed -n 3p",
    # rg
    "rg -n foo src", "rg foo", "rg -i --hidden -g '*.py' foo", "rg --files",
    "rg -l -t py TODO", "rg -C2 foo", "rg -e foo -e bar", "rg --json foo",
    # git, read-only
    "git status", "git status -sb", "git status --porcelain=v2 -uno", "git diff",
    "git diff --stat", "git diff --cached", "git diff HEAD~1 -- a.py", "git diff -U10 a b",
    "git diff --no-index a b", "git diff --word-diff=color", "git diff -M50% HEAD",
    "git log", "git log --oneline -5", "git log --oneline -n 5", "git log -n5",
    "git log -p -1 a.py", "git log --format='%h %s' --since=2.weeks",
    "git log --graph --decorate --all", "git log -S foo --oneline", "git log -Sfoo",
    "git log --author=me -- src", "git show", "git show HEAD", "git show HEAD:a.py",
    "git show --stat HEAD~2", "git --no-pager log -3", "git -P diff",
    "git branch", "git branch -a", "git branch -vv", "git branch --show-current",
    "git branch --list 'feat*'", "git branch --contains HEAD", "git tag", "git tag -l 'v1*'",
    "git rev-parse HEAD", "git rev-parse --abbrev-ref HEAD", "git rev-parse --show-toplevel",
    "git rev-parse --short HEAD", "git ls-files", "git ls-files -o --exclude-standard",
    "git blame a.py", "git blame -L 10,20 a.py", "git grep foo", "git grep -n foo",
    "git grep -no foo", "git grep -e foo --and -e bar", "git grep --no-index foo .",
    "git describe --tags", "git describe --always --dirty", "git shortlog -sn",
    "git remote -v", "git status && git diff", "git log --oneline | head -3",
    "git diff -- '*.py'", "git diff -- *.py",
]

UNSAFE = [
    # the attacks: code run or a file written with no question
    "sort -S 1k --compress-program=bash cmds.txt", "sort --compress-program bash f",
    "sort --compress-prog=bash f", "sort -S1k --compress-program=sh f",
    "git grep --no-index -Obash foo", "git grep -O foo", "git grep --open-files-in-pager foo",
    "git grep -nObash foo", "git grep --open-files-in-pager=bash foo",
    "uniq IN OUT", "uniq -c in out", "uniq in *", "sort -oFILE f", "sort -o FILE f",
    "sort --output=FILE f", "sort --output FILE f", "sort --out=FILE f", "sort -nroFILE f",
    "git log --output=FILE", "git log --output FILE", "git diff --output=x",
    "git show --output=x", "git log --out=x",
    # more ways to write or run through a safe program
    "sort -T /tmp f", "sort --temporary-directory=/tmp f", "tree -o out.txt",
    "tree -R -H x", "file -C -m magic", "date -s 2020-01-01", "date --set=yesterday",
    "date 010100002020", "diff -l a b", "rg --pre ./x foo", "rg --pre=./x foo",
    "rg -z foo", "rg --search-zip foo", "rg --hostname-bin=./x foo", "rg --pre-glob '*' foo",
    "find . -delete", "find . -exec rm {} +", "find . -execdir sh -c x \\;",
    "find . -ok rm {} \\;", "find . -fprint out", "find . -fprintf out %p",
    "find . -fls out", "find . -name x -delete", "find . -name *.py",
    "sed -i s/a/b/ f", "sed -i.bak s/a/b/ f", "sed --in-place s/a/b/ f", "sed -f script f",
    "sed 'w out' f", "sed -n '1w out' f", "sed 's/a/b/w out' f", "sed 's/x/id/e' f",
    "sed 1e f", "sed -n 'r /etc/passwd' f", "sed", "sed -n", "sed '1{p}' f",
    # git: writes, global options, unknown subcommands
    "git push", "git commit -m x", "git checkout x", "git -c core.pager=evil log",
    "git -C /tmp log", "git --git-dir=/x log", "git --exec-path=/x status",
    "git --work-tree=/x status", "git --config-env=core.pager=X log", "git log --ext-diff",
    "git diff --ext-diff", "git diff --textconv", "git branch new", "git branch -d old",
    "git branch -D old", "git branch -m a b", "git branch -c a b", "git tag v1",
    "git tag -d v1", "git remote add o url", "git remote -v add o url", "git stash",
    "git config user.name x", "git status --help", "git", "git --no-pager", "git st",
    "git grep --textconv foo", "git log --abbrev-commit --output=x", "git log *",
    "git diff *", "git l*g", "git diff ''*", "sort \"\"* f", "sort ''?* f",
    # shell syntax
    "rm -rf x", "echo hi > a.py", "echo hi >> a.py", "cat < /etc/passwd",
    "cat a.py | tee b.py", "ls $(rm x)", "ls `rm x`", "ls \"$(rm x)\"", "ls \"`rm x`\"",
    "sleep 1 & rm x", "ls &", "ls\nrm x", "ls;\nrm x", "(ls)", "{ ls; }", "ls |& cat",
    "cat $HOME/x", "cat \"$HOME\"", "sort $'--compress-program=bash' f",
    "sort {--compress-program=bash,f}", "cat {a,b}", "echo {1..3}", "X=1 ls",
    "GIT_PAGER=evil git log", "ls # hidden", "ls ||", "; ls", "ls ;; ls", "ls | ",
    "echo 'unclosed", "echo \"unclosed", "echo x\\", "python3 x.py", "bash -c ls",
    "sh -c ls", "env rm x", "env -i rm x", "./ls", "/bin/ls; rm x", "/bin/cat f",
    "xargs rm", "ls | xargs rm", "*", "l? -la", "exec ls", "eval ls", "command ls",
    "time ls", "nice ls", "timeout 1 ls", "cd a b", "cd *", "tr [:a:] x",
    # an unknown or abbreviated option is unsafe, even for a harmless program
    "ls --exec=x", "cat --evil", "head --line=3 f", "sort -Z f", "uniq --output=x",
    "wc --files0-from", "sort -k", "grep -e",
    # a value that looks like an option is read as one where a program takes none
    "sort -k --compress-program=bash f", "git log --glob --output=x", "grep -e -x f",
    # longer than anyone reads as known safe (and the check stays bounded)
    "ls " + "a " * 9000,
]


@pytest.mark.parametrize("command", SAFE)
def test_ordinary_read_only_commands_stay_auto_approved(command):
    assert is_known_safe(command), command


@pytest.mark.parametrize("command", UNSAFE)
def test_attacks_and_anything_unknown_are_asked(command):
    assert not is_known_safe(command), command


@pytest.mark.parametrize("line, expected", [
    ("ls -la", [["ls", "-la"]]),
    ("grep 'a b' \"c d\" e\\ f", [["grep", "a b", "c d", "e f"]]),
    ("a && b || c; d | e", [["a"], ["b"], ["c"], ["d"], ["e"]]),
    ("echo 'x;y' \"p|q\"", [["echo", "x;y", "p|q"]]),
    ("echo \"a\\\"b\" 'c\\d'", [["echo", 'a"b', "c\\d"]]),
    ("git show HEAD@{1}", [["git", "show", "HEAD@{1}"]]),  # no comma: not expanded
    ("ls $(x)", None), ("ls {a,b}", None), ("ls >x", None), ("", None), ("   ", None),
])
def test_the_command_line_is_read_as_bash_reads_it(line, expected):
    parsed = commands(line)
    assert (None if parsed is None else [[w.text for w in ws] for ws in parsed]) == expected


def test_globs_are_marked_where_bash_expands_them():
    (words,) = commands("ls *.py 'x*' src/*.c \\*")
    assert [(w.text, w.glob, w.lead) for w in words[1:]] == [
        ("*.py", True, True), ("x*", False, False), ("src/*.c", True, False),
        ("*", False, False)]
    assert words[0] == Word("ls")


@pytest.mark.parametrize("script, prints", [
    ("1,5p", True), ("$!d", True), ("/a/,/b/p", True), ("s/a\\/b/c/gI", True),
    ("y/abc/xyz/", True), ("1~2p;3q", True), ("1,+3p", True), ("=", True),
    ("w out", False), ("1W out", False), ("s/a/b/w out", False), ("s/a/b/e", False),
    ("e ls", False), ("r x", False), ("s|a|b|", False), ("1{p}", False), (":a;ba", False),
])
def test_sed_scripts_that_only_print(script, prints):
    assert sed_script_only_prints(script) is prints


def test_the_length_bound_is_where_it_says():
    assert is_known_safe("ls " + "a" * (MAX_COMMAND_CHARS - 3))
    assert not is_known_safe("ls " + "a" * (MAX_COMMAND_CHARS - 2))
    # whitespace runs are read once, not backtracked over (was quadratic in the run)
    assert sed_script_only_prints("1p" + "  \n\t 2p" * 20_000)
    assert not sed_script_only_prints(" " * 200_000 + "X")
