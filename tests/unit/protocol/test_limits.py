"""ConnectionCounter (max.connections, max.connections.per.ip) and RejectLog's rate limit."""

from __future__ import annotations

import logging

import pytest

from broker_app.reject_log import RejectLog
from broker_app.server.limits import ConnectionCounter, ConnectionLimits


def test_counter_refuses_over_the_total_and_per_ip_limits_and_frees_on_release() -> None:
    c = ConnectionCounter(ConnectionLimits(max_connections=3, max_connections_per_ip=2))
    assert c.admit("a") is None and c.admit("a") is None
    assert "max.connections.per.ip=2" in (c.admit("a") or "")
    assert c.admit("b") is None
    assert "max.connections=3" in (c.admit("c") or "")
    c.release("a")
    assert c.admit("c") is None
    assert (c.total, c.by_ip) == (3, {"a": 1, "b": 1, "c": 1})


def test_reject_log_writes_at_most_the_rate_and_reports_what_it_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    rl = RejectLog(logging.getLogger("t.rejects"), per_second=2, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="t.rejects"):
        written = [rl.warning("bad request %d", i) for i in range(10)]
        assert written == [True, True] + [False] * 8
        now[0] = 1.0  # two more tokens
        assert rl.warning("bad request %d", 10)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["bad request 0", "bad request 1",
                     "bad request 10 (8 similar lines suppressed)"]  # fmt: skip
    assert all(r.exc_info is None for r in caplog.records)  # no tracebacks for client errors
    assert rl.total == 11
