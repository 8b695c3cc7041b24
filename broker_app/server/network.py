"""SocketServer: the asyncio edge that moves frames between sockets and KafkaApis.

Per connection: read bytes -> FrameDecoder -> decode_request -> KafkaApis.handle -> encode ->
write, one request at a time and in order (Kafka mutes a channel while its request is in flight;
pipelining clients rely on responses arriving in request order). A DelayedFetch parks only its
own connection until data is appended or a HW moves (FetchWaiters, woken by ReplicaManager) or
it times out; an acks=all produce (Deferred) parks it until the purgatory answers.

Malformed input — oversized or negative frame sizes, truncated frames, garbage, unknown api
keys/versions, undecodable bodies, a failing handler — closes that one connection with one log
line naming the peer and the problem. Nothing propagates out of a connection task, so other
clients keep being served.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any

from broker_app.protocol.codec import decode_request, encode_response
from broker_app.protocol.errors import ProtocolError
from broker_app.protocol.framing import FrameDecoder

from .kafka_apis import NO_RESPONSE, CloseConnection, Deferred, DelayedFetch

log = logging.getLogger(__name__)

READ_CHUNK = 256 * 1024


class FetchWaiters:
    """Futures of parked fetches; `notify()` (called after every append) wakes them all."""

    def __init__(self) -> None:
        self._waiters: set[asyncio.Future[None]] = set()

    def notify(self) -> None:
        for fut in self._waiters:
            if not fut.done():
                fut.set_result(None)
        self._waiters.clear()

    async def wait(self, timeout: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(fut)
        try:
            await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            pass
        finally:
            self._waiters.discard(fut)


class SocketServer:
    def __init__(self, apis: Any, host: str, port: int, max_frame_bytes: int) -> None:
        self.apis = apis
        self.host = host
        self.port = port
        self.max_frame_bytes = max_frame_bytes
        self.fetch_waiters = FetchWaiters()
        replica_manager = getattr(apis, "replica_manager", None)  # the null broker has none
        if replica_manager is not None:
            replica_manager.on_append(self.fetch_waiters.notify)
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._on_connection, self.host, self.port, limit=READ_CHUNK
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer = writer.get_extra_info("peername")
        try:
            await self._serve(reader, writer, peer)
        except (ConnectionError, asyncio.IncompleteReadError) as e:
            log.debug("connection %s: %s", peer, e)
        except asyncio.CancelledError:
            pass
        except Exception:  # a bug in a handler must not take the broker down
            log.exception("connection %s: unexpected error, closing", peer)
        finally:
            self._connections.discard(task)
            writer.close()

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Any
    ) -> None:
        decoder = FrameDecoder(self.max_frame_bytes)
        while True:
            data = await reader.read(READ_CHUNK)
            if not data:
                if decoder.buffered:
                    log.warning(
                        "connection %s: closed mid-frame (%d bytes of a truncated frame dropped)",
                        peer,
                        decoder.buffered,
                    )
                return
            try:
                frames = decoder.feed(data)
            except ProtocolError as e:
                log.warning("connection %s: %s; closing", peer, e)
                return
            # Responses to the frames of one read are written with one send (pipelining
            # clients such as librdkafka have up to 5 requests in flight per connection).
            out: list[bytes] = []
            try:
                for frame in frames:
                    if not await self._process(frame, out, writer, peer):
                        return
            finally:
                if out:
                    writer.write(b"".join(out))
            await writer.drain()

    async def _process(
        self, frame: bytes, out: list[bytes], writer: asyncio.StreamWriter, peer: Any
    ) -> bool:
        """Handle one request, appending its response to `out`; False = close the connection."""
        try:
            request = decode_request(frame)
        except ProtocolError as e:
            log.warning("connection %s: %s; closing", peer, e)
            return False
        try:
            result = self.apis.handle(request)
            if isinstance(result, DelayedFetch | Deferred) or inspect.isawaitable(result):
                if out:  # earlier responses must not wait for this one
                    writer.write(b"".join(out))
                    out.clear()
                if isinstance(result, DelayedFetch):
                    result = await self._await_fetch(result)
                elif isinstance(result, Deferred):
                    result = await self._await_deferred(result)
                else:
                    result = await result
        except Exception:
            log.exception(
                "connection %s: handler for api_key=%d v%d failed; closing",
                peer,
                request.api_key,
                request.api_version,
            )
            return False
        if result is NO_RESPONSE:
            return True
        if isinstance(result, CloseConnection):
            log.warning("connection %s: %s; closing", peer, result.reason)
            return False
        out.append(encode_response(request.correlation_id, request.api_key, result))
        return True

    @staticmethod
    async def _await_deferred(deferred: Deferred) -> Any:
        """An acks=all produce: ReplicaManager's purgatory resolves it (completion or expiry)."""
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        deferred.add_callback(lambda v: fut.done() or fut.set_result(v))
        return await fut

    async def _await_fetch(self, delayed: DelayedFetch) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + delayed.max_wait_ms / 1000
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return delayed.complete(True)
            await self.fetch_waiters.wait(remaining)
            response = delayed.complete(False)
            if response is not None:
                return response
