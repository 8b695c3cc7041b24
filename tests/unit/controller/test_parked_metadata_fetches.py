"""controller/respond.py's ParkedMetadataFetches, on the simulator's virtual time (the same
class production's ControllerServer uses): a parked metadata fetch is answered by the first
wake() that finds data for it, else with what there is once max_wait (or the cap) passes."""

from __future__ import annotations

from typing import Any

from broker_app.controller.controller_apis import DelayedMetadataFetch
from broker_app.controller.respond import ParkedMetadataFetches
from broker_app.sim.env import SimEnv
from broker_app.sim.events import EventLoop, Process
from broker_app.sim.network import Network


def setup(cap: int | None = None) -> tuple[EventLoop, ParkedMetadataFetches]:
    loop = EventLoop(seed=1)
    process = Process(loop, "controller-1")
    process.start()
    env = SimEnv(loop, Network(loop), process, "controller-1")
    return loop, ParkedMetadataFetches(env, cap)


def test_a_wake_with_data_answers_and_one_without_keeps_it_parked() -> None:
    loop, parked = setup()
    hw = [0]
    answers: list[tuple[int, Any]] = []

    def complete(force: bool) -> Any:
        return f"records to {hw[0]}" if hw[0] > 0 or force else None

    parked.park(DelayedMetadataFetch(500, complete), lambda r: answers.append((loop.now_ms, r)))
    loop.run_until(100)
    parked.wake()  # nothing new: still parked
    assert answers == [] and parked
    hw[0] = 7
    loop.run_until(120)
    parked.wake()
    assert answers == [(120, "records to 7")] and not parked
    loop.run_until(2_000)  # its max_wait timer was cancelled: no second answer
    assert len(answers) == 1


def test_max_wait_answers_with_what_there_is_and_the_cap_lowers_it() -> None:
    for cap, expected_ms in ((None, 500), (50, 50)):
        loop, parked = setup(cap)
        answers: list[tuple[int, Any]] = []
        parked.park(DelayedMetadataFetch(500, lambda force: "empty" if force else None),
                    lambda r, answers=answers, loop=loop: answers.append((loop.now_ms, r)))
        loop.run_until(5_000)
        assert answers == [(expected_ms, "empty")]
