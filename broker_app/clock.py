"""BrokerClock: the broker's one clock seam, which the `clock` nemesis skews (issue 17).

Contract:
- `wall_ms()` is the wall clock (record timestamps: the LogValidator's window, LogAppendTime,
  time retention, offset-commit times); `monotonic_ms()` is the clock of every timeout
  (ReplicaManager: ISR lag, purgatory deadlines; group session and rebalance timeouts).
  Both add `offset_ms()`.
- `skew(offset_ms, strobe_period_ms=0)`: from now on the clocks read `offset_ms` ahead
  (behind when negative). With a strobe period the offset alternates between `offset_ms`
  and 0 every period, starting with `offset_ms` (Jepsen's strobe). `skew(0)` resets it.
- The real time source is injectable (`now_s`, seconds) so tests step it by hand;
  `BrokerClock.of_ms` takes millisecond sources (the simulator's virtual clock).

Deviation: Kafka reads the OS clock (Time.milliseconds is System.currentTimeMillis, used for
ISR lag and group session timeouts too); a skewed broker here shifts only its own time reads.
The asyncio loop's timers (call_later, wait_for), socket timeouts and the controller link's
heartbeat pacing keep real time (Kafka paces heartbeats on its event queue's nanoTime too);
purgatory deadlines and AlterPartition retries follow the skewed clock here, where Kafka
uses its monotonic hiResClockMs for the purgatory.
"""

from __future__ import annotations

from collections.abc import Callable

from broker_app import environment


class BrokerClock:
    def __init__(self, now_s: Callable[[], float] = environment.monotonic_s,
                 wall_s: Callable[[], float] = environment.wall_s) -> None:  # fmt: skip
        self._now_ms: Callable[[], int] = lambda: int(now_s() * 1000)
        self._wall_ms: Callable[[], int] = lambda: int(wall_s() * 1000)
        self._offset_ms = 0
        self._strobe_period_ms = 0
        self._since_ms = 0  # real monotonic ms when the skew began (strobe phase)
        self._fixed = False  # of_ms: never skewed

    @classmethod
    def of_ms(cls, now_ms: Callable[[], int], wall_ms: Callable[[], int]) -> BrokerClock:
        """A clock on millisecond sources (the simulator's virtual time), read exactly and
        never skewed: its readers get the sources themselves (the simulator reads this clock
        for every record and timer), so skew() refuses (the `clock` action is not
        simulated: the simulated brokers share the virtual clock)."""
        clock = cls()
        clock._now_ms, clock._wall_ms = now_ms, wall_ms
        clock.monotonic_ms, clock.wall_ms = now_ms, wall_ms  # type: ignore[method-assign]
        clock._fixed = True
        return clock

    def skew(self, offset_ms: int, strobe_period_ms: int = 0) -> None:
        if self._fixed:
            raise ValueError("a clock on fixed sources (BrokerClock.of_ms) is never skewed")
        if strobe_period_ms < 0:
            raise ValueError(f"strobe period {strobe_period_ms} ms must be >= 0")
        self._offset_ms = int(offset_ms)
        self._strobe_period_ms = int(strobe_period_ms)
        self._since_ms = self._now_ms()

    def offset_ms(self) -> int:
        if not self._strobe_period_ms or not self._offset_ms:
            return self._offset_ms
        elapsed = self._now_ms() - self._since_ms
        return self._offset_ms if (elapsed // self._strobe_period_ms) % 2 == 0 else 0

    def wall_ms(self) -> int:
        return self._wall_ms() + self.offset_ms()

    def monotonic_ms(self) -> int:
        return self._now_ms() + self.offset_ms()

    def describe(self) -> dict[str, int]:
        """For the admin /state: what the nemesis set and what applies now."""
        return {"offset_ms": self.offset_ms(), "skew_ms": self._offset_ms,
                "strobe_period_ms": self._strobe_period_ms}  # fmt: skip
