"""AdminApis: the admin-client requests a broker answers from its metadata image, or forwards.

- DescribeCluster: the live brokers and, as Kafka's KRaft brokers do, a random alive broker as
  controller_id (clients cannot reach KRaft controllers, KIP-590; brokers forward for them).
- AlterPartitionReassignments: forwarded to the controller, which runs the KIP-455 reassignment.
- ListPartitionReassignments: the partitions of the committed image with adding or removing
  replicas (all of them, or the ones asked for).
- DeleteRecords: the leader moves the partition's log start (offset -1 = the HW); ListOffsets
  earliest then answers it and a Fetch below it OFFSET_OUT_OF_RANGE; followers copy the leader's
  log start from their next fetch. Deviation: Kafka's leader waits (DelayedDeleteRecords) until
  every follower's low watermark has moved before answering; this leader answers at once.
- DescribeLogDirs: one log dir (the data dir) with the partitions this broker hosts, their size
  and offset lag (HW - LEO, as Kafka computes it), total/usable bytes of its file system.
"""

from __future__ import annotations

import shutil
from typing import Any

from broker_app.protocol.codec import Request
from broker_app.protocol.error_codes import Errors
from broker_app.storage.errors import StorageError

from .api_common import CLUSTER_OPERATIONS, BrokerContext, authorized_operations, respond


class AdminApis:
    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def handle_describe_cluster(self, request: Request) -> Any:
        config = self.broker.config
        host, port = config.advertised
        image = self.broker.cluster.image
        live = image.live_brokers()
        brokers = [{"broker_id": b, "host": image.brokers[b].host,
                    "port": image.brokers[b].port, "rack": image.brokers[b].rack}
                   for b in live]  # fmt: skip
        controller = self.broker.rng.choice(live) if live else -1
        return respond(request, {
            "throttle_time": 0, "error_code": Errors.NONE, "error_message": None,
            "endpoint_type": 1, "cluster_id": config.cluster_id, "controller_id": controller,
            "brokers": brokers,
            "cluster_authorized_operations": authorized_operations(
                getattr(request.body, "include_cluster_authorized_operations", False),
                CLUSTER_OPERATIONS),
        })  # fmt: skip

    def handle_alter_partition_reassignments(self, request: Request) -> Any:
        return self.broker.cluster.forward(request.body)

    def handle_list_partition_reassignments(self, request: Request) -> Any:
        topics: list[dict[str, Any]] = []
        image = self.broker.cluster.image
        wanted = None if request.body.topics is None else {
            t.name: set(t.partition_indexes) for t in request.body.topics}  # fmt: skip
        for name, topic in sorted(image.topics.items()):
            if wanted is not None and name not in wanted:
                continue
            parts = [{"partition_index": idx, "replicas": list(reg.replicas),
                      "adding_replicas": list(reg.adding_replicas),
                      "removing_replicas": list(reg.removing_replicas)}
                     for idx, reg in sorted(topic.partitions.items())
                     if reg.is_reassigning
                     and (wanted is None or idx in wanted[name])]  # fmt: skip
            if parts:
                topics.append({"name": name, "partitions": parts})
        return respond(request, {"throttle_time": 0, "error_code": Errors.NONE,
                                            "error_message": None, "topics": topics})  # fmt: skip

    def handle_delete_records(self, request: Request) -> Any:
        topics = []
        for t in request.body.topics:
            parts = [{"partition_index": p.partition_index, "low_watermark": -1,
                      **self._delete_records_one(t.name, p.partition_index, int(p.offset))}
                     for p in t.partitions]  # fmt: skip
            topics.append({"name": t.name, "partitions": parts})
        return respond(request, {"throttle_time": 0, "topics": topics})

    def _delete_records_one(self, topic: str, partition: int, offset: int) -> dict[str, int]:
        state = self.broker.replica_manager.get_partition(topic, partition)
        if state is None:
            code = self.broker.unhosted_error(topic, partition, Errors.UNKNOWN_TOPIC_OR_PARTITION)
            return {"error_code": code}
        if not state.is_leader:
            return {"error_code": Errors.NOT_LEADER_OR_FOLLOWER}
        log = state.log
        target = log.high_watermark if offset == -1 else offset
        if target < 0 or target > log.high_watermark:
            return {"error_code": Errors.OFFSET_OUT_OF_RANGE}
        try:
            log.maybe_increment_log_start_offset(target)
        except StorageError as e:
            return {"error_code": e.kafka_error_code}
        return {"error_code": Errors.NONE, "low_watermark": log.log_start_offset}

    def handle_describe_log_dirs(self, request: Request) -> Any:
        wanted = None if request.body.topics is None else {
            t.topic: set(t.partitions) for t in request.body.topics}  # fmt: skip
        by_topic: dict[str, list[dict[str, Any]]] = {}
        rm = self.broker.replica_manager
        for (topic, idx), part in sorted(rm.partitions.items()):
            if wanted is not None and idx not in wanted.get(topic, ()):
                continue
            log = part.log
            by_topic.setdefault(topic, []).append({
                "partition_index": idx, "partition_size": int(getattr(log, "size", 0)),
                "offset_lag": max(log.high_watermark - log.log_end_offset, 0),
                "is_future_key": False})  # fmt: skip
        data_dir = str(self.broker.config.data_dir)
        try:
            usage = shutil.disk_usage(data_dir)
            total, usable = usage.total, usage.free
        except OSError:
            total = usable = -1  # Kafka's UNKNOWN_VOLUME_BYTES
        return respond(request, {
            "throttle_time": 0, "error_code": Errors.NONE, "results": [{
                "error_code": Errors.NONE, "log_dir": data_dir,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
                "total_bytes": total, "usable_bytes": usable}]})  # fmt: skip
