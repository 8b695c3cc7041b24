"""EventLoop and Process: the simulator's virtual clock, seeded randomness and node lifetimes.

Contract:
- One `EventLoop` per simulated run: a heap of (time_ms, seq, callback). `seq` is a global
  counter, so two events at the same virtual millisecond run in the order they were scheduled
  and a run is a pure function of its seed. `rng` is the run's only source of randomness
  (network delays, incarnation and topic ids); nothing here reads the wall clock.
- A `Process` is one simulated OS process (a broker or the controller). Everything it schedules
  goes through `call_later`, which guards the callback with the process's generation: a crash
  (`kill`) or a restart (`start`) bumps the generation, so timers and message handlers of the
  dead incarnation never run. While `paused` (SIGSTOP) its callbacks are queued and run, in
  order, on `resume` - timers fire late, exactly as a stopped process sees it.
- `after_event`, if set, is called with each event's callback right after it ran (before
  `run_until`'s `stop`): the invariant checker's hook (sim/invariants.py). It must not
  schedule events or draw from `rng`, so a run with a checker is the same run.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from functools import partial
from typing import Any


class Timer:
    """A scheduled callback; `cancel()` drops it (and whatever its closure holds) at once."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[], None]) -> None:
        self.fn: Callable[[], None] | None = fn

    @property
    def cancelled(self) -> bool:
        return self.fn is None

    def cancel(self) -> None:
        # The heap keeps the entry until its time (a request's timeout: up to 30 s); without
        # its callback it no longer keeps the request, response and closures alive.
        self.fn = None


class EventLoop:
    def __init__(self, seed: int) -> None:
        self.now_ms = 0
        self.rng = random.Random(seed)
        self._heap: list[tuple[int, int, Timer]] = []
        self._seq = 0
        self.events_run = 0
        self.after_event: Callable[[Callable[[], None]], None] | None = None

    def clock(self) -> int:
        """The virtual monotonic clock in ms (what ReplicaManager and friends are given)."""
        return self.now_ms

    def call_at(self, when_ms: int, fn: Callable[[], None]) -> Timer:
        timer = Timer(fn)
        self._seq += 1
        now = self.now_ms
        heapq.heappush(self._heap, (when_ms if when_ms > now else now, self._seq, timer))
        return timer

    def call_later(self, delay_ms: int, fn: Callable[[], None]) -> Timer:
        delay = int(delay_ms)
        return self.call_at(self.now_ms + delay if delay > 0 else self.now_ms, fn)

    def run_until(self, until_ms: int, stop: Callable[[], bool] | None = None) -> bool:
        """Run events up to virtual time `until_ms` (inclusive); with `stop`, return True as
        soon as stop() holds after an event (checked between events)."""
        heap = self._heap
        pop = heapq.heappop
        after = self.after_event
        while heap and heap[0][0] <= until_ms:
            when, _seq, timer = pop(heap)
            fn = timer.fn
            if fn is None:
                continue
            timer.fn = None  # ran: a late cancel() is a no-op
            self.now_ms = when
            self.events_run += 1
            fn()
            if after is not None:
                after(fn)
            if stop is not None and stop():
                return True
        self.now_ms = max(self.now_ms, until_ms)
        return False


class Process:
    """One simulated process: up or down, maybe paused; see the module contract."""

    def __init__(self, loop: EventLoop, name: str) -> None:
        self.loop = loop
        self.name = name
        self.up = False
        self.paused = False
        self.generation = 0
        self._deferred: list[tuple[int, Callable[..., None], tuple[Any, ...]]] = []

    def start(self) -> None:
        self.generation += 1
        self.up = True
        self.paused = False
        self._deferred = []

    def kill(self) -> None:
        self.generation += 1
        self.up = False
        self.paused = False
        self._deferred = []

    def pause(self) -> None:
        if self.up:
            self.paused = True

    def resume(self) -> None:
        if not self.paused:
            return
        self.paused = False
        deferred, self._deferred = self._deferred, []
        for gen, fn, args in deferred:
            self.loop.call_later(0, partial(self._run_guarded, gen, fn, args))

    def _run_guarded(self, gen: int, fn: Callable[..., None], args: tuple[Any, ...]) -> None:
        if self.generation != gen or not self.up:
            return
        if self.paused:
            self._deferred.append((gen, fn, args))
            return
        fn(*args)

    def guard(self, fn: Callable[..., None]) -> Callable[..., None]:
        """`fn` bound to this incarnation: dropped if the process died, queued while paused."""
        gen = self.generation

        # No reference from `run` to itself (a paused call is queued as (gen, fn, args)):
        # a self-referencing closure is a reference cycle, and every object it reached
        # (requests, responses, callbacks) then waited for the cyclic GC instead of being
        # freed at once - the GC was most of a schedule's time.
        def run(*args: Any) -> None:
            self._run_guarded(gen, fn, args)

        return run

    def call_later(self, delay_ms: int, fn: Callable[[], None]) -> Timer:
        # guard(fn), without a Python closure frame per event (partial is C)
        return self.loop.call_later(delay_ms, partial(self._run_guarded, self.generation, fn, ()))

    def every(self, interval_ms: int, fn: Callable[[], None]) -> None:
        """Run fn every interval_ms for as long as this incarnation lives."""

        def tick() -> None:
            fn()
            self.call_later(interval_ms, tick)

        self.call_later(interval_ms, tick)
