"""GroupCommit: concurrent callers' items flushed together, in rounds bounded when asked, each caller answered with
its own result."""

from __future__ import annotations

import asyncio

from storage.common.batching import GroupCommit


async def test_items_queued_together_go_in_one_round_and_each_caller_gets_its_own_result() -> None:
    rounds: list[list[int]] = []

    async def flush(items: list[int]) -> list[int]:
        rounds.append(items)
        await asyncio.sleep(0)
        return [item * 10 for item in items]

    group: GroupCommit[int, int] = GroupCommit(flush)
    assert await asyncio.gather(*(group.submit(n) for n in range(5))) == [0, 10, 20, 30, 40]
    assert rounds == [[0, 1, 2, 3, 4]]  # queued before the first round ran: one round
    assert await group.submit(5) == 50  # alone: at once, in a round of its own
    assert rounds[-1] == [5]


async def test_a_bounded_group_flushes_at_most_that_many_items_a_round_in_their_order() -> None:
    rounds: list[list[int]] = []

    async def flush(items: list[int]) -> list[int]:
        rounds.append(items)
        await asyncio.sleep(0)
        return items

    group: GroupCommit[int, int] = GroupCommit(flush, most=2)
    assert await asyncio.gather(*(group.submit(n) for n in range(6))) == [0, 1, 2, 3, 4, 5]
    assert rounds == [[0, 1], [2, 3], [4, 5]]


async def test_a_gathering_group_waits_while_items_keep_coming_and_never_for_a_lone_caller() -> None:
    rounds: list[list[int]] = []
    hold = asyncio.Event()

    async def flush(items: list[int]) -> list[int]:
        rounds.append(items)
        if items == [0]:
            await hold.wait()  # the first round is under way while the next items queue
        return items

    group: GroupCommit[int, int] = GroupCommit(flush, gather_s=5.0, enough=4)
    loop = asyncio.get_running_loop()
    began = loop.time()
    first = asyncio.ensure_future(group.submit(0))  # alone: its round goes at once
    await _turns(3)
    assert rounds == [[0]]
    queued = [asyncio.ensure_future(group.submit(n)) for n in (1, 2)]
    hold.set()
    await _turns(5)  # the next round finds two queued and gathers (no time passes: its step is not over)
    more = [asyncio.ensure_future(group.submit(n)) for n in (3, 4)]
    assert await asyncio.gather(first, *queued, *more) == [0, 1, 2, 3, 4]
    assert rounds == [[0], [1, 2, 3, 4]], "it gathered until it had enough, and then went at once"

    hold.clear()
    rounds.clear()
    first = asyncio.ensure_future(group.submit(6))
    await _turns(3)
    queued = [asyncio.ensure_future(group.submit(n)) for n in (7, 8)]
    hold.set()
    assert await asyncio.gather(first, *queued) == [6, 7, 8]
    assert rounds == [[6], [7, 8]]
    assert loop.time() - began < 1, "once a step brought nothing it went, long before its 5 s"


async def _turns(count: int) -> None:
    """Let the event loop run the tasks ready now, `count` times over (no time passes)."""
    for _ in range(count):
        await asyncio.sleep(0)
