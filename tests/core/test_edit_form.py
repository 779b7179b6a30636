"""The edit form for big files (helps/edit_form.py): SEARCH/REPLACE blocks read from a reply
the ways small models write them, and checked before anything is written: a block applies
when its text occurs exactly once; anything else is refused with a note for the model, and a
Python file is never left unparseable."""
from __future__ import annotations

import ast
import os

import pytest

from baseagent.helps.edit_form import (EditBlock, Merge, check_edit_blocks, has_edit_blocks,
                                       merge_by_name, parse_edit_blocks, tail_ends)


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


EDIT = block("    return a - b\n", "    return a + b\n")

PARSE_CASES = [
    ("aider's form: the path, then a fence",
     f"calc.py\n```python\n{EDIT}```\n", [EditBlock("calc.py", "    return a - b\n",
                                                      "    return a + b\n")]),
    ("no fence at all", f"calc.py\n{EDIT}", [EditBlock("calc.py", "    return a - b\n",
                                                         "    return a + b\n")]),
    ("the path in the fence's info string", f"```python pkg/calc.py\n{EDIT}```",
     [EditBlock("pkg/calc.py", "    return a - b\n", "    return a + b\n")]),
    ("a `# path` comment in the fence", f"```python\n# pkg/calc.py\n{EDIT}```",
     [EditBlock("pkg/calc.py", "    return a - b\n", "    return a + b\n")]),
    ("a decorated label", f"**`./pkg/calc.py`**\n\n```\n{EDIT}```",
     [EditBlock("pkg/calc.py", "    return a - b\n", "    return a + b\n")]),
    ("File: label", f"File: pkg/calc.py\n{EDIT}",
     [EditBlock("pkg/calc.py", "    return a - b\n", "    return a + b\n")]),
    ("a sentence naming the file", f"Change the sum in pkg/calc.py:\n```python\n{EDIT}```",
     [EditBlock("pkg/calc.py", "    return a - b\n", "    return a + b\n")]),
    ("a numbered label", f"1. pkg/calc.py\n{EDIT}",
     [EditBlock("pkg/calc.py", "    return a - b\n", "    return a + b\n")]),
    ("a path quoted in a sentence", f"In `pkg/calc.py` the sign is wrong\n```\n{EDIT}```",
     [EditBlock("pkg/calc.py", "    return a - b\n", "    return a + b\n")]),
    ("a sentence quoting two paths names neither", f"`a.py` and `b.py` differ\n{EDIT}",
     [EditBlock("", "    return a - b\n", "    return a + b\n")]),
    ("a second block without a path takes the first's",
     "calc.py\n" + EDIT + block("x = 1\n", "x = 2\n"),
     [EditBlock("calc.py", "    return a - b\n", "    return a + b\n"),
      EditBlock("calc.py", "x = 1\n", "x = 2\n")]),
    ("two files", "a.py\n" + block("a\n", "b\n") + "\nb.py\n" + block("c\n", "d\n"),
     [EditBlock("a.py", "a\n", "b\n"), EditBlock("b.py", "c\n", "d\n")]),
    ("an empty SEARCH creates", "new.py\n" + block("", "x = 1\n"),
     [EditBlock("new.py", "", "x = 1\n")]),
    ("no path anywhere", EDIT, [EditBlock("", "    return a - b\n", "    return a + b\n")]),
    ("an unfinished block is left out", "calc.py\n<<<<<<< SEARCH\nx\n=======\ny\n", []),
    ("a head inside a block restarts it",
     "calc.py\n<<<<<<< SEARCH\nx\n" + block("a\n", "b\n"),
     [EditBlock("calc.py", "a\n", "b\n")]),
    ("short markers and UPDATED", "calc.py\n<<<<< SEARCH\na\n=====\nb\n>>>>> UPDATED\n",
     [EditBlock("calc.py", "a\n", "b\n")]),
    ("prose only", "Change `a - b` to `a + b` in calc.py.", []),
]


@pytest.mark.parametrize("name,text,expected", PARSE_CASES, ids=[c[0] for c in PARSE_CASES])
def test_parse_edit_blocks(name, text, expected):
    assert parse_edit_blocks(text) == expected
    assert has_edit_blocks(text) == ("SEARCH" in text)


