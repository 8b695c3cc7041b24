"""The `clock` nemesis's seam in a real broker process: POST /clock on the admin port skews the
clock the broker runs on and /state reports it; the broker keeps heartbeating and serving
while skewed. (Its
effect on the ISR needs a follower cut from the leader but not from the controller, which
local processes cannot do: chaos_plans/clock-skew.yaml shows it with Toxiproxy.)"""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from .conftest import SESSION_MS, Cluster
from .helpers import consume_all, create_topic, produce, wait_until
from .test_failures import leader_of

pytestmark = pytest.mark.timeout(120)


def _post_clock(admin_port: int, offset_ms: int, strobe_period_ms: int = 0) -> dict:
    url = (f"http://127.0.0.1:{admin_port}/clock?offset_ms={offset_ms}"
           f"&strobe_period_ms={strobe_period_ms}")
    req = urllib.request.Request(url, data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


def test_post_clock_skews_a_live_broker_and_state_reports_it(cluster: Cluster) -> None:
    create_topic(cluster.bootstrap, "t", rf=3)
    lb = cluster.brokers[leader_of(cluster)]
    wait_until(lambda: len(lb.partition("t")["isr"]) == 3, 30, "full ISR")
    assert lb.state()["clock"] == {"offset_ms": 0, "skew_ms": 0, "strobe_period_ms": 0}
    assert _post_clock(lb.admin_port, -90_000)["skew_ms"] == -90_000
    assert lb.state()["clock"]["offset_ms"] == -90_000
    # Heartbeats keep real time: two session timeouts later the controller has not fenced it
    # (another broker's metadata still names it leader, in the ISR).
    time.sleep(2 * SESSION_MS / 1000)
    other = next(b for b in cluster.brokers.values() if b is not lb)
    seen = other.partition("t")
    assert seen["leader"] == lb.node_id and lb.node_id in seen["isr"], seen
    values = [b"x%d" % i for i in range(5)]
    assert [e for e, _ in produce(cluster.bootstrap, "t", values)] == [None] * 5
    assert consume_all(cluster.bootstrap, "t", 5) == values
    assert _post_clock(lb.admin_port, 0)["offset_ms"] == 0
    assert lb.state()["clock"]["skew_ms"] == 0
