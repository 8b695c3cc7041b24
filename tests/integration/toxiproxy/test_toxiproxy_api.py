"""Every endpoint of the Toxiproxy HTTP API, through `toxiproxy-python` and raw HTTP.

The official client hides status codes, so those (201/204/400/404/405/409) are checked with
plain `requests` against the same server process.
"""

from __future__ import annotations

import json
import socket

import pytest
import requests
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists

from .netutil import connect, recv_exactly, recv_until_eof

TIMEOUT = 10


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_version_and_running(toxiproxy, toxiproxy_process):
    assert toxiproxy.running()
    assert json.loads(toxiproxy.version())["version"].startswith("2.")
    r = requests.get(f"{toxiproxy_process.url}/version", timeout=TIMEOUT)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("application/json")


def test_create_resolves_port_and_lists(toxiproxy, toxiproxy_process, echo_server):
    proxy = toxiproxy.create(upstream=echo_server.address, name="echo")
    host, port = proxy.listen.rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    assert proxy.enabled is True
    listed = toxiproxy.proxies()
    assert set(listed) == {"echo"}
    assert listed["echo"].listen == proxy.listen
    assert listed["echo"].upstream == echo_server.address
    raw = requests.get(f"{toxiproxy_process.url}/proxies", timeout=TIMEOUT).json()
    assert raw == {
        "echo": {
            "name": "echo",
            "listen": proxy.listen,
            "upstream": echo_server.address,
            "enabled": True,
            "toxics": [],
        }
    }
    with connect(proxy.listen) as sock:
        sock.sendall(b"ping")
        assert recv_exactly(sock, 4) == b"ping"


def test_status_codes_of_proxy_endpoints(toxiproxy_process, toxiproxy, echo_server):
    url = toxiproxy_process.url
    body = {"name": "p1", "listen": "127.0.0.1:0", "upstream": echo_server.address}
    created = requests.post(f"{url}/proxies", json=body, timeout=TIMEOUT)
    assert created.status_code == 201
    assert created.json()["listen"] != "127.0.0.1:0"

    dup = requests.post(f"{url}/proxies", json=body, timeout=TIMEOUT)
    assert dup.status_code == 409
    assert dup.json() == {"error": "proxy already exists", "status": 409}
    with pytest.raises(ProxyExists):  # the client checks its list first, then the server
        toxiproxy.create(upstream=echo_server.address, name="p1")

    assert requests.get(f"{url}/proxies/p1", timeout=TIMEOUT).json()["name"] == "p1"
    missing = requests.get(f"{url}/proxies/nope", timeout=TIMEOUT)
    assert missing.status_code == 404
    assert missing.json()["error"] == "proxy not found"

    for bad, field in [
        ({"listen": "127.0.0.1:0", "upstream": echo_server.address}, "name"),
        ({"name": "x", "listen": "127.0.0.1:0"}, "upstream"),
        ({"name": "x", "upstream": "no-port"}, "upstream"),
        ({"name": "x", "upstream": echo_server.address, "listen": "bogus"}, "listen"),
        ({"name": "x", "upstream": echo_server.address, "enabled": "yes"}, "enabled"),
    ]:
        r = requests.post(f"{url}/proxies", json=bad, timeout=TIMEOUT)
        assert r.status_code == 400, bad
        assert field in r.json()["error"], r.json()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = f"127.0.0.1:{busy.getsockname()[1]}"
        r = requests.post(
            f"{url}/proxies",
            timeout=TIMEOUT,
            json={"name": "x", "listen": taken, "upstream": echo_server.address},
        )
        assert r.status_code == 500 and taken in r.json()["error"]  # as Toxiproxy: not an ApiError
        assert requests.get(f"{url}/proxies/x", timeout=TIMEOUT).status_code == 404
    r = requests.post(f"{url}/proxies", data=b"{not json", timeout=TIMEOUT)
    assert r.status_code == 400 and "bad request body" in r.json()["error"]

    assert requests.delete(f"{url}/proxies/p1", timeout=TIMEOUT).status_code == 204
    assert requests.delete(f"{url}/proxies/p1", timeout=TIMEOUT).status_code == 404
    assert requests.put(f"{url}/proxies", timeout=TIMEOUT).status_code == 405
    assert requests.get(f"{url}/nothing/here", timeout=TIMEOUT).status_code == 404
    browser = requests.get(f"{url}/proxies", headers={"User-Agent": "Mozilla/5.0"}, timeout=TIMEOUT)
    assert browser.status_code == 403