BIG = "".join(f"def f{i}(a, b):\n    return a - b + {i}\n\n\n" for i in range(500))


def test_a_block_that_matches_once_applies_and_nothing_is_written(tmp_path):
    (tmp_path / "big.py").write_text(BIG)
    check = check_edit_blocks(tmp_path, [EditBlock("big.py", "    return a - b + 250\n",
                                                   "    return a + b + 250\n")])
    assert check.refused == []
    assert check.new_texts == {"big.py": BIG.replace("a - b + 250\n", "a + b + 250\n")}
    assert (tmp_path / "big.py").read_text() == BIG


def test_an_ambiguous_block_is_refused_with_a_clear_note(tmp_path):
    (tmp_path / "big.py").write_text(BIG)
    check = check_edit_blocks(tmp_path, [EditBlock("big.py", "(a, b):\n    return a - b",
                                                   "(a, b):\n    return a + b")])
    assert check.new_texts == {}
    [note] = check.refused
    assert "ambiguous: 500 matches" in note and "include more lines" in note
    assert note.startswith("big.py (SEARCH/REPLACE block 1) was not applied")


CHECK_CASES = [
    # name, files, blocks, new texts, words every refusal note holds (one list per note)
    ("later blocks see the earlier ones' edits", {"m.py": "x = 1\ny = 2\n"},
     [EditBlock("m.py", "x = 1\n", "x = 3\n"), EditBlock("m.py", "x = 3\ny = 2\n", "z = 0\n")],
     {"m.py": "z = 0\n"}, []),
    ("read_file's line numbers copied into the block are read past",
     {"m.py": "def total(a, b):\n    return a - b\n"},
     [EditBlock("m.py", "L1: def total(a, b):\nL2:     return a - b\n",
                "L1: def total(a, b):\nL2:     return a + b\n")],
     {"m.py": "def total(a, b):\n    return a + b\n"}, []),
    ("not found: the closest line is named", {"m.py": "def total(a, b):\n    return a - b\n"},
     [EditBlock("m.py", "    return a-b\n", "    return a + b\n")], {},
     [["was not found in m.py", "closest line is 2", "return a - b"]]),
    ("whitespace-tolerant, re-indented to the file",
     {"m.py": "class A:\n    def f(self):\n        return 1\n"},
     [EditBlock("m.py", "def f(self):\n    return 1\n", "def f(self):\n    return 2\n")],
     {"m.py": "class A:\n    def f(self):\n        return 2\n"}, []),
    ("whitespace-tolerant: trailing spaces", {"m.py": "a = 1   \nb = 2\n"},
     [EditBlock("m.py", "a = 1\nb = 2\n", "a = 3\nb = 4\n")], {"m.py": "a = 3\nb = 4\n"}, []),
    ("a Python file that would no longer parse is refused",
     {"m.py": "def f():\n    return 1\n"},
     [EditBlock("m.py", "    return 1\n", "    return (1\n")], {},
     [["would no longer parse", "line 2", "m.py"]]),
    ("the next block still applies after a refused one", {"m.py": "a = 1\nb = 2\n"},
     [EditBlock("m.py", "a = 1\n", "a = (\n"), EditBlock("m.py", "b = 2\n", "b = 3\n")],
     {"m.py": "a = 1\nb = 3\n"}, [["would no longer parse"]]),
    ("a file that did not parse before may stay so", {"m.py": "def f(:\n    x = 1\n"},
     [EditBlock("m.py", "    x = 1\n", "    x = 2\n")], {"m.py": "def f(:\n    x = 2\n"}, []),
    ("other files are not parsed", {"m.txt": "a\n"}, [EditBlock("m.txt", "a\n", "(\n")],
     {"m.txt": "(\n"}, []),
    ("outside the workspace", {}, [EditBlock("../x.py", "", "x = 1\n"),
                                  EditBlock("/etc/passwd", "root", "x")], {},
     [["outside the workspace"], ["outside the workspace"]]),
    ("into .git", {".git/config": "[core]\n"}, [EditBlock(".git/config", "[core]\n", "x\n")],
     {}, [["under .git"]]),
    ("creates a new file", {}, [EditBlock("pkg/new.py", "", "x = 1")],
     {"pkg/new.py": "x = 1\n"}, []),
    ("a missing file with SEARCH text", {}, [EditBlock("gone.py", "x = 1\n", "x = 2\n")], {},
     [["gone.py does not exist"]]),
    ("an existing file with an empty SEARCH", {"m.py": "x = 1\n"},
     [EditBlock("m.py", "", "y = 2\n")], {}, [["already exists", "SEARCH section is empty"]]),
    ("SEARCH equal to REPLACE", {"m.py": "x = 1\n"}, [EditBlock("m.py", "x = 1\n", "x = 1\n")],
     {}, [["the same"]]),
    ("no path", {}, [EditBlock("", "x\n", "y\n")], {}, [["names no file"]]),
    ("overlapping matches count as two", {"m.txt": "aaa\n"}, [EditBlock("m.txt", "aa", "b")],
     {}, [["ambiguous: 2 matches"]]),
    ("edits that undo each other change nothing", {"m.py": "x = 1\n"},
     [EditBlock("m.py", "x = 1\n", "x = 2\n"), EditBlock("m.py", "x = 2\n", "x = 1\n")], {}, []),
]


