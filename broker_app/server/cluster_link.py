"""ClusterLink: a broker's connection to the controller (the asyncio edge of the control plane).

- registers with BrokerRegistration (its advertised listener, a fresh incarnation id per process,
  so a restart is a new broker epoch), retrying with bounded backoff until the controller answers;
- heartbeats every heartbeat_interval_ms with the applied metadata offset (the controller unfences
  the broker once it has caught up); STALE_BROKER_EPOCH / BROKER_ID_NOT_REGISTERED → re-register;
- long-polls Fetch of `__cluster_metadata-0`, applies the records with MetadataLoader and turns
  `delta.local_changes(node_id)` into ReplicaManager.apply_partition / stop_replica;
- sends the ISR changes the leaders propose (AlterPartition v2, topic ids from the image) and hands
  the answers back to ReplicaManager;
- forwards CreateTopics / ElectLeaders from clients (AdminClient talks to brokers), and waits
  (bounded) until created topics appear in this broker's image, so a following Metadata sees them.
Three connections (metadata long-poll, heartbeats, everything else) so none waits on another.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any

from kio.index import load_request_schema
from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_delay,
    wait_exponential,
)

from broker_app.config import BrokerConfig
from broker_app.metadata import METADATA_PARTITION, METADATA_TOPIC, MetadataLoader
from broker_app.metadata.image import MetadataImage
from broker_app.metadata.records import MetadataRecordError
from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors
from broker_app.replication.messages import AlterPartitionRequest, AlterPartitionResponse
from broker_app.replication.replica_manager import ReplicaManager

from .network_client import ClientError, KafkaClient

log = logging.getLogger(__name__)

BROKER_ID_NOT_REGISTERED = 102
FORWARD_RETRY_S = 10.0  # a controller restarting or briefly unreachable: keep the client's request
CREATE_WAIT_S = 5.0  # how long a forwarded CreateTopics waits for the topic to reach our image


class ClusterLink:
    def __init__(self, config: BrokerConfig, replica_manager: ReplicaManager) -> None:
        assert config.controller is not None
        self.config = config
        self.replica_manager = replica_manager
        host, port = config.controller
        timeout = config.request_timeout_ms
        cid = f"broker-{config.node_id}"
        self._meta_client = KafkaClient(host, port, cid + "-metadata", timeout)
        self._hb_client = KafkaClient(host, port, cid + "-heartbeat", timeout)
        self._rpc_client = KafkaClient(host, port, cid, timeout)
        self.loader = MetadataLoader()
        self.incarnation_id = uuid.uuid4()
        self.broker_epoch = -1
        self.fenced = True
        self._registered = asyncio.Event()
        self._image_changed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._pending_creates: set[str] = set()
        replica_manager.alter_partition_sink = self._on_alter_partition

    @property
    def image(self) -> MetadataImage:
        return self.loader.image

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        for coro in (self._register_loop(), self._heartbeat_loop(), self._metadata_loop()):
            self._tasks.append(asyncio.create_task(coro))

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        for c in (self._meta_client, self._hb_client, self._rpc_client):
            c.close()

    def _backoff(self, attempt: int) -> float:
        base = self.config.replica_fetch_backoff_ms / 1000
        return min(base * (2 ** min(attempt, 5)), 2.0)

    async def _register_loop(self) -> None:
        await self._register()

    async def _register(self) -> None:
        host, port = self.config.advertised
        body = build(
            load_request_schema(62, 1),
            {
                "broker_id": self.config.node_id,
                "cluster_id": self.config.cluster_id,
                "incarnation_id": self.incarnation_id,
                "listeners": [
                    {"name": "PLAINTEXT", "host": host, "port": port, "security_protocol": 0}
                ],
                "features": [],
                "rack": None,
            },
        )
        attempt = 0
        while True:
            try:
                resp = await self._hb_client.send(body)
                if resp.error_code.value == Errors.NONE:
                    self.broker_epoch = resp.broker_epoch
                    log.info("registered with controller %s: broker epoch %d",
                             self._hb_client.address, self.broker_epoch)  # fmt: skip
                    self._registered.set()
                    return
                log.warning("BrokerRegistration refused: error %s", resp.error_code)
            except ClientError as e:
                log.info("controller not reachable for registration: %s", e)
            await asyncio.sleep(self._backoff(attempt))
            attempt += 1

    async def _heartbeat_loop(self) -> None:
        await self._registered.wait()
        interval = self.config.heartbeat_interval_ms / 1000
        while True:
            body = build(
                load_request_schema(63, 1),
                {
                    "broker_id": self.config.node_id,
                    "broker_epoch": self.broker_epoch,
                    "current_metadata_offset": self.loader.image.offset,
                    "want_fence": False,
                    "want_shut_down": False,
                    "offline_log_dirs": [],
                },
            )
            try:
                hb_timeout = max(2000, 4 * int(interval * 1000))
                resp = await self._hb_client.send(body, timeout_ms=hb_timeout)
                code = resp.error_code.value
                if code in (Errors.STALE_BROKER_EPOCH, BROKER_ID_NOT_REGISTERED):
                    log.warning("heartbeat refused (error %d); registering again", code)
                    self._registered.clear()
                    await self._register()
                elif code == Errors.NONE:
                    if self.fenced != resp.is_fenced:
                        log.info("broker %d is now %s", self.config.node_id,
                                 "fenced" if resp.is_fenced else "unfenced")  # fmt: skip
                    self.fenced = resp.is_fenced
            except ClientError as e:
                log.info("heartbeat failed: %s", e)
            await asyncio.sleep(interval)

    # --- metadata ----------------------------------------------------------------------------

    async def _metadata_loop(self) -> None:
        attempt = 0
        while True:
            body = build(
                load_request_schema(1, 12),
                {
                    "replica_id": -1,
                    "max_wait": 500,
                    "min_bytes": 1,
                    "max_bytes": 8 << 20,
                    "isolation_level": 0,
                    "session_id": 0,
                    "session_epoch": -1,
                    "topics": [
                        {
                            "topic": METADATA_TOPIC,
                            "partitions": [
                                {
                                    "partition": METADATA_PARTITION,
                                    "fetch_offset": self.loader.next_offset,
                                    "partition_max_bytes": 8 << 20,
                                }
                            ],
                        }
                    ],
                    "forgotten_topics_data": [],
                    "rack_id": "",
                },
            )
            try:
                resp = await self._meta_client.send(body)
                part = resp.responses[0].partitions[0]
                if part.error_code.value != Errors.NONE:
                    raise ClientError(f"metadata fetch error {part.error_code}")
                if part.records:
                    self._apply(bytes(part.records))
                attempt = 0
            except (ClientError, IndexError) as e:
                log.info("metadata fetch failed: %s", e)
                await asyncio.sleep(self._backoff(attempt))
                attempt += 1

    def _apply(self, records: bytes) -> None:
        try:
            delta = self.loader.apply_fetched(records)
        except MetadataRecordError as e:
            log.error("metadata not applied, keeping image at offset %d: %s",
                      self.loader.image.offset, e)  # fmt: skip
            return
        changes = delta.local_changes(self.config.node_id)
        image = delta.new
        for (topic, p), reg in list(changes.leaders.items()) + list(changes.followers.items()):
            t = image.topics[topic]
            self.replica_manager.topic_ids[topic] = t.topic_id
            min_isr = int(t.configs.get("min.insync.replicas", self.config.min_insync_replicas))
            self.replica_manager.apply_partition(
                topic, p, reg.leader, reg.leader_epoch, tuple(reg.isr), tuple(reg.replicas),
                reg.partition_epoch, min_isr,
            )  # fmt: skip
        for topic, p in changes.deletes:
            self.replica_manager.stop_replica(topic, p)
        self._image_changed.set()
        self._image_changed = asyncio.Event()

    # --- AlterPartition ------------------------------------------------------------------------

    def _on_alter_partition(self, request: AlterPartitionRequest) -> None:
        asyncio.get_running_loop().create_task(self._send_alter_partition(request))

    async def _send_alter_partition(self, request: AlterPartitionRequest) -> None:
        topic_id = self.replica_manager.topic_ids.get(request.topic)
        if topic_id is None:
            log.warning("AlterPartition for %s: no topic id known", request.topic)
            return
        body = build(
            load_request_schema(56, 2),
            {
                "broker_id": self.config.node_id,
                "broker_epoch": self.broker_epoch,
                "topics": [
                    {
                        "topic_id": topic_id,
                        "partitions": [
                            {
                                "partition_index": request.partition,
                                "leader_epoch": request.leader_epoch,
                                "new_isr": list(request.new_isr),
                                "leader_recovery_state": 0,
                                "partition_epoch": request.partition_epoch,
                            }
                        ],
                    }
                ],
            },
        )
        try:
            resp = await self._rpc_client.send(body)
        except ClientError as e:
            # The proposal stays pending; a later metadata update (make_leader) resets it.
            log.warning("AlterPartition %s-%d not sent: %s", request.topic, request.partition, e)
            return
        error = Errors(resp.error_code.value)
        answer = AlterPartitionResponse(error=error)
        with contextlib.suppress(IndexError):
            p = resp.topics[0].partitions[0]
            if error == Errors.NONE:
                error = Errors(p.error_code.value)
            answer = AlterPartitionResponse(
                error=error,
                leader_id=p.leader_id,
                leader_epoch=p.leader_epoch,
                isr=tuple(p.isr),
                partition_epoch=p.partition_epoch,
            )
        if answer.error != Errors.NONE:
            log.info("AlterPartition %s-%d answered %s", request.topic, request.partition,
                     answer.error.name)  # fmt: skip
        self.replica_manager.on_alter_partition_response(request, answer)

    # --- forwarding ----------------------------------------------------------------------------

    async def forward(self, body: Any) -> Any:
        """Send a client's request to the controller unchanged; return its response entity.

        A controller that is restarting or briefly unreachable is retried (bounded) rather than
        failing the client's request: the broker would otherwise close the client's connection."""
        async for attempt in AsyncRetrying(
            stop=stop_after_delay(FORWARD_RETRY_S),
            wait=wait_exponential(multiplier=0.05, max=1.0),
            retry=retry_if_exception_type(ClientError),
            reraise=True,
        ):
            with attempt:
                return await self._rpc_client.send(body)
        raise AssertionError("unreachable")

    async def forward_create_topics(self, body: Any, names: list[str]) -> Any:
        resp = await self.forward(body)
        created = {t.name for t in resp.topics if t.error_code.value == Errors.NONE}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CREATE_WAIT_S
        while not created <= set(self.image.topics) and loop.time() < deadline:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._image_changed.wait(), deadline - loop.time())
        return resp

    def auto_create_topic(self, name: str) -> None:
        """Metadata for an unknown topic with auto-create on: ask the controller, once."""
        if name in self._pending_creates:
            return
        self._pending_creates.add(name)
        body = build(
            load_request_schema(19, 7),
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": -1,
                        "replication_factor": -1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout": 5000,
                "validate_only": False,
            },
        )

        async def create() -> None:
            try:
                await self.forward(body)
            except ClientError as e:
                log.info("auto-create of %r failed: %s", name, e)
            finally:
                self._pending_creates.discard(name)

        asyncio.get_running_loop().create_task(create())
