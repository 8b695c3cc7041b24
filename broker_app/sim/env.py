"""SimEnv: broker_app/env.py's Env on the simulator's virtual time, for one process.

The broker's edge loops (the same coroutines production runs on asyncio) are stepped here by
`SimTask`, a small trampoline: a coroutine awaits a `SimFuture`; a timer or a network answer
that resolves the future steps the coroutine on at once, in that same event, as the callbacks
it replaced did. Two things take an event of their own at the same virtual ms, as on asyncio:
starting a task (create_task starts it on the next turn) and waking the waiters of an event.

Bound to one incarnation of one Process: every timer and every step of a task goes through
the process's guard, so when the process dies (kill, or a restart) its tasks never run again,
and while it is paused their steps queue until resume. A task whose coroutine raises logs the
traceback, as asyncio does for a task nobody awaits.

Channels carry request entities over sim/network.py (never encoded). Not modelled: a channel
lets several requests be in flight at once, where production's KafkaClient sends one at a time
per connection.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Generator
from functools import partial
from typing import Any

from broker_app.server.network_client import ClientError

from .events import EventLoop, Process, Timer
from .network import Network

log = logging.getLogger(__name__)


class SimFuture:
    """A value to await once; callbacks run synchronously when it is resolved."""

    __slots__ = ("done", "value", "error", "_callbacks", "waiter")

    def __init__(self) -> None:
        #: the task awaiting it, if any (the invariant checker names the event by it)
        self.waiter: SimTask | None = None
        self.done = False
        self.value: Any = None
        self.error: BaseException | None = None
        self._callbacks: list[Callable[[SimFuture], None]] = []

    def set_result(self, value: Any) -> None:
        if not self.done:
            self.done = True
            self.value = value
            self._run_callbacks()

    def set_exception(self, error: BaseException) -> None:
        if not self.done:
            self.done = True
            self.error = error
            self._run_callbacks()

    def _run_callbacks(self) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            fn(self)

    def add_done_callback(self, fn: Callable[[SimFuture], None]) -> None:
        if self.done:
            fn(self)
        else:
            self._callbacks.append(fn)

    def __await__(self) -> Generator[SimFuture, None, Any]:
        if not self.done:
            yield self
        if self.error is not None:
            raise self.error
        return self.value


class SimTask:
    """A coroutine stepped by the futures it awaits, within one process incarnation."""

    __slots__ = ("coro", "process", "gen", "done", "started")

    def __init__(self, coro: Coroutine[Any, Any, None], process: Process) -> None:
        self.coro = coro
        self.process = process
        self.gen = process.generation
        self.done = False
        self.started = False

    def cancel(self) -> None:
        if not self.done:
            self.done = True
            self.coro.close()

    def __del__(self) -> None:
        # Its process died (or the run ended) before it started: a coroutine never awaited
        # is a RuntimeWarning, so close it.
        if not self.started:
            self.coro.close()

    def step(self, fut: SimFuture | None = None) -> None:
        if self.done:
            return
        self.started = True
        try:
            if fut is not None and fut.error is not None:
                waiting_on = self.coro.throw(fut.error)
            else:
                waiting_on = self.coro.send(None if fut is None else fut.value)
        except StopIteration:
            self.done = True
            return
        except Exception:
            self.done = True
            log.exception("%s: task %s failed", self.process.name, self.coro.__qualname__)
            return
        waiting_on.waiter = self
        waiting_on.add_done_callback(self._wake)

    def _wake(self, fut: SimFuture) -> None:
        # Process._run_guarded's rule, inlined (once per await): a dead incarnation never
        # runs again, a paused one queues.
        p = self.process
        if p.generation != self.gen or not p.up:
            return
        if p.paused:
            p._deferred.append((self.gen, self.step, (fut,)))
            return
        self.step(fut)


class SimEvent:
    """asyncio.Event's rule: set() wakes its waiters on the next turn of the loop (an event of
    their own at the same virtual ms), never inside the caller, which may be in the middle of
    ReplicaManager's work."""

    __slots__ = ("_set", "_waiters", "_process")

    def __init__(self, process: Process) -> None:
        self._set = False
        self._waiters: list[SimFuture] = []
        self._process = process

    def set(self) -> None:
        if self._set:
            return
        self._set = True
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            self._process.call_later(0, partial(fut.set_result, True))

    def clear(self) -> None:
        self._set = False

    def is_set(self) -> bool:
        return self._set


class SimChannel:
    """A connection from the env's process to a node of the simulated network."""

    __slots__ = ("env", "address", "client_id", "timeout_ms")

    def __init__(self, env: SimEnv, address: str, client_id: str, timeout_ms: int) -> None:
        self.env = env
        self.address = address
        self.client_id = client_id
        self.timeout_ms = timeout_ms

    def send(self, body: Any, timeout_ms: int | None = None) -> SimFuture:
        fut = SimFuture()
        dst = self.address

        def failed(reason: str) -> None:
            fut.set_exception(ClientError(f"{type(body).__name__} to {dst} failed: {reason}"))

        self.env.net.rpc(self.env.name, dst, body, fut.set_result, failed,
                         self.timeout_ms if timeout_ms is None else timeout_ms)  # fmt: skip
        return fut

    def retarget(self, address: str) -> None:
        self.address = address

    def close(self) -> None:
        pass


class SimEnv:
    """Env of `process` (named `name` on `net`): what it schedules belongs to the incarnation
    that scheduled it."""

    def __init__(self, loop: EventLoop, net: Network, process: Process, name: str) -> None:
        self.loop = loop
        self.net = net
        self.process = process
        self.name = name

    def now_ms(self) -> int:
        return self.loop.now_ms

    def sleep(self, ms: float) -> SimFuture:
        fut = SimFuture()
        self.process.call_later(int(ms), partial(fut.set_result, None))
        return fut

    def event(self) -> SimEvent:
        return SimEvent(self.process)

    def wait(self, event: SimEvent, timeout_ms: float | None) -> SimFuture:
        fut = SimFuture()
        if event._set:
            fut.set_result(True)
            return fut
        event._waiters.append(fut)
        if timeout_ms is not None:
            timer = self.process.call_later(int(timeout_ms), partial(_time_out, event, fut))
            fut.add_done_callback(lambda _f: timer.cancel())
        return fut

    def future(self) -> SimFuture:
        return SimFuture()

    def call_later(self, ms: float, fn: Callable[[], None]) -> Timer:
        return self.process.call_later(int(ms), fn)

    def run_now(self, coro: Coroutine[Any, Any, None]) -> SimTask:
        """Start `coro` in this event (the simulator's edges, which are already the event a
        production connection task would run in; not part of the Env)."""
        task = SimTask(coro, self.process)
        task.step()
        return task

    def spawn(self, coro: Coroutine[Any, Any, None]) -> SimTask:
        task = SimTask(coro, self.process)
        self.process.call_later(0, task.step)
        return task

    def connect(self, address: str, client_id: str, timeout_ms: int) -> SimChannel:
        return SimChannel(self, address, client_id, timeout_ms)


def _time_out(event: SimEvent, fut: SimFuture) -> None:
    if fut in event._waiters:
        event._waiters.remove(fut)
    fut.set_result(False)
