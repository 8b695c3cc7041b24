"""KafkaClient: a retarget (another loop rotating the controller) while a request is in flight
ends that request as a ClientError, never as an AttributeError that would kill the caller's
loop (seen in CI: a restarted broker's metadata loop died silently and the broker stayed
fenced)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from broker_app.metadata.metadata_fetcher import build_metadata_fetch
from broker_app.server.network_client import ClientError, KafkaClient


class _CloseOnDrain:
    """A StreamWriter whose drain() lets `client` be retargeted meanwhile, as a concurrent
    _next_controller() would."""

    def __init__(self, writer: asyncio.StreamWriter, client: KafkaClient) -> None:
        self._writer, self._client = writer, client

    def write(self, data: bytes) -> None:
        self._writer.write(data)

    async def drain(self) -> None:
        await self._writer.drain()
        self._client.retarget(("127.0.0.1", 1))  # elsewhere: drops the connection

    def close(self) -> None:
        self._writer.close()


async def test_retarget_during_a_request_is_a_client_error() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1 << 16)  # take the request, never answer
        await asyncio.sleep(5)
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        client = KafkaClient("127.0.0.1", port, "t", request_timeout_ms=3000)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        wrapped: Any = _CloseOnDrain(writer, client)
        client._reader, client._writer = reader, wrapped
        with pytest.raises(ClientError):
            await client.send(build_metadata_fetch(0))
        assert (client.host, client.port) == ("127.0.0.1", 1)
    finally:
        server.close()
        await server.wait_closed()
