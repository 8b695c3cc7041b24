"""harness.net.Net against a real toxiproxy_server process: a one-direction fault between two
brokers lands on both proxies that carry those bytes, and clearing one kind leaves the other."""

from __future__ import annotations

import socket

from harness.cluster.topology import Link
from harness.net import Net


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _net(host: str, port: int) -> Net:
    up = f"127.0.0.1:{_free_port()}"  # nothing listens: only the toxics are looked at
    links = {("a", "b"): Link("a", "b", "a-b", _free_port(), up),
             ("b", "a"): Link("b", "a", "b-a", _free_port(), up),
             ("client", "a"): Link("client", "a", "client-a", _free_port(), up)}
    net = Net(host, port, links)
    net.create_proxies()
    return net


def test_one_direction_covers_both_proxies(toxiproxy, toxiproxy_process) -> None:
    net = _net(toxiproxy_process.host, toxiproxy_process.port)
    net.latency("a", "b", 200)  # a's requests to b and a's responses to b's requests
    net.bandwidth("a", "b", 50)
    assert net.toxics() == {"a-b": ["bandwidth-upstream", "latency-upstream"],
                            "b-a": ["bandwidth-downstream", "latency-downstream"],
                            "client-a": []}
    net.clear("a", "b", kinds=("latency",))
    assert net.toxics() == {"a-b": ["bandwidth-upstream"], "b-a": ["bandwidth-downstream"],
                            "client-a": []}
    net.latency("client", "a", 10)  # one proxy only: the client never accepts connections
    assert net.toxics()["client-a"] == ["latency-upstream"]
    net.clear("a", "b")
    net.clear("client", "a")
    assert net.toxics() == {"a-b": [], "b-a": [], "client-a": []}
