"""The server as a process: --config, clean SIGTERM exit, clear errors; many connections at once."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import requests

from .netutil import connect, recv_exactly

REPO = Path(__file__).resolve().parents[3]
TIMEOUT = 30


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "harness.toxiproxy_server", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=TIMEOUT)


def test_config_file_populates_and_sigterm_exits_cleanly(tmp_path, echo_server):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        listen = f"127.0.0.1:{s.getsockname()[1]}"
    config = tmp_path / "toxiproxy.json"
    config.write_text(
        json.dumps([{"name": "cfg", "listen": listen, "upstream": echo_server.address}])
    )
    proc = _start("--host", "127.0.0.1", "--port", "0", "--config", str(config))
    try:
        line = proc.stdout.readline()
        api = line.rsplit(" ", 1)[1].strip()
        proxies = requests.get(f"http://{api}/proxies", timeout=TIMEOUT).json()
        assert proxies["cfg"]["listen"] == listen and proxies["cfg"]["enabled"] is True
        with connect(listen) as sock:
            sock.sendall(b"configured")
            assert recv_exactly(sock, 10) == b"configured"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=TIMEOUT) == 0
    finally:
        _stop(proc)


def test_bad_config_and_busy_port_fail_with_a_clear_message(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"name": "x"}]')
    proc = _start("--host", "127.0.0.1", "--port", "0", "--config", str(bad))
    try:
        _, err = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 2
        assert str(bad) in err and "upstream" in err
    finally:
        _stop(proc)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = _start("--host", "127.0.0.1", "--port", str(port))
        try:
            _, err = proc.communicate(timeout=TIMEOUT)
            assert proc.returncode == 2
            assert f"127.0.0.1:{port}" in err
        finally:
            _stop(proc)


def test_many_connections_keep_their_bytes_in_order_under_jitter(toxiproxy, echo_server):
    proxy = toxiproxy.create(upstream=echo_server.address, name="busy")
    proxy.add_toxic(type="latency", attributes={"latency": 20, "jitter": 20})
    proxy.add_toxic(
        type="slicer",
        stream="upstream",
        attributes={"average_size": 7, "size_variation": 3, "delay": 100},
    )
    errors: list[str] = []

    def client(i: int) -> None:
        try:
            with connect(proxy.listen, timeout=TIMEOUT) as sock:
                for j in range(10):
                    payload = f"client {i} message {j} ".encode() * 5
                    sock.sendall(payload)
                    got = recv_exactly(sock, len(payload))
                    if got != payload:
                        errors.append(f"client {i} message {j}: {got[:40]!r}")
                        return
        except OSError as exc:
            errors.append(f"client {i}: {exc!r}")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=TIMEOUT)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
