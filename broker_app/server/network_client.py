"""KafkaClient: a small asyncio Kafka-protocol client, the broker's one way to call out.

Used for the controller link (BrokerRegistration, BrokerHeartbeat, Metadata-log Fetch,
AlterPartition, forwarded CreateTopics/ElectLeaders) and for replica fetches to peers. Requests
are kio request entities; `await client.send(body)` returns the decoded kio response entity.
One request in flight per connection (a lock), like Kafka's NetworkClient per node for these
uses. Connects lazily; any socket error or timeout closes the connection and raises
`ClientError` naming the peer, so the caller decides about backoff (the next send reconnects).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from typing import Any

from broker_app.protocol.codec import decode_response, encode_request

log = logging.getLogger(__name__)

_INT32 = struct.Struct(">i")
MAX_RESPONSE_BYTES = 256 * 1024 * 1024


class ClientError(Exception):
    """The request did not get a response (connect failure, reset, timeout, bad frame)."""


class KafkaClient:
    def __init__(
        self, host: str, port: int, client_id: str, request_timeout_ms: int = 30_000
    ) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.request_timeout_s = request_timeout_ms / 1000
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()
        self._correlation_id = 0

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def retarget(self, address: tuple[str, int]) -> None:
        """Point at a new (host, port) (a peer re-registered elsewhere); drops the connection."""
        host, port = address
        if (host, port) != (self.host, self.port):
            self.host, self.port = host, port
            self.close()

    async def send(self, body: Any, timeout_ms: int | None = None) -> Any:
        timeout = self.request_timeout_s if timeout_ms is None else timeout_ms / 1000
        async with self._lock:
            try:
                return await asyncio.wait_for(self._roundtrip(body), timeout)
            except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError) as e:
                self.close()
                raise ClientError(
                    f"{type(body).__name__} to {self.address} failed: {type(e).__name__}: {e}"
                ) from e

    async def _roundtrip(self, body: Any) -> Any:
        # retarget()/close() may run while we await (another loop rotates the controller):
        # keep this request's own stream, so a close ends it as a reset (ClientError), never
        # as an AttributeError on a cleared field that would kill the caller's loop.
        if self._reader is not None and self._reader.at_eof():
            # The peer closed this idle connection (it restarted): connect afresh rather than
            # fail this request on it, as Kafka's NetworkClient sees the disconnect first.
            self.close()
        if self._writer is None:
            host, port = self.host, self.port
            reader, writer = await asyncio.open_connection(host, port)
            if (host, port) != (self.host, self.port):
                writer.close()
                raise ConnectionResetError(f"retargeted from {host}:{port} while connecting")
            self._reader, self._writer = reader, writer
        reader, writer = self._reader, self._writer
        assert reader is not None
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        cid = self._correlation_id
        writer.write(encode_request(self.client_id, cid, body))
        await writer.drain()
        (size,) = _INT32.unpack(await reader.readexactly(4))
        if size < 4 or size > MAX_RESPONSE_BYTES:
            raise ValueError(f"response frame size {size} out of range")
        payload = await reader.readexactly(size)
        got_cid, response = decode_response(body.__api_key__, body.__version__, payload)
        if got_cid != cid:
            raise ValueError(f"correlation id {got_cid} does not match request {cid}")
        return response

    def close(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
        self._reader = self._writer = None