def test_toxic_endpoints(toxiproxy_process, toxiproxy, echo_server):
    url = toxiproxy_process.url
    proxy = toxiproxy.create(upstream=echo_server.address, name="tox")
    proxy.add_toxic(type="latency", attributes={"latency": 10})
    proxy.add_toxic(
        type="bandwidth", stream="upstream", name="bw", toxicity=0.5, attributes={"rate": 1000}
    )
    toxics = proxy.toxics()
    assert set(toxics) == {"latency_downstream", "bw"}
    assert toxics["latency_downstream"].attributes == {"latency": 10, "jitter": 0}
    assert toxics["bw"].stream == "upstream" and toxics["bw"].toxicity == 0.5

    shown = requests.get(f"{url}/proxies/tox/toxics/bw", timeout=TIMEOUT)
    assert shown.status_code == 200
    assert shown.json() == {
        "attributes": {"rate": 1000},
        "name": "bw",
        "type": "bandwidth",
        "stream": "upstream",
        "toxicity": 0.5,
    }
    # Toxiproxy answers 200 (not 201) to a toxic create.
    created = requests.post(
        f"{url}/proxies/tox/toxics",
        json={"type": "slow_close", "attributes": {"delay": 5}},
        timeout=TIMEOUT,
    )
    assert created.status_code == 200 and created.json()["name"] == "slow_close_downstream"
    dup = requests.post(f"{url}/proxies/tox/toxics", json={"type": "slow_close"}, timeout=TIMEOUT)
    assert dup.status_code == 409 and dup.json()["error"] == "toxic already exists"

    updated = requests.post(
        f"{url}/proxies/tox/toxics/bw", json={"attributes": {"rate": 5}}, timeout=TIMEOUT
    )
    assert updated.status_code == 200 and updated.json()["attributes"] == {"rate": 5}
    patched = requests.patch(f"{url}/proxies/tox/toxics/bw", json={"toxicity": 1}, timeout=TIMEOUT)
    assert patched.json()["toxicity"] == 1 and patched.json()["attributes"] == {"rate": 5}

    in_proxy = requests.get(f"{url}/proxies/tox", timeout=TIMEOUT).json()["toxics"]
    assert [t["name"] for t in in_proxy] == ["bw", "latency_downstream", "slow_close_downstream"]

    for path, code in [
        ("/proxies/tox/toxics/nope", 404),
        ("/proxies/nope/toxics", 404),
        ("/proxies/nope/toxics/bw", 404),
    ]:
        assert requests.get(url + path, timeout=TIMEOUT).status_code == code, path
    for bad, needle in [
        ({"type": "latency", "stream": "both"}, "stream"),
        ({"type": "earthquake"}, "invalid toxic type"),
        ({"type": "latency", "name": "j", "attributes": {"jitter": "x"}}, "attributes.jitter"),
    ]:
        r = requests.post(f"{url}/proxies/tox/toxics", json=bad, timeout=TIMEOUT)
        assert r.status_code == 400 and needle in r.json()["error"], r.text
    with pytest.raises(InvalidToxic):
        proxy.add_toxic(type="earthquake")
    with pytest.raises(NotFound):
        proxy.destroy_toxic("nope")

    assert requests.delete(f"{url}/proxies/tox/toxics/bw", timeout=TIMEOUT).status_code == 204
    assert proxy.destroy_toxic("latency_downstream")
    assert set(proxy.toxics()) == {"slow_close_downstream"}


