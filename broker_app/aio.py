"""Small asyncio helpers shared by the broker and the controller."""

from __future__ import annotations

import asyncio
import logging

log = logging.getLogger(__name__)


async def cancel_and_wait(tasks: list[asyncio.Task[None]], rounds: int = 10) -> None:
    """Cancel until done: on Python 3.11 asyncio.wait_for can swallow a cancellation that
    arrives as its inner future completes, so one cancel() may leave a loop running."""
    pending = {t for t in tasks if not t.done()}
    for _ in range(rounds):
        if not pending:
            return
        for t in pending:
            t.cancel()
        _, pending = await asyncio.wait(pending, timeout=1.0)
    if pending:
        log.error("%d task(s) ignored cancellation", len(pending))