@pytest.mark.parametrize("name,files,blocks,new_texts,notes", CHECK_CASES,
                         ids=[c[0] for c in CHECK_CASES])
def test_check_edit_blocks(tmp_path, name, files, blocks, new_texts, notes):
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    check = check_edit_blocks(tmp_path, blocks)
    assert check.new_texts == new_texts
    assert len(check.refused) == len(notes), check.refused
    for note, words in zip(check.refused, notes):
        for word in words:
            assert word in note, note
    for path, text in files.items():
        assert (tmp_path / path).read_text() == text  # nothing written


def test_a_symlink_out_of_the_workspace_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.py").write_text("x = 1\n")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside, root / "link")
    check = check_edit_blocks(root, [EditBlock("link/x.py", "x = 1\n", "x = 2\n")])
    assert check.new_texts == {} and "outside the workspace" in check.refused[0]


def test_may_write_refuses(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\n")
    check = check_edit_blocks(tmp_path, [EditBlock("m.py", "x = 1\n", "x = 2\n")],
                              may_write=lambda path: False)
    assert check.new_texts == {} and "not allowed" in check.refused[0]


def test_a_parsed_reply_checks_end_to_end(tmp_path):
    (tmp_path / "big.py").write_text(BIG)
    reply = ("The bug is in f7.\n\nbig.py\n```python\n"
             + block("def f7(a, b):\n    return a - b + 7\n",
                     "def f7(a, b):\n    return a + b + 7\n")
             + "```\n")
    check = check_edit_blocks(tmp_path, parse_edit_blocks(reply))
    assert check.refused == []
    assert "def f7(a, b):\n    return a + b + 7\n" in check.new_texts["big.py"]
    assert check.new_texts["big.py"].count("\n") == BIG.count("\n")


def test_a_file_named_by_the_end_of_its_path_is_found(tmp_path):
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "core.py").write_text("x = 1\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "core.py").write_text("y = 1\n")
    check = check_edit_blocks(tmp_path, [EditBlock("pkg/core.py", "x = 1\n", "x = 2\n")])
    assert check.new_texts == {"src/pkg/core.py": "x = 2\n"} and check.refused == []
    # Two files end with `core.py`: the one holding the SEARCH text.
    check = check_edit_blocks(tmp_path, [EditBlock("core.py", "y = 1\n", "y = 2\n")])
    assert check.new_texts == {"tests/core.py": "y = 2\n"}
    # Both hold it: refused, naming them.
    (tmp_path / "src" / "pkg" / "core.py").write_text("y = 1\n")
    check = check_edit_blocks(tmp_path, [EditBlock("core.py", "y = 1\n", "y = 2\n")])
    assert check.new_texts == {} and "2 files end with that name" in check.refused[0]
    assert "src/pkg/core.py" in check.refused[0] and "tests/core.py" in check.refused[0]
    # A new file (empty SEARCH) is created where it is named, never looked for.
    check = check_edit_blocks(tmp_path, [EditBlock("core.py", "", "z = 1\n")])
    assert check.new_texts == {"core.py": "z = 1\n"}


def test_blocks_for_a_file_found_by_its_name_count_under_its_path(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "core.py").write_text("a = 1\nb = 2\n")
    check = check_edit_blocks(tmp_path, [EditBlock("core.py", "a = 1\n", "a = 3\n"),
                                         EditBlock("core.py", "b = 2\n", "b = 4\n")])
    assert check.new_texts == {"src/core.py": "a = 3\nb = 4\n"}
    assert [b.path for b in check.applied] == ["src/core.py", "src/core.py"]


def test_a_reply_of_many_heads_without_tails_is_read_in_linear_time():
    """Half a megabyte of heads (the most a reply carries at the output caps) with one
    divider and one tail at the end: each head's block is a search, not a scan."""
    text = "x.py\n" + "<<<<<<< SEARCH\n" * 40_000 + "a\n=======\nb\n>>>>>>> REPLACE\n"
    assert parse_edit_blocks(text) == [EditBlock("x.py", "a\n", "b\n")]


def test_a_long_search_in_a_long_file_is_matched_exactly_or_not_at_all(tmp_path):
    (tmp_path / "m.txt").write_text("a\n" * 100_000)
    check = check_edit_blocks(tmp_path, [EditBlock("m.txt", " a\n" * 1_000 + "b\n", "c\n")])
    assert check.new_texts == {} and "was not found" in check.refused[0]


MODULE = '''"""Doc."""
from __future__ import annotations

import os


class Engine:
    """E."""

    def ordinal(self, n):
        return f"{n}st"

    @property
    def name(self):
        return "e"


class Other:
    def name(self):
        return "o"


def helper(x):
    return x
'''

MERGES = [
    # name, code, the names replaced (or words of the reason it is not merged), a change
    ("a method sent alone", "def ordinal(self, n):\n    return f'{n}th'\n",
     ["Engine.ordinal"], ("        return f'{n}th'\n", "        return f\"{n}st\"\n")),
    ("a class with the method", "class Engine:\n    def ordinal(self, n):\n        return 1\n",
     ["Engine.ordinal"], ("        return 1\n", "return f\"{n}st\"")),
    ("a function, an import, a demo call", "import re\n\ndef helper(x):\n    return x + 1\n\n"
     "print(helper(1))\n", ["helper"],
     ("from __future__ import annotations\nimport re\n", "print(")),
    ("a decorated method keeps its decorator's place",
     "class Engine:\n    @property\n    def name(self):\n        return 'E'\n",
     ["Engine.name"], ("        return 'E'\n", "return \"e\"")),
    ("a new function", "def fresh():\n    pass\n", "no function `fresh`", None),
    ("a method several classes have", "def name(self):\n    return 1\n",
     "several classes have a method `name`", None),
    ("a new method in a class", "class Engine:\n    def fresh(self):\n        pass\n",
     "no method `fresh`", None),
    ("elided", "def helper(x):\n    y = x\n    # ... rest of the function unchanged\n",
     "leaves code out", None),
    ("not Python", "def helper(x):\n  return (x\n", "does not parse", None),
    ("the same", "def helper(x):\n    return x\n", "nothing would change", None),
]


@pytest.mark.parametrize("name,code,expected,change", MERGES, ids=[m[0] for m in MERGES])
def test_merge_by_name(name, code, expected, change):
    merge = merge_by_name(MODULE, code)
    if isinstance(expected, str):
        assert isinstance(merge, str) and expected in merge, merge
        return
    assert isinstance(merge, Merge) and merge.names == expected
    ast.parse(merge.text)
    present, gone = change
    assert present in merge.text and gone not in merge.text
    # Everything else is kept.
    for kept in ("class Other:", "def helper(x):", "class Engine:", '"""Doc."""'):
        assert kept in merge.text


def test_where_each_block_closes_is_read_as_the_parser_reads_tails():
    """The repository probe stops a reply near its cap after its last whole block."""
    text = ("a.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\nmore\r\n"
            "  >>>>>>>  updated  \r\n>>>> REPLACE\n")
    ends = tail_ends(text)
    assert [text[:end].rsplit("\n", 1)[-1].strip() for end in ends] == \
        [">>>>>>> REPLACE", ">>>>>>>  updated"]
    assert tail_ends("no blocks") == []
