"""Issue 18's liveness guard: event-loop lag arithmetic, and SIGTERM obeyed while the loop is
hogged (the signal handler runs between bytecodes; the watchdog ends a shutdown that overruns)."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

import pytest

from broker_app.server.liveness import HARD_EXIT_CODE, LoopLag, ShutdownGuard


def test_lag_is_actual_minus_expected_wake_time() -> None:
    lag = LoopLag(interval_ms=100)
    assert lag.sleeping(1_000) == 0.1
    assert lag.on_wake(1_100) == 0  # on time
    lag.sleeping(1_100)
    assert lag.on_wake(3_700) == 2_500  # the loop was blocked 2.5 s past the wake time
    lag.sleeping(3_700)
    assert lag.on_wake(3_790) == 0  # early wake-ups (timer granularity) are not negative lag
    assert lag.snapshot() == {"current": 0, "max": 2_500, "samples": 3}


def test_lag_needs_a_sleep_before_a_wake_and_a_positive_interval() -> None:
    with pytest.raises(RuntimeError, match="sleeping"):
        LoopLag().on_wake(5)
    with pytest.raises(ValueError, match="interval"):
        LoopLag(interval_ms=0)


def test_sigterm_is_handled_while_a_coroutine_hogs_the_loop() -> None:
    exits: list[int] = []
    exited = threading.Event()

    def fake_exit(code: int) -> None:
        exits.append(code)
        exited.set()

    async def main() -> bool:
        stop = asyncio.Event()
        guard = ShutdownGuard(asyncio.get_running_loop(), stop, hard_exit_s=0.2,
                              exit_fn=fake_exit)  # fmt: skip
        guard.install()
        try:
            threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGTERM)).start()
            # A coroutine that never yields, like issue 18's fetcher: only the hard deadline
            # (a fake exit here) can end it. Bounded so a broken guard fails instead of hanging.
            give_up = time.monotonic() + 30
            while not exited.is_set() and time.monotonic() < give_up:
                pass
            await asyncio.wait_for(stop.wait(), 10)  # the handler's request reaches the loop
            return guard.signalled.is_set()
        finally:
            guard.uninstall()

    assert asyncio.run(main())
    assert exits == [HARD_EXIT_CODE]


def test_a_clean_shutdown_in_time_stands_the_watchdog_down() -> None:
    exits: list[int] = []

    async def main() -> None:
        stop = asyncio.Event()
        guard = ShutdownGuard(asyncio.get_running_loop(), stop, hard_exit_s=5,
                              exit_fn=exits.append)  # fmt: skip
        guard.install()
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.wait_for(stop.wait(), 10)
            guard.done()
        finally:
            guard.uninstall()

    asyncio.run(main())
    assert exits == []


def test_serve_until_signalled_exits_hard_when_the_shutdown_hangs() -> None:
    # What the controllers' mains run (issue 13 follow-up): a shutdown (e.g. a resign that
    # never gets an answer) that hangs past the deadline ends in the hard exit.
    from broker_app.server.liveness import serve_until_signalled

    exits: list[int] = []
    exited = asyncio.Event()

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def fake_exit(code: int) -> None:
            exits.append(code)
            loop.call_soon_threadsafe(exited.set)

        async def hanging_shutdown() -> None:
            await asyncio.sleep(3600)

        task = asyncio.create_task(serve_until_signalled(hanging_shutdown, 0.2, fake_exit))
        loop.call_later(0.05, os.kill, os.getpid(), signal.SIGTERM)
        try:
            await asyncio.wait_for(exited.wait(), 10)  # bounded: a broken guard fails
        finally:
            task.cancel()

    asyncio.run(main())
    assert exits == [HARD_EXIT_CODE]


def test_serve_until_signalled_runs_the_shutdown_and_stands_down() -> None:
    from broker_app.server.liveness import serve_until_signalled

    exits: list[int] = []
    ran: list[str] = []

    async def shutdown() -> None:
        ran.append("shutdown")

    async def main() -> None:
        asyncio.get_running_loop().call_later(0.05, os.kill, os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(serve_until_signalled(shutdown, 5, exits.append), 10)

    asyncio.run(main())
    assert (ran, exits) == (["shutdown"], [])
