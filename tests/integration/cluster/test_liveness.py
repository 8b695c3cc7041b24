"""Issue 18's liveness guard on real processes: a controller and three brokers while one partition
is kept busy by an acks=all producer. The controller's own view is the judge: it keeps hearing
every broker (no session expiry, no fencing, no re-registration), and a follower told to stop
under that load shuts down cleanly (exit 0, not the hard-exit or a SIGKILL)."""

from __future__ import annotations

import signal
import threading
from typing import Any

import pytest
from confluent_kafka import Producer
from procutil import stop_process

from .helpers import create_topic, wait_until

pytestmark = pytest.mark.timeout(180)

SAMPLES = 15


def _keep_producing(bootstrap: str, stop: threading.Event, acked: list[int]) -> None:
    p = Producer({
        "bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
        "message.timeout.ms": 30_000, "queue.buffering.max.messages": 20_000,
    })  # fmt: skip

    def done(err: Any, _msg: Any) -> None:
        if err is None:
            acked[0] += 1

    value = b"x" * 512
    while not stop.is_set():
        try:
            p.produce("busy", value, partition=0, on_delivery=done)
        except BufferError:
            p.poll(0.05)  # the queue is full: the brokers are as busy as we can make them
        p.poll(0)
    p.flush(10)


def test_brokers_keep_heartbeating_while_a_partition_is_busy(cluster) -> None:
    create_topic(cluster.bootstrap, "busy", rf=3, config={"min.insync.replicas": "2"})
    ctl = cluster.controller

    def led_with_full_isr() -> bool:
        p = ctl.state()["image"]["topics"]["busy"]["partitions"]["0"]
        return p["leader"] >= 0 and len(p["isr"]) == 3

    wait_until(led_with_full_isr, 30, "busy-0 led with a full ISR")
    epochs = {b: r["epoch"] for b, r in ctl.state()["image"]["brokers"].items()}
    stop = threading.Event()
    acked = [0]
    producer = threading.Thread(target=_keep_producing, args=(cluster.bootstrap, stop, acked))
    producer.start()
    try:
        wait_until(lambda: acked[0] >= 1000, 60, "1000 acks=all writes acknowledged")
        start_leo = {i: b.partition("busy")["leo"] for i, b in cluster.brokers.items()}
        seen = 0

        def sample() -> bool:
            nonlocal seen
            st = ctl.state()
            timeout = st["session_timeout_ms"]
            for b, reg in st["image"]["brokers"].items():
                assert not reg["fenced"], f"controller fenced broker {b} under load: {st}"
                assert reg["epoch"] == epochs[b], f"broker {b} had to register again: {st}"
                age = st["ms_since_heartbeat"][b]
                assert age < timeout, f"broker {b} silent for {age} ms (session {timeout} ms)"
            seen += 1
            return seen >= SAMPLES

        wait_until(sample, 60, f"{SAMPLES} controller samples")
        # The partition really was busy the whole time, on every replica.
        for i, b in cluster.brokers.items():
            assert b.partition("busy")["leo"] > start_leo[i], f"broker {i} did not replicate"
        lags = [b.state()["event_loop_lag_ms"] for b in cluster.brokers.values()]
        assert all(lag["samples"] > 0 for lag in lags), lags

        leader = ctl.state()["image"]["topics"]["busy"]["partitions"]["0"]["leader"]
        follower = next(b for i, b in cluster.brokers.items() if i != leader)
        # SIGTERM under load: a clean shutdown (0), not the watchdog's hard exit (3) nor the
        # SIGKILL stop_process sends when a process ignores it.
        assert stop_process(follower.proc, signal.SIGTERM) == 0, follower.log()[-3000:]
        assert "clean shutdown complete" in follower.log()
    finally:
        stop.set()
        producer.join(timeout=60)
