"""The production environment: the machine's clocks and randomness, read here and nowhere
else in broker_app (issue 26's "one clock and one rng").

Every other module takes its clock or rng from whoever builds it: in production these
functions (through BrokerClock for a broker, whose skew the `clock` nemesis sets), on the
simulator its virtual clock and seeded rng (broker_app/sim/events.py), so a simulated broker
never reads the machine's time or entropy. tests/unit/test_environment.py holds the rule.
"""

from __future__ import annotations

import random
import time


def monotonic_ms() -> int:
    """The machine's monotonic clock in ms (timeouts, sessions, deadlines)."""
    return time.monotonic_ns() // 1_000_000


def monotonic_s() -> float:
    return time.monotonic()


def wall_ms() -> int:
    """The machine's wall clock in ms since the epoch (record and commit timestamps)."""
    return time.time_ns() // 1_000_000


def wall_s() -> float:
    return time.time()


def new_rng() -> random.Random:
    """A generator of its own, seeded from the OS (never the module-level one)."""
    return random.Random()
