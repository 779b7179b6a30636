"""The server's event log (serve/log.py): numbered, bounded, read by cursors."""
from __future__ import annotations

import asyncio
import threading

import pytest

from baseagent.serve.log import EventLog


def test_ids_cursor_and_replay() -> None:
    log = EventLog()
    entries = [log.append("e", f'{{"n":{n}}}') for n in range(5)]
    assert [e.id for e in entries] == [f"{log.epoch}.{n}" for n in range(1, 6)]
    assert log.cursor(None) == 0 and log.cursor("") == 0
    assert log.cursor(entries[1].id) == 2
    assert log.cursor("other.2") == 0  # another log's id: replay what is kept
    assert log.cursor(f"{log.epoch}.99") == 5  # not beyond the end
    assert log.cursor(f"{log.epoch}.x") == 0
    out, gap = log.since(2)
    assert [e.number for e in out] == [3, 4, 5] and not gap
    assert log.since(5) == ([], False)
    assert [e.number for e in log.since(0, limit=2)[0]] == [1, 2]


@pytest.mark.parametrize("max_bytes,max_events,kept", [(10, 100, 2), (1000, 3, 3), (1, 100, 1)])
def test_bounded_with_a_gap_for_who_fell_behind(max_bytes: int, max_events: int,
                                                 kept: int) -> None:
    log = EventLog(max_bytes=max_bytes, max_events=max_events)
    for n in range(10):
        log.append("e", "12345")
    assert log.size[0] == kept and log.last_number == 10
    out, gap = log.since(0)
    assert gap and [e.number for e in out] == list(range(11 - kept, 11))
    assert log.since(10 - kept) == (out, False)


def test_a_waiting_reader_wakes_on_append_and_on_close() -> None:
    log = EventLog()

    async def main() -> list[str]:
        woke = []
        waiter = asyncio.create_task(log.wait_after(0, timeout=10))
        await asyncio.sleep(0.01)
        threading.Thread(target=log.append, args=("e", "{}")).start()
        await asyncio.wait_for(waiter, 5)
        woke.append("append")
        waiter = asyncio.create_task(log.wait_after(1, timeout=10))
        await asyncio.sleep(0.01)
        threading.Thread(target=log.close).start()
        await asyncio.wait_for(waiter, 5)
        woke.append("close")
        await asyncio.wait_for(log.wait_after(1, timeout=10), 1)  # closed: no wait
        return woke

    assert asyncio.run(main()) == ["append", "close"]


def test_a_reader_that_times_out_leaves_no_waiter_behind() -> None:
    log = EventLog()
    asyncio.run(log.wait_after(0, timeout=0.01))
    assert log._waiters == []
