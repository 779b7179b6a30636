"""bench/newcomer.py's pure parts: the path it walks is the one README prints, and its word
count is a reader's. The walk itself (a clone, a virtualenv, pip) is the benchmark's to run
(bench/NEWCOMER_RESULTS.md), not a test's."""
from __future__ import annotations

import sys

from helpers import REPO

sys.path.insert(0, str(REPO / "bench"))
import newcomer  # noqa: E402

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_the_path_is_the_one_readme_prints():
    path = newcomer.readme_path(README)
    assert path.clone.startswith("git clone ")
    assert path.setup == ["python3 -m venv .venv && . .venv/bin/activate", "pip install -e '.[test]'"]
    assert path.tests == "python -m pytest -q"
    assert "scripted_server" in path.quickstart.code and path.quickstart_output is not None
    # one page for each of the five uses, each a page of the docs with an example
    assert len(path.pages) == 5 and all((REPO / page).is_file() for page in path.pages)


def test_each_use_page_opens_with_an_example_the_walk_can_run():
    for page in newcomer.readme_path(README).pages:
        text = (REPO / page).read_text(encoding="utf-8")
        run, _ = newcomer.first_example(text)
        if run is None:  # the session: typed into on a pseudo-terminal, as the page says
            assert all(typed in text for typed in newcomer.SESSION_INPUT), page
            assert any(b.lang == "bash" for b in newcomer.blocks(text)), page


def test_words_are_counted_as_a_reader_meets_them():
    text = ("# Title\n\n<!-- docs-test: run x -->\n```bash\necho hi  # a comment\n```\n\n"
            "| a | b |\n|---|---|\n| one-two | `x` |\n")
    # Title, echo, hi, a, comment, a, b, one-two, `x`: the comment mark and fences are not read
    assert newcomer.count_words(text) == 9
    assert newcomer.reading_minutes(476) == 2.0  # 238 words a minute


def test_outputs_compare_without_ids_and_token_counts():
    run = '{"thread_id":"01a22127-eb2f-722e-aa1b-b1842b4d2ada","input_tokens":12}\n/tmp/n1a2/x  \n'
    printed = '{"thread_id":"01a221c3-1c6a-75ce-a90f-5ac583afd08a","input_tokens":9541}\n/tmp/demo/x\n'
    assert newcomer.normalise(run, {"/tmp/n1a2": "/tmp/demo"}) == newcomer.normalise(printed, {})
