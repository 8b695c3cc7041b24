"""What each toxic does to real bytes on a real TCP connection through the server process.

Timing assertions are lower bounds implied by the toxic (the proxy cannot deliver earlier), never
upper bounds on how fast the machine is. Absence checks ("nothing arrives") wait a fixed window
and can only fail if data really arrives.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

from .netutil import connect, recv_exactly, recv_until_eof

QUIET = 0.5  # window in which a blocked link must deliver nothing


def round_trip(sock: socket.socket, payload: bytes) -> float:
    start = time.monotonic()
    sock.sendall(payload)
    assert recv_exactly(sock, len(payload)) == payload
    return time.monotonic() - start


def assert_silent(sock: socket.socket, window: float = QUIET) -> None:
    sock.settimeout(window)
    try:
        data = sock.recv(65536)
    except TimeoutError:
        return
    finally:
        sock.settimeout(5.0)
    pytest.fail(f"expected nothing within {window}s, got {data[:50]!r}")


@pytest.fixture
def echo_proxy(toxiproxy, echo_server):
    return toxiproxy.create(upstream=echo_server.address, name="echo")


def test_passthrough_carries_a_megabyte_intact(echo_proxy):
    payload = bytes(range(256)) * 4096
    with connect(echo_proxy.listen) as sock:
        sender = threading.Thread(target=sock.sendall, args=(payload,))
        sender.start()
        try:
            assert recv_exactly(sock, len(payload)) == payload
        finally:
            sender.join(timeout=30)


@pytest.mark.parametrize("stream", ["downstream", "upstream"])
def test_latency_applies_to_an_open_connection(echo_proxy, stream):
    with connect(echo_proxy.listen) as sock:
        round_trip(sock, b"warm")
        echo_proxy.add_toxic(type="latency", stream=stream, attributes={"latency": 300})
        assert round_trip(sock, b"slow") >= 0.3
        echo_proxy.destroy_toxic(f"latency_{stream}")
        round_trip(sock, b"fast again")  # the connection survives the removal


def test_latency_on_both_streams_adds_up_with_jitter_bounded(echo_proxy):
    echo_proxy.add_toxic(type="latency", stream="upstream", attributes={"latency": 150})
    echo_proxy.add_toxic(type="latency", attributes={"latency": 200, "jitter": 100})
    with connect(echo_proxy.listen) as sock:
        for _ in range(3):
            # at least 150 + (200 - 100) ms, whatever jitter drew
            assert round_trip(sock, b"x") >= 0.25


def test_bandwidth_limits_throughput(echo_proxy):
    rate_kb = 100
    total = 200_000
    echo_proxy.add_toxic(type="bandwidth", attributes={"rate": rate_kb})
    payload = b"b" * total
    with connect(echo_proxy.listen, timeout=30) as sock:
        start = time.monotonic()
        sender = threading.Thread(target=sock.sendall, args=(payload,))
        sender.start()
        try:
            assert recv_exactly(sock, total) == payload
        finally:
            sender.join(timeout=30)
        elapsed = time.monotonic() - start
    throughput = total / elapsed
    assert throughput <= rate_kb * 1000 * 1.25, f"{throughput:.0f} B/s"


def test_slow_close_delays_the_close_not_the_data(toxiproxy, greet_server):
    proxy = toxiproxy.create(upstream=greet_server.address, name="greet")
    proxy.add_toxic(type="slow_close", attributes={"delay": 500})
    with connect(proxy.listen) as sock:
        start = time.monotonic()
        assert recv_exactly(sock, 6) == b"hello\n"
        assert sock.recv(1) == b""
        assert time.monotonic() - start >= 0.5


def test_partition_timeout_zero_drops_data_on_open_connection_and_heal_closes_it(
    echo_proxy, echo_server
):
    with connect(echo_proxy.listen) as sock:
        round_trip(sock, b"before")
        received_before = echo_server.received
        echo_proxy.add_toxic(
            type="timeout", stream="upstream", name="cut_up", attributes={"timeout": 0}
        )
        echo_proxy.add_toxic(
            type="timeout", stream="downstream", name="cut_down", attributes={"timeout": 0}
        )
        sock.sendall(b"into the void")
        assert_silent(sock)
        assert echo_server.received == received_before  # dropped, not delivered upstream
        # During the partition new connections are accepted but blackholed too.
        with connect(echo_proxy.listen) as other:
            other.sendall(b"also lost")
            assert_silent(other)
        # Healing: Toxiproxy closes the connections the timeout toxic was on ...
        echo_proxy.destroy_toxic("cut_up")
        echo_proxy.destroy_toxic("cut_down")
        assert recv_until_eof(sock) == b""
    assert echo_server.received == received_before
    # ... and new connections flow again.
    with connect(echo_proxy.listen) as sock:
        round_trip(sock, b"after heal")


def test_timeout_positive_closes_the_connection_after_the_timeout(echo_proxy):
    with connect(echo_proxy.listen) as sock:
        start = time.monotonic()
        echo_proxy.add_toxic(type="timeout", attributes={"timeout": 400})
        sock.sendall(b"no answer")
        assert recv_until_eof(sock) == b""  # the echo is dropped, then EOF
        assert time.monotonic() - start >= 0.4


def test_toxicity_zero_spares_the_connection(echo_proxy):
    echo_proxy.add_toxic(type="timeout", toxicity=0.0, attributes={"timeout": 0})
    with connect(echo_proxy.listen) as sock:
        round_trip(sock, b"spared")


def test_reset_peer_resets_the_client(echo_proxy):
    echo_proxy.add_toxic(type="reset_peer", stream="upstream", attributes={"timeout": 100})
    with connect(echo_proxy.listen) as sock:
        sock.sendall(b"trigger")
        with pytest.raises(ConnectionResetError):
            # Either the read sees the RST, or a later write/read does.
            for _ in range(50):
                if sock.recv(100) == b"":
                    pytest.fail("got a clean FIN instead of a reset")
                sock.sendall(b"more")


def test_slicer_delivers_the_same_bytes_in_pieces(echo_proxy):
    echo_proxy.add_toxic(
        type="slicer", attributes={"average_size": 100, "size_variation": 50, "delay": 2000}
    )
    payload = bytes(range(256)) * 20
    with connect(echo_proxy.listen) as sock:
        sock.sendall(payload)
        pieces = []
        while sum(map(len, pieces)) < len(payload):
            data = sock.recv(65536)
            assert data, "connection closed early"
            pieces.append(data)
    assert b"".join(pieces) == payload
    assert len(pieces) >= 2


def test_limit_data_closes_after_n_bytes(echo_proxy):
    echo_proxy.add_toxic(type="limit_data", attributes={"bytes": 100})
    with connect(echo_proxy.listen) as sock:
        sock.sendall(b"z" * 300)
        assert recv_until_eof(sock) == b"z" * 100


def test_disable_closes_connections_and_refuses_new_ones(echo_proxy, toxiproxy):
    with connect(echo_proxy.listen) as sock:
        round_trip(sock, b"up")
        echo_proxy.disable()
        try:
            assert recv_until_eof(sock) == b""
        except ConnectionResetError:
            pass
    with pytest.raises(ConnectionRefusedError):
        connect(echo_proxy.listen)
    assert toxiproxy.get_proxy("echo").enabled is False
    echo_proxy.enable()  # back on the same port
    assert toxiproxy.get_proxy("echo").listen == echo_proxy.listen
    with connect(echo_proxy.listen) as sock:
        round_trip(sock, b"back")
    with echo_proxy.down():
        with pytest.raises(ConnectionRefusedError):
            connect(echo_proxy.listen)


def test_deleted_proxy_frees_its_port(echo_proxy):
    echo_proxy.destroy()
    with pytest.raises(ConnectionRefusedError):
        connect(echo_proxy.listen)


def test_unreachable_upstream_closes_the_client(toxiproxy):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"  # bound, never listening: refused
        proxy = toxiproxy.create(upstream=dead, name="dead")
        with connect(proxy.listen) as sock:
            try:
                assert recv_until_eof(sock) == b""
            except ConnectionResetError:
                pass
