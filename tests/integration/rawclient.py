"""A raw-socket Kafka client for sending exactly the bytes a test wants (good or bad)."""

from __future__ import annotations

import socket
import struct
from typing import Any

from broker_app.protocol.codec import decode_response, encode_request


class RawClient:
    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, body: Any, correlation_id: int = 1) -> None:
        self.sock.sendall(encode_request("raw", correlation_id, body))

    def _recv_exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(f"closed by broker after {len(buf)} of {n} bytes")
            buf += chunk
        return buf

    def recv_payload(self) -> bytes:
        (size,) = struct.unpack(">i", self._recv_exact(4))
        return self._recv_exact(size)

    def recv(self, api_key: int, api_version: int) -> tuple[int, Any]:
        return decode_response(api_key, api_version, self.recv_payload())

    def request(self, body: Any, correlation_id: int = 1) -> Any:
        self.send(body, correlation_id)
        corr, resp = self.recv(body.__api_key__, body.__version__)
        assert corr == correlation_id
        return resp

    def is_closed_by_peer(self) -> bool:
        """True when the broker closed the connection (EOF/reset) within the socket timeout."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
