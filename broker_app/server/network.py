"""SocketServer: the asyncio edge that moves frames between sockets and KafkaApis.

Per connection: read bytes -> FrameDecoder -> decode_request -> KafkaApis.handle -> encode ->
write, one request at a time and in order (Kafka mutes a channel while its request is in flight;
pipelining clients rely on responses arriving in request order). A DelayedFetch parks only its
own connection until ReplicaManager's fetch purgatory says it can be answered, or it times
out; an acks=all produce (Deferred) parks it until the produce purgatory answers (both through
server/respond.py, which the simulator's broker uses too).

Malformed input — oversized or negative frame sizes (refused from the size prefix, before the
body is read), truncated frames, garbage, unknown api keys/versions, bodies that do not fit
their schema (protocol/prescan.py) — closes that one connection, as Kafka's SocketServer does
when a request does not parse, with one rate-limited WARNING line naming the peer and the
problem and no traceback. Record-level problems (corrupt or invalid batches) are not decode
errors: they are answered per partition (CORRUPT_MESSAGE, INVALID_RECORD ...). A failing handler
is a bug: its traceback is logged, rate-limited too. Nothing propagates out of a connection
task, so other clients keep being served.

Limits (limits.py, Kafka's names): max.connections and max.connections.per.ip refuse a new
connection by closing it at once; connections.max.idle.ms closes a connection that sent nothing
for that long (a stalled half frame included).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any

from broker_app.aio import cancel_and_wait
from broker_app.env import AsyncioEnv
from broker_app.protocol.codec import decode_request, encode_response
from broker_app.protocol.errors import ProtocolError
from broker_app.protocol.framing import FrameDecoder
from broker_app.reject_log import RejectLog

from .kafka_apis import NO_RESPONSE, CloseConnection
from .limits import ConnectionCounter, ConnectionLimits
from .respond import is_parked, respond

log = logging.getLogger(__name__)

READ_CHUNK = 256 * 1024


class SocketServer:
    def __init__(
        self,
        apis: Any,
        host: str,
        port: int,
        max_frame_bytes: int,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.apis = apis
        self.host = host
        self.port = port
        self.max_frame_bytes = max_frame_bytes
        self.limits = limits or ConnectionLimits()
        self.counter = ConnectionCounter(self.limits)
        self.rejects = RejectLog(log)
        self.env = AsyncioEnv()
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        # Cleared by a cluster broker until it is first unfenced (broker_lifecycle.py): a
        # connection is accepted but nothing it sends is read before.
        self.serving = asyncio.Event()
        self.serving.set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._on_connection, self.host, self.port, limit=READ_CHUNK
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        await cancel_and_wait(list(self._connections))

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        peer = writer.get_extra_info("peername")
        ip = str(peer[0]) if isinstance(peer, tuple) and peer else str(peer)
        refused = self.counter.admit(ip)
        if refused is not None:
            self.rejects.warning("connection %s refused: %s", peer, refused)
            writer.close()
            return
        self._connections.add(task)
        try:
            await self.serving.wait()
            await self._serve(reader, writer, peer)
        except (ConnectionError, asyncio.IncompleteReadError) as e:
            log.debug("connection %s: %s", peer, e)
        except asyncio.CancelledError:
            pass
        except Exception:  # a bug in a handler must not take the broker down
            if self.rejects.warning("connection %s: unexpected error, closing", peer):
                log.exception("connection %s: traceback of the unexpected error", peer)
        finally:
            self.counter.release(ip)
            self._connections.discard(task)
            writer.close()

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Any
    ) -> None:
        decoder = FrameDecoder(self.max_frame_bytes)
        idle_s = self.limits.connections_max_idle_ms / 1000
        while True:
            try:
                data = await asyncio.wait_for(reader.read(READ_CHUNK), idle_s)
            except TimeoutError:
                log.debug("connection %s: idle for %.0f s (connections.max.idle.ms); closing",
                          peer, idle_s)  # fmt: skip
                return
            if not data:
                if decoder.buffered:
                    self.rejects.warning(
                        "connection %s: closed mid-frame (%d bytes of a truncated frame dropped)",
                        peer,
                        decoder.buffered,
                    )
                return
            try:
                frames = decoder.feed(data)
            except ProtocolError as e:
                self.rejects.warning("connection %s: %s; closing", peer, e)
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
            self.rejects.warning("connection %s: %s; closing", peer, e)
            return False
        try:
            result = self.apis.handle(request)
            if is_parked(result) or inspect.isawaitable(result):
                if out:  # earlier responses must not wait for this one
                    writer.write(b"".join(out))
                    out.clear()
                if is_parked(result):
                    answer = self.env.future()
                    respond(self.env, result, answer.set_result)
                    result = await answer
                else:
                    result = await result
        except Exception:
            if self.rejects.warning("connection %s: handler for api_key=%d v%d failed; closing",
                                    peer, request.api_key, request.api_version):  # fmt: skip
                log.exception("handler traceback (api_key=%d)", request.api_key)
            return False
        if result is NO_RESPONSE:
            return True
        if isinstance(result, CloseConnection):
            self.rejects.warning("connection %s: %s; closing", peer, result.reason)
            return False
        out.append(encode_response(request.correlation_id, request.api_key, result))
        return True
