"""A fatal Raft error stops the controller in both runtimes, as Kafka's raft IO thread hands
every error to its fatal fault handler, which halts the process (status 1).

The fault is injected: the client's poll raises RaftFatalError, as it does on a safety
violation (two leaders in one epoch, a truncation below the high watermark), which a correct
quorum never produces. What is under test is each runtime's edge."""

from __future__ import annotations

import asyncio
from typing import Any

from broker_app.controller.raft_manager import RaftManager
from broker_app.raft import RaftFatalError
from tests.unit.controller.one_voter import OneVoter


def _failing_poll(*_args: Any) -> Any:
    raise RaftFatalError("node 3000: truncation to 4 below the high watermark 7")


async def test_the_raft_manager_stops_driving_and_calls_on_fatal_once() -> None:
    voter = OneVoter()
    fatal: list[str] = []
    manager = RaftManager(voter.raft, {3000: ("127.0.0.1", 1)}, "c", lambda: None,
                          on_fatal=fatal.append)
    voter.raft.poll = _failing_poll  # type: ignore[method-assign]
    manager.start()
    for _ in range(100):
        if fatal:
            break
        await asyncio.sleep(0.01)
    assert len(fatal) == 1 and "truncation to 4 below the high watermark" in fatal[0]
    assert manager.failed == fatal[0]
    manager.wakeup()
    await asyncio.sleep(0.05)
    assert len(fatal) == 1  # the driver stopped: no second report
    await manager.stop(timeout_ms=10)


def test_a_simulated_voter_halts_and_the_run_reports_it() -> None:
    from tests.unit.sim.plans import SMALL, started_cluster

    cluster = started_cluster(SMALL, 7)
    ctl = cluster.controllers["controller-1"]
    assert ctl.raft is not None and cluster.unexpected_exits() == []
    ctl.raft.poll = _failing_poll  # type: ignore[method-assign]
    assert ctl.manager is not None
    ctl.manager.wakeup()  # its driver polls at once
    cluster.loop.run_until(cluster.loop.now_ms + 10)
    assert not ctl.process.up and ctl.raft is None
    [line] = cluster.unexpected_exits()
    assert line.startswith("controller-1 halted at ") and "below the high watermark" in line
    cluster.start_node("controller-1")  # the final heal restarts it, on the same disk
    cluster.loop.run_until(cluster.loop.now_ms + 1_000)
    assert ctl.raft is not None and ctl.raft.is_active
