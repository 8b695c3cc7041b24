"""The broker's asyncio edge towards the controller: ControllerChannel and BrokerControllerAgent.

- `ControllerChannel(host, port)`: one TCP connection, `await request(entity)` sends a kio
  request and returns the decoded response; requests on one channel are serialised; any I/O
  error or timeout closes the connection and raises ControllerUnavailable (the next request
  reconnects). Kafka's NodeToControllerChannelManager in miniature.
- `BrokerControllerAgent(lifecycle, host, port, on_metadata)`: what a broker runs to be part of
  the cluster. Two tasks on two channels (the metadata fetch long-polls, heartbeats must not
  wait behind it): the lifecycle loop (registration, heartbeats reporting the loader's metadata
  offset) and the metadata loop (Fetch `__cluster_metadata-0` from loader.next_offset with
  max_wait, apply with MetadataLoader, call `on_metadata(delta)` for every non-empty change).
  `alter_partition(entity)` sends an AlterPartition on a third channel. `stop()` cancels all and
  closes the channels. A malformed metadata record is logged and the fetch retried after a
  back-off; the broker keeps its last good image.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import time
from collections.abc import Callable
from typing import Any

from broker_app.metadata.image import MetadataDelta
from broker_app.metadata.loader import MetadataLoader
from broker_app.metadata.records import METADATA_PARTITION, METADATA_TOPIC, MetadataRecordError
from broker_app.protocol.codec import decode_response, encode_request, request_class
from broker_app.protocol.entities import build

from .aio import cancel_and_wait
from .broker_lifecycle import BrokerLifecycle

log = logging.getLogger(__name__)

FETCH_VERSION = 12


class ControllerUnavailable(ConnectionError):
    pass


class ControllerChannel:
    def __init__(self, host: str, port: int, client_id: str = "broker",
                 timeout_s: float = 10.0) -> None:  # fmt: skip
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()
        self._correlation = 0

    async def request(self, body: Any, timeout_s: float | None = None) -> Any:
        async with self._lock:
            try:
                return await asyncio.wait_for(self._exchange(body), timeout_s or self.timeout_s)
            except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError) as e:
                await self.close()
                raise ControllerUnavailable(
                    f"controller {self.host}:{self.port}: {type(e).__name__}: {e}"
                ) from e

    async def _exchange(self, body: Any) -> Any:
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        assert self._reader is not None
        self._correlation += 1
        self._writer.write(encode_request(self.client_id, self._correlation, body))
        await self._writer.drain()
        (size,) = struct.unpack(">i", await self._reader.readexactly(4))
        payload = await self._reader.readexactly(size)
        corr, response = decode_response(body.__api_key__, body.__version__, payload)
        if corr != self._correlation:
            raise ValueError(f"correlation id {corr}, expected {self._correlation}")
        return response

    async def close(self) -> None:
        writer, self._reader, self._writer = self._writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


class BrokerControllerAgent:
    def __init__(
        self,
        lifecycle: BrokerLifecycle,
        controller_host: str,
        controller_port: int,
        on_metadata: Callable[[MetadataDelta], None],
        *,
        loader: MetadataLoader | None = None,
        fetch_max_wait_ms: int = 500,
        tick_ms: int = 50,
    ) -> None:
        self.lifecycle = lifecycle
        self.loader = loader or MetadataLoader()
        self.on_metadata = on_metadata
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.tick_ms = tick_ms
        name = f"broker-{lifecycle.broker_id}"
        self._heartbeats = ControllerChannel(controller_host, controller_port, name)
        self._fetches = ControllerChannel(
            controller_host, controller_port, name, timeout_s=10 + fetch_max_wait_ms / 1000
        )
        self._alters = ControllerChannel(controller_host, controller_port, name)
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._lifecycle_loop()),
            asyncio.create_task(self._metadata_loop()),
        ]

    async def stop(self) -> None:
        self._stopping = True
        await cancel_and_wait(self._tasks)
        for ch in (self._heartbeats, self._fetches, self._alters):
            await ch.close()

    async def alter_partition(self, body: Any) -> Any:
        return await self._alters.request(body)

    async def _lifecycle_loop(self) -> None:
        lc = self.lifecycle
        while not self._stopping:
            request = lc.next_request(_now_ms(), self.loader.image.offset)
            if request is None:
                await asyncio.sleep(self.tick_ms / 1000)
                continue
            try:
                response = await self._heartbeats.request(request)
            except ControllerUnavailable as e:
                lc.on_failure(_now_ms(), str(e))
                continue
            before = (lc.state, lc.broker_epoch)
            lc.on_response(response, _now_ms())
            if (lc.state, lc.broker_epoch) != before:
                log.info("broker %d: %s epoch %d", lc.broker_id, lc.state.value, lc.broker_epoch)

    def _fetch_request(self) -> Any:
        return build(
            request_class(1, FETCH_VERSION),
            {
                "replica_id": self.lifecycle.broker_id,
                "max_wait": self.fetch_max_wait_ms,
                "min_bytes": 1,
                "max_bytes": 8 * 1024 * 1024,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [{"topic": METADATA_TOPIC, "partitions": [{
                    "partition": METADATA_PARTITION, "current_leader_epoch": -1,
                    "fetch_offset": self.loader.next_offset, "last_fetched_epoch": -1,
                    "log_start_offset": -1, "partition_max_bytes": 8 * 1024 * 1024}]}],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
        )  # fmt: skip

    async def _metadata_loop(self) -> None:
        backoff = self.lifecycle.retry_backoff_ms / 1000
        while not self._stopping:
            try:
                response = await self._fetches.request(self._fetch_request())
            except ControllerUnavailable as e:
                log.debug("metadata fetch: %s", e)
                await asyncio.sleep(backoff)
                continue
            part = response.responses[0].partitions[0] if response.responses else None
            if part is None or int(part.error_code) != 0:
                log.warning("metadata fetch error: %s", None if part is None else part.error_code)
                await asyncio.sleep(backoff)
                continue
            if not part.records:
                continue
            try:
                delta = self.loader.apply_fetched(part.records)
            except MetadataRecordError as e:
                log.error("broker %d: %s", self.lifecycle.broker_id, e)
                await asyncio.sleep(backoff)
                continue
            if delta.changed_partitions() or delta.changed_brokers():
                try:
                    self.on_metadata(delta)
                except Exception:  # the broker's bug must not stop metadata propagation
                    log.exception("broker %d: on_metadata failed", self.lifecycle.broker_id)
