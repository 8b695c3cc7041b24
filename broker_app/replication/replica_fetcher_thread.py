"""ReplicaFetcherThread / ReplicaFetcherManager: the asyncio edge driving ReplicaFetcherState.

One ReplicaFetcherThread (an asyncio task) per leader broker, fetching all partitions this broker
follows from that leader in one Fetch v12 request (replica_id = this broker, CurrentLeaderEpoch,
LastFetchedEpoch under the diverging-epoch protocol). Partitions whose fetcher state is
"truncating" (kip-101 / kip-279) first get an OffsetForLeaderEpoch v4 round. The leader address is
`--peer-address ID=HOST:PORT` when given (e.g. a Toxiproxy proxy), else the leader's registered
listener. Connection errors back off (replica.fetch.backoff.ms, doubling, capped at 10x); a
partition leaves its thread when it stops being a follower of that leader (ReplicaManager's
on_follower_change), and a response is applied only if the partition still has the same fetcher
state object (leadership did not change while the request was in flight).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from kio.index import load_request_schema

from broker_app.protocol.entities import build
from broker_app.replication.errors import Errors
from broker_app.replication.fetcher import FENCED, FETCHING, TRUNCATING, ReplicaFetcherState
from broker_app.replication.messages import EpochEndOffset, FetchPartitionResult
from broker_app.replication.partition import Partition
from broker_app.replication.replica_manager import ReplicaManager
from broker_app.server.network_client import ClientError, KafkaClient

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class ReplicaFetcherThread:
    def __init__(
        self,
        leader_id: int,
        address: tuple[str, int],
        replica_manager: ReplicaManager,
        max_wait_ms: int,
        max_bytes: int,
        backoff_ms: int,
        request_timeout_ms: int,
    ) -> None:
        self.leader_id = leader_id
        self.replica_manager = replica_manager
        self.node_id = replica_manager.node_id
        self.max_wait_ms = max_wait_ms
        self.max_bytes = max_bytes
        self.backoff_ms = backoff_ms
        self.client = KafkaClient(
            address[0],
            address[1],
            f"replica-fetcher-{self.node_id}-from-{leader_id}",
            request_timeout_ms + max_wait_ms,
        )
        self.states: dict[TopicPartition, ReplicaFetcherState] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def add(self, partition: Partition) -> None:
        tp = (partition.topic, partition.partition)
        self.states[tp] = ReplicaFetcherState(partition, self.max_bytes)
        self._wake.set()

    def remove(self, tp: TopicPartition) -> None:
        self.states.pop(tp, None)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        self.client.close()

    async def _run(self) -> None:
        failures = 0
        while True:
            if not self.states:
                self._wake.clear()
                await self._wake.wait()
                continue
            try:
                progressed = await self._truncate_round()
                progressed = await self._fetch_round() or progressed
                failures = 0 if progressed else failures + 1
            except ClientError as e:
                failures += 1
                log.info("fetch from broker %d failed: %s", self.leader_id, e)
            except Exception:  # a bug must not silently stop replication for good
                failures += 1
                log.exception("replica fetcher for leader %d", self.leader_id)
            if failures:
                await asyncio.sleep(self.backoff_ms * min(2 ** (failures - 1), 10) / 1000)

    def _current(self, tp: TopicPartition, st: ReplicaFetcherState) -> bool:
        return self.states.get(tp) is st and st.partition.role == "follower"

    async def _truncate_round(self) -> bool:
        wanted = [(tp, st) for tp, st in self.states.items() if st.state == TRUNCATING]
        if not wanted:
            return True
        reqs = {tp: st.build_offset_for_leader_epoch() for tp, st in wanted}
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, p), r in reqs.items():
            by_topic.setdefault(topic, []).append(
                {"partition": p, "current_leader_epoch": r.current_leader_epoch,
                 "leader_epoch": r.leader_epoch}  # fmt: skip
            )
        body = build(
            load_request_schema(23, 4),
            {
                "replica_id": self.node_id,
                "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
            },
        )
        resp = await self.client.send(body)
        states = dict(wanted)
        ok = True
        for t in resp.topics:
            for p in t.partitions:
                tp = (t.topic, p.partition)
                st = states.get(tp)
                if st is None or not self._current(tp, st) or st.state != TRUNCATING:
                    continue
                answer = EpochEndOffset(
                    error=_error(p.error_code.value),
                    leader_epoch=p.leader_epoch,
                    end_offset=p.end_offset,
                )
                cut = st.on_offset_for_leader_epoch_response(answer)
                if cut is not None:
                    log.info("%s-%d truncated to %d (OffsetForLeaderEpoch)", tp[0], tp[1], cut)
                ok = ok and answer.error == Errors.NONE
        return ok

    async def _fetch_round(self) -> bool:
        fetching = [(tp, st) for tp, st in self.states.items() if st.state == FETCHING]
        if not fetching:
            return not any(st.state == FENCED for st in self.states.values())
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, p), st in fetching:
            r = st.build_fetch()
            by_topic.setdefault(topic, []).append(
                {
                    "partition": p,
                    "current_leader_epoch": r.current_leader_epoch,
                    "fetch_offset": r.fetch_offset,
                    "last_fetched_epoch": r.last_fetched_epoch,
                    "log_start_offset": r.log_start_offset,
                    "partition_max_bytes": r.max_bytes,
                }
            )
        body = build(
            load_request_schema(1, 12),
            {
                "replica_id": self.node_id,
                "max_wait": self.max_wait_ms,
                "min_bytes": 1,
                "max_bytes": self.max_bytes,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
        )
        resp = await self.client.send(body)
        states = dict(fetching)
        ok = True
        for t in resp.responses:
            for p in t.partitions:
                tp = (t.topic, p.partition_index)
                st = states.get(tp)
                if st is None or not self._current(tp, st) or st.state != FETCHING:
                    continue
                de = p.diverging_epoch
                diverging = None
                if de is not None and (de.epoch >= 0 or de.end_offset >= 0):
                    diverging = EpochEndOffset(leader_epoch=de.epoch, end_offset=de.end_offset)
                result = FetchPartitionResult(
                    error=_error(p.error_code.value),
                    high_watermark=p.high_watermark,
                    log_start_offset=p.log_start_offset,
                    records=bytes(p.records) if p.records else b"",
                    diverging_epoch=diverging,
                )
                outcome = st.on_fetch_response(result)
                if outcome.truncated_to is not None:
                    log.info("%s-%d truncated to %d (diverging epoch / out of range)",
                             tp[0], tp[1], outcome.truncated_to)  # fmt: skip
                if outcome.error != Errors.NONE:
                    ok = False
                    log.debug("%s-%d fetch from %d: %s %s", tp[0], tp[1], self.leader_id,
                              outcome.error.name, outcome.detail)  # fmt: skip
        return ok


def _error(code: int) -> Errors:
    try:
        return Errors(code)
    except ValueError:
        return Errors.UNKNOWN_SERVER_ERROR


class ReplicaFetcherManager:
    """Keeps one ReplicaFetcherThread per leader; listens to ReplicaManager's follower changes."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        resolve_address: Callable[[int], tuple[str, int] | None],
        max_wait_ms: int = 500,
        max_bytes: int = 1 << 20,
        backoff_ms: int = 200,
        request_timeout_ms: int = 30_000,
    ) -> None:
        self.replica_manager = replica_manager
        self.resolve_address = resolve_address
        self.settings = (max_wait_ms, max_bytes, backoff_ms, request_timeout_ms)
        self.threads: dict[int, ReplicaFetcherThread] = {}
        self._owner: dict[TopicPartition, int] = {}
        replica_manager.on_follower_change(self.on_follower_change)

    def on_follower_change(self, partition: Partition, fetch: bool) -> None:
        tp = (partition.topic, partition.partition)
        old = self._owner.pop(tp, None)
        if old is not None and old in self.threads:
            self.threads[old].remove(tp)
        if not fetch or partition.leader_id < 0:
            return
        leader = partition.leader_id
        address = self.resolve_address(leader)
        if address is None:
            log.warning("%s: no address known for leader %d; not fetching", partition.name, leader)
            return
        thread = self.threads.get(leader)
        if thread is not None and (thread.client.host, thread.client.port) != address:
            thread.client.retarget(*address)
        if thread is None:
            thread = self.threads[leader] = ReplicaFetcherThread(
                leader, address, self.replica_manager, *self.settings
            )
            thread.start()
        thread.add(partition)
        self._owner[tp] = leader

    async def stop(self) -> None:
        for thread in self.threads.values():
            await thread.stop()
