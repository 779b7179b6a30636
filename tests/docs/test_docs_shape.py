"""The front door stays small and the docs readable (issue 43): README at most 200 lines, and
no line of README or docs/ over 120 characters outside code blocks (a long table row is
written as a list instead)."""
from __future__ import annotations

from docs_examples import REPO, pages


def test_readme_fits_on_two_screens():
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 200


def test_no_prose_line_over_120_characters():
    long = []
    for page in pages():
        fenced = False
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("```"):
                fenced = not fenced
            elif not fenced and len(line) > 120:
                long.append(f"{page.relative_to(REPO)}:{number} ({len(line)})")
    assert not long, long
