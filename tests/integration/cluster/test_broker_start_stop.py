"""A broker's stop and start on real processes, as Kafka's BrokerServer does them (issue 27).

Controlled shutdown (item 1): the leader of a partition under idempotent acks=all load gets
SIGTERM. It asks the controller to move its leadership, becomes a follower while it still
serves (so clients learn the new leader from it), and exits cleanly only once the controller
lets it go; every send the producer made is acknowledged, none times out with an unknown
outcome. Start-up (item 7): a restarted broker accepts connections but answers nothing before
the controller has unfenced it."""

from __future__ import annotations

import signal
import socket
import threading
from typing import Any

import pytest
from confluent_kafka import Producer
from procutil import stop_process

from broker_app.protocol.codec import request_class
from broker_app.protocol.entities import build

from ..rawclient import RawClient
from .helpers import create_topic, wait_until

pytestmark = pytest.mark.timeout(180)


def _produce(bootstrap: str, stop: threading.Event, outcomes: dict[str, int]) -> None:
    p = Producer({
        "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
        "linger.ms": 5, "message.timeout.ms": 6_000,
    })  # fmt: skip

    def done(err: Any, _msg: Any) -> None:
        key = "ok" if err is None else err.name()
        outcomes[key] = outcomes.get(key, 0) + 1

    while not stop.is_set():
        p.produce("cs", b"v", partition=0, on_delivery=done)
        p.poll(0.005)
    p.flush(20)


def test_sigterm_moves_the_leadership_before_the_leader_exits(cluster) -> None:
    create_topic(cluster.bootstrap, "cs", rf=3, config={"min.insync.replicas": "2"})
    ctl = cluster.controller

    def partition() -> dict[str, Any]:
        return ctl.state()["image"]["topics"]["cs"]["partitions"]["0"]

    wait_until(lambda: partition()["leader"] >= 0 and len(partition()["isr"]) == 3, 30,
               "cs-0 led with a full ISR")  # fmt: skip
    old = partition()["leader"]
    outcomes: dict[str, int] = {}
    stop = threading.Event()
    producer = threading.Thread(target=_produce, args=(cluster.bootstrap, stop, outcomes))
    producer.start()
    try:
        wait_until(lambda: outcomes.get("ok", 0) >= 500, 60, "500 sends acknowledged")
        leader = cluster.brokers[old]
        assert stop_process(leader.proc, signal.SIGTERM) == 0, leader.log()[-3000:]
        log = leader.log()
        assert "controlled shutdown granted" in log, log[-3000:]
        # It learned it was a follower (the metadata moved its leadership) before it stopped.
        became_follower = log.find("cs-0: follower of")
        assert 0 <= became_follower < log.index("controlled shutdown granted"), log[-3000:]
        assert partition()["leader"] not in (old, -1)
        acked_at_stop = outcomes.get("ok", 0)
        wait_until(lambda: outcomes.get("ok", 0) >= acked_at_stop + 200, 30,
                   "200 more sends acknowledged by the new leader")  # fmt: skip
    finally:
        stop.set()
        producer.join(timeout=60)
    assert set(outcomes) == {"ok"}, outcomes  # no timeout, no unknown outcome


def test_a_restarted_broker_answers_nothing_before_it_is_unfenced(cluster) -> None:
    broker = cluster.brokers[3]
    cluster.controller.stop()
    broker.stop()  # the controller is gone: the controlled shutdown gives up after 3 s
    broker.start()  # listening, but it cannot register
    api_versions = build(request_class(18, 3), {"client_software_name": "t",
                                                "client_software_version": "1"})  # fmt: skip
    with RawClient(broker.port, timeout=2) as early:
        early.send(api_versions)
        with pytest.raises(socket.timeout):
            early.recv_payload()  # accepted, not answered: the broker is not unfenced
        cluster.controller.start()
        early.sock.settimeout(30)
        corr, resp = early.recv(18, 3)  # the same request, answered once unfenced
        assert corr == 1 and int(resp.error_code) == 0
    assert not broker.state()["fenced"]
    assert "unfenced: serving clients" in broker.log()


def test_producers_initialised_on_different_brokers_get_different_ids(cluster) -> None:
    # Kafka hands out producer ids cluster-wide (KIP-730); here each broker from its own
    # range. Before, every broker counted from 0 and two idempotent producers shared an id.
    init = build(request_class(22, 4), {"transactional_id": None, "transaction_timeout": 60_000,
                                        "producer_id": -1, "producer_epoch": -1})  # fmt: skip
    ids = []
    for broker in cluster.brokers.values():
        with RawClient(broker.port, timeout=10) as c:
            resp = c.request(init)
            assert int(resp.error_code) == 0, resp
            ids.append(int(resp.producer_id))
    assert len(set(ids)) == len(ids), ids
