"""Answering a controller request, for both runtimes (issue 26's "I/O edges once").

ControllerApis.handle_pending answers a request at once, or names what its answer waits for;
each edge (controller/server.py's connections in production, sim/quorum.py's handler on the
simulator) hands the request to `answer_request` and gets the answer through `reply`:
- an operation that wrote (a registration, an AlterPartition, CreateTopics ...): when the
  Raft high watermark passes its records, or NOT_CONTROLLER (`refused`) if this controller
  lost leadership first; `TIMED_OUT` if neither happened within PENDING_ANSWER_TIMEOUT_MS
  (production then closes the connection; the caller's own timeout would end it anyway);
- a broker's metadata Fetch at the high watermark (`DelayedMetadataFetch`): parked in
  `ParkedMetadataFetches` until `wake()` (the runtime calls it whenever the high watermark
  moved) finds data for it, or with what it has once max_wait passes, so brokers learn
  metadata changes promptly by long polls, as in KRaft. The answer is built in the call that
  found it ready, as Kafka completes a delayed operation in the thread that satisfied it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from broker_app.env import Env, Handle
from broker_app.protocol.codec import Request

from .controller_apis import ControllerApis, DelayedMetadataFetch

PENDING_ANSWER_TIMEOUT_MS = 30_000  # an answer waiting for commit; a deposed leader fails sooner
TIMED_OUT = object()  # what `reply` gets when a pending answer never came


class ParkedMetadataFetches:
    """Metadata fetches waiting for the high watermark to move (see the module docstring).
    `max_wait_cap_ms` lowers every fetch's max_wait (the fuzzer bounds parked fetches so)."""

    def __init__(self, env: Env, max_wait_cap_ms: int | None = None) -> None:
        self.env = env
        self.max_wait_cap_ms = max_wait_cap_ms
        self._parked: list[tuple[DelayedMetadataFetch, Callable[[Any], None], Handle]] = []

    def __bool__(self) -> bool:
        return bool(self._parked)

    def clear(self) -> None:
        self._parked = []

    def park(self, delayed: DelayedMetadataFetch, reply: Callable[[Any], None]) -> None:
        entry: list[Any] = []

        def expire() -> None:
            if entry and entry[0] in self._parked:
                self._parked.remove(entry[0])
                reply(delayed.complete(True))

        wait_ms = delayed.max_wait_ms
        if self.max_wait_cap_ms is not None:
            wait_ms = min(wait_ms, self.max_wait_cap_ms)
        timer = self.env.call_later(wait_ms, expire)
        entry.append((delayed, reply, timer))
        self._parked.append(entry[0])

    def wake(self) -> None:
        """The high watermark moved: every parked fetch looks again."""
        still = []
        for delayed, reply, timer in self._parked:
            response = delayed.complete(False)
            if response is None:
                still.append((delayed, reply, timer))
            else:
                timer.cancel()
                reply(response)
        self._parked = still


def answer_request(env: Env, apis: ControllerApis, request: Request,
                   parked: ParkedMetadataFetches, reply: Callable[[Any], None]) -> None:
    """Handle a (non-Raft) request; `reply` gets its answer once, now or later (see above)."""
    result, pending = apis.handle_pending(request, env.now_ms())
    if isinstance(result, DelayedMetadataFetch):
        parked.park(result, reply)
        return
    if pending is None:
        reply(result)
        return
    answered = False

    def done(p: Any) -> None:
        nonlocal answered
        if not answered:
            answered = True
            timer.cancel()
            reply(result if p.error is None else apis.refused(request, env.now_ms()))

    def expire() -> None:
        nonlocal answered
        if not answered:
            answered = True
            reply(TIMED_OUT)

    timer = env.call_later(PENDING_ANSWER_TIMEOUT_MS, expire)
    pending.on_done(done)
