"""The guards that cut a streamed reply stuck in a loop (llm/repetition.py), fed as a
stream feeds them: the text so far, a chunk at a time."""
from __future__ import annotations

from pathlib import Path

from baseagent.llm import repetition
from baseagent.llm.repetition import RepetitionGuard

PRIMES = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73]
CODONS = {"AUG": "Methionine", "UUU": "Phenylalanine", "UUC": "Phenylalanine",
          "UUA": "Leucine", "UUG": "Leucine", "UCU": "Serine", "UCC": "Serine",
          "UCA": "Serine", "UCG": "Serine", "UAU": "Tyrosine", "UAC": "Tyrosine",
          "UGU": "Cysteine", "UGC": "Cysteine", "UGG": "Tryptophan", "UAA": "STOP",
          "UAG": "STOP", "UGA": "STOP"}


def streamed(text: str, guard: RepetitionGuard, chunk: int = 16) -> int | None:
    """Where the guard cut `text` streamed in chunks, or None."""
    for end in range(chunk, len(text) + chunk, chunk):
        if guard.runaway(min(end, len(text)), lambda: text[:end]):
            return min(end, len(text))
    return None


def test_a_tail_that_repeats_with_only_its_numbers_changing_is_cut_early():
    # as the 1.5B model wrote it for the n-th prime: no two lines alike
    enumeration = "def prime(number):\n" + "".join(
        f"    if number == {i}:\n        return {i * 6 + 1}\n" for i in range(1, 400))
    guard = RepetitionGuard(blind_to_digits=True)
    cut = streamed(enumeration, guard)
    assert cut is not None and cut < 2_500 and len(enumeration) > 12_000
    assert guard.span >= 1_200 and guard.period == len("    if number == #:\n        return #\n")
    # the verbatim guard never sees it: the numbers differ
    verbatim = RepetitionGuard()
    assert not any(verbatim.runaway(end, lambda end=end: enumeration[:end])
                   for end in range(256, len(enumeration), 256))


def test_the_span_of_a_repeat_with_numbers_counts_the_text_as_written():
    # numbers of several digits: the span read with each number as one `#` is shorter
    # than the text it covers; a caller cuts the text itself where the repeat began
    header = "def prime(number):\n"
    enumeration = header + "".join(
        f"    if number == {i}:\n        return {i * 6007 + 1}\n" for i in range(1000, 1400))
    guard = RepetitionGuard(blind_to_digits=True)
    cut = streamed(enumeration, guard)
    assert cut is not None
    start = cut - guard.span
    assert header.startswith(enumeration[:start]) and start >= len(header) - 1
    assert enumeration[start:cut].lstrip("\n").startswith("    if number == 1000:\n")


def test_real_code_and_tables_of_names_are_read_to_their_end():
    table = "PROTEINS = {\n" + "".join(f'    "{c}": "{p}",\n' for c, p in CODONS.items()) * 3 \
        + "}\n"
    code = Path(repetition.__file__).read_text(encoding="utf-8")
    primes = "PRIMES = [" + ", ".join(map(str, PRIMES)) + "]\n"
    for text in (table, code, table + primes + code):
        assert len(text) > 500
        assert streamed(text, RepetitionGuard(blind_to_digits=True)) is None, text[:80]
