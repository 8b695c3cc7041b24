"""cancel_and_wait: a loop that swallows one cancellation (as Python 3.11's asyncio.wait_for
does when its inner future completes at the moment of cancel) still ends, and stop() returns."""

from __future__ import annotations

import asyncio

from broker_app.aio import cancel_and_wait


async def _swallows_first_cancel(rounds: list[int]) -> None:
    swallowed = False
    while True:
        try:
            await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            rounds.append(1)
            if swallowed:
                raise
            swallowed = True  # the race in wait_for: the cancel is lost, the loop goes on


async def test_a_swallowed_cancellation_is_repeated_until_the_task_ends() -> None:
    rounds: list[int] = []
    task = asyncio.create_task(_swallows_first_cancel(rounds))
    await asyncio.sleep(0.02)
    await asyncio.wait_for(cancel_and_wait([task]), 10)
    assert task.done() and task.cancelled()
    assert len(rounds) == 2  # one cancel was not enough; a plain cancel-then-await would hang


async def test_a_task_that_ignores_cancellation_is_given_up_after_bounded_rounds() -> None:
    released = asyncio.Event()

    async def stubborn() -> None:
        while not released.is_set():
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                continue

    task = asyncio.create_task(stubborn())
    await asyncio.wait_for(cancel_and_wait([task], rounds=2), 10)
    assert not task.done()  # reported and given up on, not waited on forever
    released.set()
    await asyncio.wait_for(task, 10)
