"""Progress: the run's live status line, from a thread.

On a TTY the line is rewritten in place every `tty_interval_s`; otherwise (CI logs, pipes)
one plain line is printed every `plain_interval_s`. Fault events are printed as lines of
their own as they happen. `line()` is pure formatting over the workload's counters.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import TextIO


def line(elapsed_s: float, stats: Mapping[str, int], ops_per_s: float, faults: list[str],
         phase: str) -> str:
    acked = stats.get("send:ok", 0)
    failed = stats.get("send:fail", 0) + stats.get("poll:fail", 0)
    info = stats.get("send:info", 0) + stats.get("poll:info", 0)
    active = ",".join(faults) if faults else "-"
    return (f"[{elapsed_s:6.1f}s] {phase:<9} {ops_per_s:6.1f} ops/s  acked {acked}  "
            f"failed {failed}  info {info}  faults: {active}")


class Progress:
    def __init__(self, stats: Callable[[], Mapping[str, int]], faults: Callable[[], list[str]],
                 out: TextIO | None = None, tty_interval_s: float = 0.5,
                 plain_interval_s: float = 5.0) -> None:
        self.stats = stats
        self.faults = faults
        self.out = out or sys.stdout
        self.tty = bool(getattr(self.out, "isatty", lambda: False)())
        self.interval_s = tty_interval_s if self.tty else plain_interval_s
        self.phase = "starting"
        self._t0 = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._last = (self._t0, 0)

    def print(self, text: str) -> None:
        """A line of its own (a fault starting or stopping, a phase change)."""
        with self._lock:
            if self.tty:
                self.out.write("\r\x1b[2K")
            self.out.write(f"[{time.monotonic() - self._t0:6.1f}s] {text}\n")
            self.out.flush()

    def _tick(self) -> None:
        stats = dict(self.stats())
        now = time.monotonic()
        total = sum(v for k, v in stats.items() if not k.endswith(":invoke"))
        t, n = self._last
        rate = (total - n) / (now - t) if now > t else 0.0
        self._last = (now, total)
        text = line(now - self._t0, stats, rate, self.faults(), self.phase)
        with self._lock:
            self.out.write(f"\r\x1b[2K{text}" if self.tty else text + "\n")
            self.out.flush()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self._tick()
            except Exception:  # progress must never break a run
                pass

    def start(self) -> Progress:
        self._t0 = time.monotonic()
        self._last = (self._t0, 0)
        self._thread = threading.Thread(target=self._loop, name="progress", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        if self.tty:
            with self._lock:
                self.out.write("\n")
                self.out.flush()
