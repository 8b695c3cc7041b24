"""Blocking socket helpers for the Toxiproxy server tests (every call has a timeout)."""

from __future__ import annotations

import socket


def connect(listen: str, timeout: float = 5.0) -> socket.socket:
    host, port = listen.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        data = sock.recv(n - len(buf))
        if not data:
            break
        buf += data
    return bytes(buf)


def recv_until_eof(sock: socket.socket, limit: int = 64 * 1024 * 1024) -> bytes:
    buf = bytearray()
    while len(buf) < limit:
        data = sock.recv(65536)
        if not data:
            break
        buf += data
    return bytes(buf)
