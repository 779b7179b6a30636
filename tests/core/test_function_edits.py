"""helps/function_edits.py: whole functions or methods in plain code blocks, for the symbols
the model was shown, merged by name into their files (and nothing else)."""
from __future__ import annotations

import textwrap

from baseagent.helps.function_edits import function_edits
from baseagent.helps.localise import Candidate

MODULE = textwrap.dedent("""\
    import time


    class Cache:
        def __getitem__(self, key):
            return self.data[key]


    class TTLCache(Cache):
        def __getitem__(self, key):
            if self.timer() <= self.expires:
                return 1
            raise KeyError(key)


    def helper(x):
        return x
    """)


def shown(*symbols: tuple[str, str, str]) -> list[Candidate]:
    return [Candidate(path, symbol, 1, 2, kind, 1.0, ()) for path, symbol, kind in symbols]


def reply(code: str, before: str = "") -> str:
    return f"{before}\n```python\n{code}```\n"


def test_a_method_sent_alone_and_indented_goes_into_its_class(tmp_path):
    (tmp_path / "c.py").write_text(MODULE)
    code = ("    def __getitem__(self, key):\n        if self.timer() < self.expires:\n"
            "            return 1\n        raise KeyError(key)\n")
    check = function_edits(reply(code), shown(("c.py", "TTLCache.__getitem__", "method")),
                           tmp_path)
    assert check.refused == []
    new = check.new_texts["c.py"]
    assert "if self.timer() < self.expires:" in new
    assert "return self.data[key]" in new  # Cache's own method untouched
    assert (tmp_path / "c.py").read_text() == MODULE  # nothing written


def test_a_name_shown_twice_needs_the_file_named_before_the_block(tmp_path):
    (tmp_path / "a.py").write_text("def helper(x):\n    return x\n")
    (tmp_path / "b.py").write_text("def helper(x):\n    return x\n")
    code = "def helper(x):\n    return x + 1\n"
    both = shown(("a.py", "helper", "function"), ("b.py", "helper", "function"))
    assert function_edits(reply(code), both, tmp_path).new_texts == {}
    check = function_edits(reply(code, before="In b.py:"), both, tmp_path)
    assert list(check.new_texts) == ["b.py"]


def test_what_matches_no_shown_symbol_or_leaves_code_out_is_not_written(tmp_path):
    (tmp_path / "c.py").write_text(MODULE)
    helper = shown(("c.py", "helper", "function"))
    assert function_edits(reply("def other(x):\n    return 2\n"), helper,
                          tmp_path).new_texts == {}
    elided = function_edits(reply("def helper(x):\n    # ... rest unchanged\n    ...\n"),
                            helper, tmp_path)
    assert elided.new_texts == {} and "leaves code out" in elided.refused[0]
    assert function_edits(reply("def helper(x:\n"), helper, tmp_path).new_texts == {}
    refused = function_edits(reply("def helper(x):\n    return x * 2\n"), helper, tmp_path,
                             may_write=lambda path: False)
    assert refused.new_texts == {} and "not a file this edit may change" in refused.refused[0]


def test_other_languages_and_oversized_blocks_are_ignored(tmp_path):
    (tmp_path / "c.py").write_text(MODULE)
    helper = shown(("c.py", "helper", "function"))
    text = "```js\ndef helper(x):\n    return 3\n```\n"
    assert function_edits(text, helper, tmp_path).new_texts == {}
    big = "def helper(x):\n" + "    x += 1\n" * 10_000 + "    return x\n"
    assert function_edits(reply(big), helper, tmp_path).new_texts == {}
