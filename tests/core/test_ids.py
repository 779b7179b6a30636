"""Thread ids (core/ids.py): UUIDv7, time-ordered as strings."""
from __future__ import annotations

import time
import uuid

import pytest

from baseagent.core.ids import new_thread_id, uuid7_time_ms


def test_ids_are_uuid7_and_carry_their_creation_time() -> None:
    before = time.time_ns() // 1_000_000
    thread_id = new_thread_id()
    after = time.time_ns() // 1_000_000
    parsed = uuid.UUID(thread_id)
    assert str(parsed) == thread_id  # canonical lower-case, hyphenated
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
    assert before <= uuid7_time_ms(thread_id) <= after + 1


def test_ids_sort_in_creation_order_as_strings() -> None:
    ids = [new_thread_id() for _ in range(5000)]  # many share a millisecond
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("text", [
    "2f82f8c3-8f28-45cc-86f1-ee33754f1914",  # a v4 id from before
    "not-a-uuid",
    "",
    "0199a213-81c0-7800-cabb-bbab2a035a53",  # version 7 but not the RFC variant
])
def test_time_of_anything_but_a_uuid7_is_none(text: str) -> None:
    assert uuid7_time_ms(text) is None


def test_time_of_a_known_uuid7() -> None:
    # Codex's documented example id: 0x0199a21381c0 ms after the epoch
    assert uuid7_time_ms("0199a213-81c0-7800-8aa1-bbab2a035a53") == 0x0199A21381C0
