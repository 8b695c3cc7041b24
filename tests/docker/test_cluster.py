"""A 3-broker cluster behind Toxiproxy: real clients through the proxies, network and process
faults. One cluster for the whole module; tests use distinct topics and leave the links healed.

The brokers run without a controller container: each is a cluster of its own (combined mode,
its own controller in its process), so each test talks to one broker.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hw_docker_util import consume, leftovers, produce, produce_ok, producer

from harness.cluster import Cluster
from harness.net import NetError

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def cluster(cluster_images: dict[str, str], run_id_factory) -> Iterator[Cluster]:
    with Cluster(run_id_factory("c3"), brokers=3, images=cluster_images) as c:
        yield c


@pytest.fixture(autouse=True)
def healed(cluster: Cluster) -> Iterator[None]:
    yield
    if cluster.is_up:  # the last test removes the cluster
        cluster.net.heal_all()


def test_clients_produce_and_consume_through_the_proxies(cluster: Cluster) -> None:
    # Every bootstrap address is a port the toxiproxy container publishes, and the brokers
    # advertise exactly those: the client never learns a broker's own port.
    from confluent_kafka.admin import AdminClient

    for node in ("broker-1", "broker-2", "broker-3"):
        assert cluster.client_address(node) != cluster.direct_address(node)
    produce_ok(cluster.client_address("broker-1"), "basic", [b"m%d" % i for i in range(10)])
    got = consume(cluster.client_address("broker-1"), "basic", 10)
    assert sorted(got) == sorted(b"m%d" % i for i in range(10))
    md = AdminClient({"bootstrap.servers": cluster.client_address("broker-1")}).list_topics(
        timeout=10)
    advertised = {f"{b.host}:{b.port}" for b in md.brokers.values()}
    assert advertised <= set(cluster.bootstrap.split(","))
    assert "basic" in md.topics


def test_partition_client_from_broker_blocks_and_heal_restores(cluster: Cluster) -> None:
    addr = cluster.client_address("broker-2")
    p = producer(addr, **{"message.timeout.ms": 3000})
    assert produce(p, "part", [b"before"], 20) == [None]
    cluster.net.partition("client", "broker-2")
    toxics = cluster.net.toxics()["client-to-broker-2"]
    assert toxics == ["partition-downstream", "partition-upstream"]
    # The held connection stays open, so the message times out rather than being refused.
    errors = produce(p, "part", [b"during"], 15)
    assert errors[0] is not None
    cluster.net.heal("client", "broker-2")
    assert cluster.net.toxics()["client-to-broker-2"] == []
    assert produce(producer(addr), "part", [b"after"], 30) == [None]
    assert set(consume(addr, "part", 2)) >= {b"before", b"after"}


def test_isolate_cuts_every_link_of_a_node(cluster: Cluster) -> None:
    others = cluster.net.isolate("broker-1")
    assert set(others) == {"client", "broker-2", "broker-3"}
    toxics = cluster.net.toxics()
    for proxy in ("client-to-broker-1", "broker-1-to-broker-2", "broker-2-to-broker-1",
                  "broker-3-to-broker-1"):
        assert "partition-upstream" in toxics[proxy], proxy
    assert toxics["broker-2-to-broker-3"] == []
    errors = produce(producer(cluster.client_address("broker-1"),
                              **{"message.timeout.ms": 3000}), "iso", [b"x"], 15)
    assert errors[0] is not None
    cluster.net.rejoin("broker-1")
    produce_ok(cluster.client_address("broker-1"), "iso", [b"y"])


def test_latency_on_a_link_delays_requests(cluster: Cluster) -> None:
    p = producer(cluster.client_address("broker-3"))
    assert produce(p, "lat", [b"warm"], 30) == [None]  # connection and metadata in place
    cluster.net.latency("client", "broker-3", ms=400)
    started = time.monotonic()
    assert produce(p, "lat", [b"slow"], 30) == [None]
    assert time.monotonic() - started >= 0.4
    cluster.net.latency("broker-3", "client", ms=300)  # the other direction: responses
    started = time.monotonic()
    assert produce(p, "lat", [b"slower"], 30) == [None]
    assert time.monotonic() - started >= 0.7
    cluster.net.clear("client", "broker-3")
    cluster.net.clear("broker-3", "client")
    assert cluster.net.toxics()["client-to-broker-3"] == []


def test_bandwidth_limits_a_direction(cluster: Cluster) -> None:
    p = producer(cluster.client_address("broker-2"), **{"message.max.bytes": 2_000_000})
    assert produce(p, "bw", [b"warm"], 30) == [None]
    cluster.net.bandwidth("client", "broker-2", kbps=100)
    started = time.monotonic()
    assert produce(p, "bw", [b"x" * 300_000], 60) == [None]
    # 300 KB at 100 KB/s cannot cross in under ~3 s.
    assert time.monotonic() - started >= 2.5


def test_net_rejects_unknown_nodes_and_missing_links(cluster: Cluster) -> None:
    with pytest.raises(NetError, match="broker-9"):
        cluster.net.partition("client", "broker-9")
    with pytest.raises(NetError, match="itself"):
        cluster.net.partition("broker-1", "broker-1")
    with pytest.raises(NetError, match="no proxy"):
        cluster.net.latency("client", "client", 10)


def test_kill_and_restart_keep_written_data(cluster: Cluster) -> None:
    addr = cluster.client_address("broker-3")
    produce_ok(addr, "kill", [b"k%d" % i for i in range(5)])
    cluster.kill("broker-3")
    assert cluster.status("broker-3") == "exited"
    errors = produce(producer(addr, **{"message.timeout.ms": 2000}), "kill", [b"dead"], 15)
    assert errors[0] is not None
    cluster.start("broker-3")
    assert cluster.status("broker-3") == "running"
    produce_ok(addr, "kill", [b"k5"])
    assert sorted(consume(addr, "kill", 6)) == sorted(b"k%d" % i for i in range(6))
    cluster.restart("broker-3")  # SIGTERM path: a clean shutdown, then start
    assert cluster.logs("broker-3").count("clean shutdown complete") >= 1
    assert len(consume(addr, "kill", 6)) == 6


def test_pause_freezes_and_resume_thaws(cluster: Cluster) -> None:
    addr = cluster.client_address("broker-1")
    p = producer(addr, **{"message.timeout.ms": 2500})
    assert produce(p, "pause", [b"a"], 30) == [None]
    cluster.pause("broker-1")
    try:
        assert cluster.status("broker-1") == "paused"
        assert produce(p, "pause", [b"frozen"], 15)[0] is not None
    finally:
        cluster.resume("broker-1")
    assert cluster.status("broker-1") == "running"
    assert produce(producer(addr), "pause", [b"thawed"], 30) == [None]


def test_collect_logs_and_data(cluster: Cluster, tmp_path: Path) -> None:
    produce_ok(cluster.client_address("broker-2"), "collect", [b"c"])
    logs = cluster.collect_logs(tmp_path / "logs")
    assert {p.name for p in logs} >= {"broker-1.log", "broker-2.log", "toxiproxy.log"}
    assert "listening" in (tmp_path / "logs" / "broker-2.log").read_text()
    cluster.collect_data(tmp_path / "data")
    segments = list((tmp_path / "data" / "broker-2").rglob("collect-0/*.log"))
    assert segments and segments[0].stat().st_size > 0


def test_bypass_check_sees_a_direct_connection(cluster: Cluster) -> None:
    """The run's `direct_connections` record: clean while clients go through the proxy, and it
    names the peer of a connection that skips it (broker-2 dialling broker-1's own address)."""
    p = producer(cluster.client_address("broker-1"))
    assert produce(p, "bypass", [b"b"], 30) == [None]  # the producer keeps its connection
    clean = cluster.direct_connections()
    assert clean["broker-1"]["proxied"] >= 1, clean
    assert all(not c.get("direct") for c in clean.values()), clean
    b1 = _ip(cluster, "broker-1")
    b2 = _ip(cluster, "broker-2")
    dial = (f"import socket, time; s = socket.create_connection(('{b1}', 9092), timeout=5); "
            "time.sleep(15)")
    cluster.container("broker-2").exec_run(["python3", "-c", dial], detach=True)
    deadline = time.monotonic() + 10
    direct: list[str] = []
    while not direct and time.monotonic() < deadline:
        direct = cluster.direct_connections()["broker-1"].get("direct", [])
        time.sleep(0.2)
    assert [d.split(":")[0] for d in direct] == [b2], direct


def _ip(cluster: Cluster, node: str) -> str:
    container = cluster.container(node)
    container.reload()
    networks = container.attrs["NetworkSettings"]["Networks"]
    return next(n["IPAddress"] for n in networks.values() if n.get("IPAddress"))


def test_down_removes_every_container_and_the_network(cluster: Cluster) -> None:
    assert leftovers([cluster.run_id])  # there is something to remove
    cluster.down()
    assert leftovers([cluster.run_id]) == []
