"""Delayed operations and the purgatory that holds them (Kafka's DelayedOperation/Purgatory).

Contract: no threads, no timers. Callers pass `now_ms`: an operation is created with an absolute
deadline, `try_complete_else_watch` either completes it at once or parks it under its keys,
`check_and_complete(key)` retries the operations watching a key after that key's state changed
(HW moved, ISR changed, data appended), and `expire_due(now_ms)` times out the overdue ones.
An operation completes exactly once: either `on_complete` runs (after `try_complete` decided it
is done, or after expiry via `on_expiration`), never both twice.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar


class DelayedOperation:
    """One request waiting for a condition. Subclasses implement try_complete and on_complete."""

    def __init__(self, deadline_ms: int) -> None:
        self.deadline_ms = deadline_ms
        self._completed = False

    @property
    def is_completed(self) -> bool:
        return self._completed

    def force_complete(self) -> bool:
        """Complete now; True only for the one caller that actually completed it."""
        if self._completed:
            return False
        self._completed = True
        self.on_complete()
        return True

    def try_complete(self) -> bool:
        """Check the condition; if met, call force_complete() and return its result."""
        raise NotImplementedError

    def on_complete(self) -> None:
        """Deliver the result (exactly once)."""
        raise NotImplementedError

    def on_expiration(self) -> None:
        """Hook run after an expiry completed the operation (metrics, logging)."""


Op = TypeVar("Op", bound=DelayedOperation)


class Purgatory(Generic[Op]):
    """Operations keyed by e.g. TopicPartition; time only moves through expire_due(now_ms)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._watchers: dict[Hashable, list[Op]] = {}
        self._deadlines: list[tuple[int, int, Op]] = []
        self._seq = itertools.count()

    def try_complete_else_watch(self, operation: Op, keys: Iterable[Hashable]) -> bool:
        """Complete `operation` now if it can; otherwise watch it under every key.

        Returns True when it completed during this call.
        """
        keys = list(keys)
        if not keys:
            raise ValueError(f"purgatory {self.name}: an operation needs at least one key")
        if operation.try_complete():
            return True
        for key in keys:
            self._watchers.setdefault(key, []).append(operation)
        # A second check closes the race Kafka guards against too: the state may have changed
        # between the first check and the watch (here only through re-entrant callbacks).
        if operation.try_complete():
            self._purge(keys)
            return True
        heapq.heappush(self._deadlines, (operation.deadline_ms, next(self._seq), operation))
        return False

    def check_and_complete(self, key: Hashable) -> int:
        """Retry the operations watching `key`; returns how many completed."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        completed = 0
        for op in list(ops):
            if op.is_completed:
                continue
            if op.try_complete():
                completed += 1
        self._purge([key])
        return completed

    def expire_due(self, now_ms: int) -> list[Op]:
        """Complete, as expired, every operation whose deadline is <= now_ms; returns them."""
        expired: list[Op] = []
        popped = False
        while self._deadlines and self._deadlines[0][0] <= now_ms:
            _, _, op = heapq.heappop(self._deadlines)
            popped = True
            if op.force_complete():
                op.on_expiration()
                expired.append(op)
        if popped:
            # Also drops operations completed from outside (force_complete by the I/O edge's
            # own timer) that still sit under keys nothing has touched since (Kafka's purge).
            self._purge(list(self._watchers))
        return expired

    def watched(self, key: Hashable | None = None) -> int:
        """Pending operations under `key`, or distinct pending operations overall."""
        if key is not None:
            return sum(1 for op in self._watchers.get(key, ()) if not op.is_completed)
        return len({id(op) for ops in self._watchers.values() for op in ops if not op.is_completed})

    def next_deadline_ms(self) -> int | None:
        """The earliest deadline among pending operations, for the I/O edge's timer."""
        while self._deadlines and self._deadlines[0][2].is_completed:
            heapq.heappop(self._deadlines)
        return self._deadlines[0][0] if self._deadlines else None

    def _purge(self, keys: Iterable[Hashable]) -> None:
        for key in keys:
            ops = self._watchers.get(key)
            if ops is None:
                continue
            live = [op for op in ops if not op.is_completed]
            if live:
                self._watchers[key] = live
            else:
                del self._watchers[key]
