"""Env: what a broker's I/O edges ask of the runtime they run on (issue 26's "I/O edges once").

The loops at the broker's edges (server/cluster_link.py: registration and heartbeats, the
metadata long-poll, AlterPartition sends; server/replica_fetcher.py: the replica fetchers;
server/respond.py: answering a parked request) are written once, as coroutines and callbacks
against this small interface, and run on two runtimes:
- production: `AsyncioEnv` below (asyncio tasks, the machine's monotonic clock, KafkaClient
  over TCP);
- the simulator: broker_app/sim/env.py's SimEnv (the same coroutines stepped by the virtual-
  time EventLoop, channels over sim/network.py, bound to one process incarnation).

Contract of an Env:
- `now_ms()` is a monotonic clock in ms;
- `sleep(ms)`, `wait(event, timeout_ms)` and a channel's `send` are awaitables; `wait` returns
  whether the event is set (False: the timeout passed first); `event()` makes an event with
  `set()`, `clear()` and `is_set()`;
- `future()` makes a future with `set_result(v)` (a second call is ignored) to await;
- `call_later(ms, fn)` runs `fn()` once after `ms`, unless the handle's `cancel()` ran first;
- `spawn(coro)` runs a coroutine as a task (started on the next turn of the loop) whose
  `cancel()` ends it; an exception escaping it is logged, not raised anywhere;
- `connect(address, client_id, timeout_ms)` makes a Channel to a peer: `send(body,
  timeout_ms=None)` returns the kio response entity or raises ClientError; `retarget(address)`
  points it elsewhere (dropping its connection); `close()`. An address is opaque to the
  callers: (host, port) in production, a node name on the simulator.
What each runtime does not model is in its own module's contract.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

from broker_app.environment import monotonic_ms

log = logging.getLogger(__name__)


class Handle(Protocol):
    def cancel(self) -> None: ...


class Event(Protocol):
    def set(self) -> None: ...
    def clear(self) -> None: ...
    def is_set(self) -> bool: ...


class Future(Protocol):
    def set_result(self, value: Any) -> None: ...
    def __await__(self) -> Any: ...


class Channel(Protocol):
    def send(self, body: Any, timeout_ms: int | None = None) -> Awaitable[Any]: ...
    def retarget(self, address: Any) -> None: ...
    def close(self) -> None: ...


class Env(Protocol):
    def now_ms(self) -> int: ...
    def sleep(self, ms: float) -> Awaitable[None]: ...
    def event(self) -> Event: ...
    def wait(self, event: Event, timeout_ms: float | None) -> Awaitable[bool]: ...
    def future(self) -> Future: ...
    def call_later(self, ms: float, fn: Callable[[], None]) -> Handle: ...
    def spawn(self, coro: Coroutine[Any, Any, None]) -> Handle: ...
    def connect(self, address: Any, client_id: str, timeout_ms: int) -> Channel: ...


class _AsyncioFuture:
    """An asyncio future whose second set_result is ignored (two callbacks may race)."""

    __slots__ = ("_fut",)

    def __init__(self) -> None:
        self._fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def set_result(self, value: Any) -> None:
        if not self._fut.done():
            self._fut.set_result(value)

    def __await__(self) -> Any:
        return self._fut.__await__()


class AsyncioEnv:
    """Production's Env: asyncio on the running loop, the machine's monotonic clock (never the
    broker's skewable BrokerClock: Kafka paces its heartbeats and retries on nanoTime, so a
    wall-clock jump never silences them), KafkaClient over TCP."""

    def now_ms(self) -> int:
        return monotonic_ms()

    async def sleep(self, ms: float) -> None:
        await asyncio.sleep(ms / 1000)

    def event(self) -> asyncio.Event:
        return asyncio.Event()

    async def wait(self, event: Any, timeout_ms: float | None) -> bool:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), None if timeout_ms is None else timeout_ms / 1000)
        return bool(event.is_set())

    def future(self) -> _AsyncioFuture:
        return _AsyncioFuture()

    def call_later(self, ms: float, fn: Callable[[], None]) -> asyncio.TimerHandle:
        return asyncio.get_running_loop().call_later(ms / 1000, fn)

    def spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        task.add_done_callback(_log_failure)
        return task

    def connect(self, address: Any, client_id: str, timeout_ms: int) -> Any:
        from broker_app.server.network_client import KafkaClient

        host, port = address
        return KafkaClient(host, port, client_id, timeout_ms)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("task %s failed", task.get_name(), exc_info=task.exception())
