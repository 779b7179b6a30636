"""The code blocks of README.md and docs/*.md, and what each one is.

A block is held to the code in one of three ways, said just above it:

- `<!-- docs-test: run NAME -->`: run by tests/docs/test_docs_examples.py (bash in a
  shell, python as a script, toml through the config loader); a later block marked
  `<!-- docs-test: output NAME -->` holds what it prints, compared after `normalise`;
  `<!-- docs-test: run NAME against SCRIPT -->` runs it in /tmp/demo with the scripted
  model server playing SCRIPT (a JSON file of the checkout, looped) on the demo port 8765
  and the demo's environment (OPENAI_API_KEY=dummy, BASEAGENT_MODEL=openai/demo,
  BASEAGENT_API_BASE), as docs/LIBRARY.md's first lines tell the reader to set them up;
- a TOML block with no marker: loaded through the config loader all the same (a config
  example that does not load is a broken example, whatever it illustrates);
- `<!-- docs-test: tested-by PATH -->`: a test file of its own runs it (PATH must exist);
- a line in italics starting with `*Illustration` (visible to the reader): an example
  that only illustrates (it needs a provider key, a remote server, a person), not run.

A python, bash, sh or toml block with none of these fails the coverage test, so a new
example is either run or says that it is not.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHECKED = ("python", "bash", "sh", "toml")
_FENCE = re.compile(r"^```(\w*)")
_MARK = re.compile(r"<!-- docs-test: (run|output|tested-by) ([\w./-]+)(?: against ([\w./-]+))? -->")


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    mark: str | None  # "run", "output" or "illustration"
    name: str | None
    server: str | None = None  # the script the scripted server plays for a run block

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def blocks(path: Path) -> list[Block]:
    return text_blocks(path.read_text(encoding="utf-8"), path)


def text_blocks(text: str, path: Path = REPO / "README.md") -> list[Block]:
    """The fenced blocks of a Markdown text (`path`: the page it is from), each with its
    mark; bench/newcomer.py reads README and the use pages with it too."""
    lines = text.splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        mark = name = server = None
        above = [line for line in lines[max(0, index - 3):index] if line.strip()]
        # The paragraph just above the block (a caption may wrap over several lines).
        start = index - 1
        while start >= 0 and not lines[start].strip():
            start -= 1
        first = start
        while first > 0 and lines[first - 1].strip():
            first -= 1
        caption = lines[first:start + 1] if start >= 0 else []
        if above:
            tag = _MARK.search(above[-1])
            if tag:
                mark, name, server = tag.group(1), tag.group(2), tag.group(3)
            elif any(line.lstrip().startswith("*Illustration") for line in caption):
                mark = "illustration"
        found.append(Block(path, index + 1, match.group(1), "\n".join(lines[index + 1:end]) + "\n",
                           mark, name, server))
        index = end + 1
    return found


def every_block() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


def normalise(text: str, replacements: dict[str, str]) -> str:
    """What differs between two honest runs: ids, token counts, the machine's paths."""
    for old, new in replacements.items():
        text = text.replace(old, new)
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", text)
    text = re.sub(r'("\w*tokens":)\d+', r"\1<n>", text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())
