"""harness.net.Net against a real toxiproxy_server process: a one-direction fault between two
brokers lands on both proxies that carry those bytes, and clearing one kind leaves the other."""

from __future__ import annotations

import socket
import time

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


def _echo_net(host: str, port: int, echo: str) -> tuple[Net, str]:
    listen = f"127.0.0.1:{_free_port()}"
    net = Net(host, port, {("client", "a"): Link("client", "a", "client-a", int(
        listen.rsplit(":", 1)[1]), echo)})
    net.create_proxies()
    return net, listen


def _wait(cond, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def test_blackhole_reset_slice_limit_data_do_what_they_say(
        toxiproxy, toxiproxy_process, echo_server) -> None:
    """Each plan link action through Net on a real proxy in front of an echo server."""
    import pytest

    from tests.integration.toxiproxy.netutil import connect, recv_exactly, recv_until_eof

    net, listen = _echo_net(toxiproxy_process.host, toxiproxy_process.port, echo_server.address)

    # blackhole client->a: bytes vanish, the connection stays open; removing it closes it.
    sock = connect(listen)
    net.blackhole("client", "a")
    sock.sendall(b"x" * 100)
    sock.settimeout(0.3)
    with pytest.raises(TimeoutError):
        sock.recv(10)
    assert echo_server.received == 0
    net.clear("client", "a", kinds=("blackhole",))
    sock.settimeout(5)
    assert recv_until_eof(sock) == b""
    sock.close()

    # reset client->a: the next bytes are dropped and the connection gets an RST.
    sock = connect(listen)
    net.reset("client", "a")
    sock.sendall(b"y" * 10)
    with pytest.raises(ConnectionResetError):
        recv_until_eof(sock)
    sock.close()
    net.clear("client", "a", kinds=("reset",))

    # slice a->client: the echo comes back in pieces of at most 8 bytes, all of it.
    sock = connect(listen)
    net.slice("a", "client", 8, delay_us=20_000)
    sock.sendall(b"z" * 64)
    first = sock.recv(64)
    assert 0 < len(first) <= 8
    assert first + recv_exactly(sock, 64 - len(first)) == b"z" * 64
    sock.close()
    net.clear("a", "client", kinds=("slice",))

    # limit-data client->a: the connection carries 10 bytes to a, then is closed (the echo of
    # those 10 may or may not make it back before the close reaches the client).
    before = echo_server.received
    sock = connect(listen)
    net.limit_data("client", "a", 10)
    sock.sendall(b"w" * 100)
    assert (b"w" * 10).startswith(recv_until_eof(sock))
    assert _wait(lambda: echo_server.received - before == 10)
    time.sleep(0.1)
    assert echo_server.received - before == 10
    sock.close()
    net.clear("client", "a", kinds=("limit-data",))
    assert net.toxics() == {"client-a": []}
