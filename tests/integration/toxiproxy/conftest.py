"""Fixtures: a real `python -m harness.toxiproxy_server` process and small TCP servers.

The server is started on 127.0.0.1 port 0 and announces its real port on stdout; the fixture
waits for that line (bounded), points the official `toxiproxy-python` client at it, and kills
the process in `finally`. Between tests every proxy is destroyed. The upstreams are threaded TCP
servers in this process: an echo server that counts what it received, and a greeter that sends
one line and closes.
"""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from procutil import REPO, stop_process
from toxiproxy import Toxiproxy
from toxiproxy.api import APIConsumer

START_TIMEOUT = 30.0


@dataclass
class ServerProcess:
    host: str
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture(scope="module")
def toxiproxy_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    log_path = tmp_path_factory.mktemp("toxiproxy") / "server.log"
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "harness.toxiproxy_server",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--seed",
                "1234",
                "--log-level",
                "debug",
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=log_file,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
        try:
            line = lines.get(timeout=START_TIMEOUT).decode()
        except queue.Empty:
            pytest.fail(f"toxiproxy server did not start: {log_path.read_text()}")
        assert line.startswith("toxiproxy-server listening on "), line + log_path.read_text()
        host, port = line.rsplit(" ", 1)[1].strip().rsplit(":", 1)
        yield ServerProcess(host, int(port), proc, log_path)
    finally:
        stop_process(proc, timeout=10)


@pytest.fixture
def toxiproxy(toxiproxy_process: ServerProcess) -> Iterator[Toxiproxy]:
    client = Toxiproxy()
    client.update_api_consumer(toxiproxy_process.host, toxiproxy_process.port)
    client.destroy_all()
    try:
        yield client
    finally:
        assert toxiproxy_process.proc.poll() is None, toxiproxy_process.log()
        client.destroy_all()
        APIConsumer.host, APIConsumer.port = "127.0.0.1", 8474


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        sock: socket.socket = self.request
        with contextlib.suppress(OSError):
            while data := sock.recv(65536):
                self.server.received += len(data)  # type: ignore[attr-defined]
                sock.sendall(data)


class _Greet(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        with contextlib.suppress(OSError):
            self.request.sendall(b"hello\n")


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default backlog of 5 overflows when 20 proxied connections
    # arrive at once on a loaded machine, and an upstream connect that fails
    # makes the proxy close the client's connection (an empty read in tests).
    request_queue_size = 128
    received = 0

    @property
    def address(self) -> str:
        host, port = self.server_address[:2]
        return f"{host}:{port}"


@contextlib.contextmanager
def _serve(handler: type[socketserver.BaseRequestHandler]) -> Iterator[_Server]:
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def echo_server() -> Iterator[_Server]:
    with _serve(_Echo) as server:
        yield server


@pytest.fixture
def greet_server() -> Iterator[_Server]:
    with _serve(_Greet) as server:
        yield server