def test_populate_creates_keeps_and_replaces(toxiproxy_process, toxiproxy, echo_server):
    url = toxiproxy_process.url
    port_a, port_b = free_port(), free_port()
    body = [
        {"name": "a", "listen": f"127.0.0.1:{port_a}", "upstream": echo_server.address},
        {
            "name": "b",
            "listen": f"127.0.0.1:{port_b}",
            "upstream": echo_server.address,
            "enabled": False,
        },
    ]
    r = requests.post(f"{url}/populate", json=body, timeout=TIMEOUT)
    assert r.status_code == 201
    assert [(p["name"], p["enabled"]) for p in r.json()["proxies"]] == [("a", True), ("b", False)]

    with connect(f"127.0.0.1:{port_a}") as sock:
        # Same fields again: proxy a is kept, its open connection survives.
        again = requests.post(f"{url}/populate", json=body, timeout=TIMEOUT)
        assert again.status_code == 201
        sock.sendall(b"still here")
        assert recv_exactly(sock, 10) == b"still here"
        # A changed upstream replaces the proxy and drops its connections.
        body[0]["upstream"] = "127.0.0.1:1"
        assert requests.post(f"{url}/populate", json=body, timeout=TIMEOUT).status_code == 201
        assert recv_until_eof(sock) == b""
    assert toxiproxy.get_proxy("a").upstream == "127.0.0.1:1"

    bad = requests.post(f"{url}/populate", json=[{"name": "c"}], timeout=TIMEOUT)
    assert bad.status_code == 400 and "upstream at proxy 1" in bad.json()["error"]
    assert requests.post(f"{url}/populate", json={"a": 1}, timeout=TIMEOUT).status_code == 400
    assert "c" not in toxiproxy.proxies()


def test_update_proxy_fields(toxiproxy_process, toxiproxy, echo_server, greet_server):
    url = toxiproxy_process.url
    proxy = toxiproxy.create(upstream=echo_server.address, name="moving")
    with connect(proxy.listen) as sock:
        r = requests.patch(
            f"{url}/proxies/moving", json={"upstream": greet_server.address}, timeout=TIMEOUT
        )
        assert r.status_code == 200 and r.json()["upstream"] == greet_server.address
        assert recv_until_eof(sock) == b""  # changing upstream drops open connections
    with connect(r.json()["listen"]) as sock:
        assert recv_until_eof(sock) == b"hello\n"
    bad = requests.post(f"{url}/proxies/moving", json={"enabled": 1}, timeout=TIMEOUT)
    assert bad.status_code == 400 and "enabled" in bad.json()["error"]


def test_reset_enables_proxies_and_removes_toxics(toxiproxy_process, toxiproxy, echo_server):
    proxy = toxiproxy.create(upstream=echo_server.address, name="r")
    proxy.add_toxic(type="latency", attributes={"latency": 1000})
    proxy.disable()
    assert toxiproxy.get_proxy("r").enabled is False
    r = requests.post(f"{toxiproxy_process.url}/reset", timeout=TIMEOUT)
    assert r.status_code == 204
    after = toxiproxy.get_proxy("r")
    assert after.enabled is True and after.listen == proxy.listen
    assert after.toxics() == {}
    with connect(after.listen) as sock:
        sock.sendall(b"ok")
        assert recv_exactly(sock, 2) == b"ok"


def test_malformed_http_gets_400_and_server_survives(toxiproxy_process, toxiproxy):
    with socket.create_connection(
        (toxiproxy_process.host, toxiproxy_process.port), timeout=TIMEOUT
    ) as sock:
        sock.sendall(b"GARBAGE\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 400")
    with socket.create_connection(
        (toxiproxy_process.host, toxiproxy_process.port), timeout=TIMEOUT
    ) as sock:
        sock.sendall(b"POST /proxies HTTP/1.1\r\nContent-Length: x\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 400")
    assert toxiproxy.running() and toxiproxy.proxies() == {}
