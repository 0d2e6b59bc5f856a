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


async def test_a_gathering_group_waits_for_enough_items_but_not_past_its_gathering_time() -> None:
    rounds: list[list[int]] = []

    async def flush(items: list[int]) -> list[int]:
        rounds.append(items)
        return items

    group: GroupCommit[int, int] = GroupCommit(flush, gather_s=5.0, enough=3)

    async def one_by_one() -> list[int]:
        submitted = []
        for n in range(3):
            submitted.append(asyncio.ensure_future(group.submit(n)))
            await asyncio.sleep(0.01)  # each comes after the previous one could have gone
        return list(await asyncio.gather(*submitted))

    assert await asyncio.wait_for(one_by_one(), timeout=1) == [0, 1, 2]
    assert rounds == [[0, 1, 2]], "the round waited for the third item, and went as soon as it came"

    quick: GroupCommit[int, int] = GroupCommit(flush, gather_s=0.05, enough=100)
    began = asyncio.get_running_loop().time()
    assert await quick.submit(7) == 7
    waited = asyncio.get_running_loop().time() - began
    assert rounds[-1] == [7]
    assert 0.04 <= waited < 1, "alone, the item went once the gathering time was over"
