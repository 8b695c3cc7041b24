"""RejectLog: one WARNING line per rejected request or connection, at most `per_second`
lines a second (a token bucket with that burst); lines dropped meanwhile are counted and
reported in the next line that is written, so a flood of bad input costs a few lines a second,
not megabytes. No traceback: a client's error is not the broker's bug.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from broker_app.environment import monotonic_s


class RejectLog:
    def __init__(
        self,
        logger: logging.Logger,
        per_second: float = 5.0,
        clock: Callable[[], float] = monotonic_s,
    ) -> None:
        self.logger = logger
        self.per_second = per_second
        self.clock = clock
        self._tokens = per_second
        self._last = clock()
        self.suppressed = 0
        self.total = 0

    def warning(self, msg: str, *args: Any) -> bool:
        """Log one WARNING line unless over the rate; True if it was written."""
        self.total += 1
        now = self.clock()
        self._tokens = min(self.per_second, self._tokens + (now - self._last) * self.per_second)
        self._last = now
        if self._tokens < 1:
            self.suppressed += 1
            return False
        self._tokens -= 1
        if self.suppressed:
            msg += " (%d similar lines suppressed)"
            args = (*args, self.suppressed)
            self.suppressed = 0
        self.logger.warning(msg, *args)
        return True
