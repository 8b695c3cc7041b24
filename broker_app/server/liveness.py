"""The broker's liveness guard: event-loop lag, and a SIGTERM that is obeyed in bounded time.

- `LoopLag` (sans-I/O): a periodic task asks to be woken every `interval_ms`; `on_wake(now_ms)`
  compares the actual wake time with the expected one. The difference is how long the event
  loop was busy with something else (a coroutine that did not yield, a blocking call): heartbeats,
  metadata, client requests and signals all waited that long. `current_ms` / `max_ms` (since
  start) go to the admin `/state` as `event_loop_lag_ms`; `run_lag_monitor()` is the asyncio edge.
- `ShutdownGuard`: SIGTERM/SIGINT handlers installed with `signal.signal`, not
  `loop.add_signal_handler`: a Python signal handler runs in the main thread between bytecodes,
  so it runs even when a coroutine hogs the loop (the asyncio variant only runs when the loop
  gets control back, which a livelocked loop never does). The handler asks the loop to stop
  (`call_soon_threadsafe`) and starts a watchdog thread: if the clean shutdown has not finished
  within `hard_exit_s`, the process exits at once with HARD_EXIT_CODE (the logs then recover on
  restart, as after a crash). A second signal exits at once. Kafka bounds its controlled
  shutdown the same way (controlled.shutdown.max.retries, then it just stops).
- `serve_until_signalled(shutdown)`: the guard around a process's main wait, as the
  controllers (single and quorum) use it: wait for SIGTERM/SIGINT, run `shutdown()`, and exit
  hard if it overruns `hard_exit_s`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
from collections.abc import Awaitable, Callable

from broker_app.environment import monotonic_ms

log = logging.getLogger(__name__)

LAG_INTERVAL_MS = 100
LAG_WARN_MS = 1000  # lag above this is logged (once per episode)
HARD_EXIT_S = 8.0  # within docker stop's default 10 s grace
HARD_EXIT_CODE = 3


class LoopLag:
    """Expected vs actual wake times of a periodic task (all times in ms)."""

    def __init__(self, interval_ms: int = LAG_INTERVAL_MS) -> None:
        if interval_ms <= 0:
            raise ValueError(f"event-loop lag interval must be > 0 ms, got {interval_ms}")
        self.interval_ms = interval_ms
        self.expected_ms: int | None = None
        self.current_ms = 0
        self.max_ms = 0
        self.samples = 0

    def sleeping(self, now_ms: int) -> float:
        """The task is about to sleep at now_ms; returns how long (seconds)."""
        self.expected_ms = now_ms + self.interval_ms
        return self.interval_ms / 1000

    def on_wake(self, now_ms: int) -> int:
        """The task woke at now_ms; returns the lag measured (ms, never negative)."""
        if self.expected_ms is None:
            raise RuntimeError("on_wake() without a sleeping() before it")
        self.current_ms = max(0, now_ms - self.expected_ms)
        self.max_ms = max(self.max_ms, self.current_ms)
        self.samples += 1
        self.expected_ms = None
        return self.current_ms

    def snapshot(self) -> dict[str, int]:
        return {"current": self.current_ms, "max": self.max_ms, "samples": self.samples}


async def run_lag_monitor(lag: LoopLag, clock: Callable[[], int] = monotonic_ms) -> None:
    """The asyncio edge of LoopLag; runs until cancelled."""
    warned = False
    while True:
        await asyncio.sleep(lag.sleeping(clock()))
        ms = lag.on_wake(clock())
        if ms >= LAG_WARN_MS and not warned:
            log.warning("event loop lag %d ms: the loop was blocked", ms)
        warned = ms >= LAG_WARN_MS


class ShutdownGuard:
    """Installs SIGTERM/SIGINT handlers that stop the loop's `stop` event, with a hard deadline."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        stop: asyncio.Event,
        hard_exit_s: float = HARD_EXIT_S,
        exit_fn: Callable[[int], None] = os._exit,
    ) -> None:
        self.loop = loop
        self.stop = stop
        self.hard_exit_s = hard_exit_s
        self.exit_fn = exit_fn
        self.signalled = threading.Event()
        self.finished = threading.Event()
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._previous[sig] = signal.signal(sig, self._on_signal)

    def uninstall(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self._previous.clear()

    def _on_signal(self, signum: int, _frame: object) -> None:
        if self.signalled.is_set():
            # Asked twice: the operator does not want to wait for the clean shutdown.
            self.exit_fn(HARD_EXIT_CODE)
            return
        self.signalled.set()
        threading.Thread(target=self._watchdog, name="shutdown-watchdog", daemon=True).start()
        self.loop.call_soon_threadsafe(self.stop.set)

    def _watchdog(self) -> None:
        if self.finished.wait(self.hard_exit_s):
            return
        # logging may be blocked by the stuck thread's lock: write straight to stderr.
        os.write(2, f"shutdown did not finish within {self.hard_exit_s:g}s: exiting now "
                    f"(exit code {HARD_EXIT_CODE}); logs will be recovered on restart\n".encode())
        self.exit_fn(HARD_EXIT_CODE)

    def done(self) -> None:
        """The clean shutdown finished: the watchdog stands down."""
        self.finished.set()


async def serve_until_signalled(
    shutdown: Callable[[], Awaitable[None]],
    hard_exit_s: float = HARD_EXIT_S,
    exit_fn: Callable[[int], None] = os._exit,
) -> None:
    """Wait for SIGTERM/SIGINT, then await `shutdown()` under a ShutdownGuard (see above)."""
    stop = asyncio.Event()
    guard = ShutdownGuard(asyncio.get_running_loop(), stop, hard_exit_s, exit_fn)
    guard.install()
    try:
        await stop.wait()
        await shutdown()
        guard.done()
    finally:
        guard.uninstall()
