"""Null broker: the benchmark's ceiling. Same SocketServer and codec as the real broker, but
every Produce succeeds and nothing is stored (offsets are counted from each batch header's
record count so clients see plausible offsets). Metadata reports any requested topic with
one partition led by this broker. Only what a producer needs: ApiVersions, Metadata,
Produce, InitProducerId.

`python -m broker_app.server.null_broker --port P` runs it until SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import struct
import sys
import uuid
from typing import Any

from broker_app.protocol.apis import SUPPORTED_APIS, ApiKey
from broker_app.protocol.codec import Request, response_class
from broker_app.protocol.entities import build
from broker_app.protocol.framing import DEFAULT_MAX_FRAME_BYTES

from .kafka_apis import NO_RESPONSE, CloseConnection

_RECORDS_COUNT = struct.Struct(">i")
_RECORDS_COUNT_POS = 57  # offset of recordsCount in a v2 batch header
_BATCH_LENGTH_POS = 8

NULL_APIS = (ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.INIT_PRODUCER_ID)
# Listed in ApiVersions, never served: librdkafka writes the v2 record format (MsgVer2) only to
# a broker that lists Fetch v4+ beside Produce v3+; without it, it falls back to magic 0/1
# message sets (one 126-byte "batch" per 100-byte record), which is not what the real broker
# gets, so the null broker would not be the same workload. A producer never sends Fetch.
ADVERTISED_APIS = (*NULL_APIS, ApiKey.FETCH)


def count_records(records: bytes) -> int:
    n, pos = 0, 0
    while pos + 61 <= len(records):
        (batch_length,) = _RECORDS_COUNT.unpack_from(records, pos + _BATCH_LENGTH_POS)
        (count,) = _RECORDS_COUNT.unpack_from(records, pos + _RECORDS_COUNT_POS)
        n += max(count, 0)
        pos += 12 + max(batch_length, 0)
    return n


class NullKafkaApis:
    def __init__(self, node_id: int, host: str, port: int) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.next_offset: dict[tuple[str, int], int] = {}
        self.topic_ids: dict[str, uuid.UUID] = {}
        self.next_pid = 0

    def handle(self, request: Request) -> Any:
        cls = response_class(request.api_key, request.api_version)
        body = request.body
        if request.api_key == ApiKey.API_VERSIONS:
            keys = [
                {"api_key": k, "min_version": v.min_version, "max_version": v.max_version}
                for k, v in SUPPORTED_APIS.items()
                if k in ADVERTISED_APIS
            ]
            if request.unsupported_api_versions:
                return build(
                    response_class(ApiKey.API_VERSIONS, 0), {"error_code": 35, "api_keys": keys}
                )
            return build(cls, {"error_code": 0, "api_keys": keys, "throttle_time": 0})
        if request.api_key == ApiKey.METADATA:
            names = [t.name for t in body.topics or () if t.name]
            topics = [
                {
                    "error_code": 0,
                    "name": n,
                    "topic_id": self.topic_ids.setdefault(n, uuid.uuid4()),
                    "partitions": [
                        {
                            "error_code": 0,
                            "partition_index": 0,
                            "leader_id": self.node_id,
                            "leader_epoch": 0,
                            "replica_nodes": [self.node_id],
                            "isr_nodes": [self.node_id],
                        }
                    ],
                }
                for n in names
            ]
            return build(
                cls,
                {
                    "throttle_time": 0,
                    "brokers": [{"node_id": self.node_id, "host": self.host, "port": self.port}],
                    "cluster_id": "null",
                    "controller_id": self.node_id,
                    "topics": topics,
                },
            )
        if request.api_key == ApiKey.INIT_PRODUCER_ID:
            self.next_pid += 1
            return build(
                cls,
                {
                    "throttle_time": 0,
                    "error_code": 0,
                    "producer_id": self.next_pid,
                    "producer_epoch": 0,
                },
            )
        if request.api_key == ApiKey.PRODUCE:
            responses = []
            for t in body.topic_data:
                parts = []
                for p in t.partition_data:
                    tp = (t.name, p.index)
                    base = self.next_offset.get(tp, 0)
                    self.next_offset[tp] = base + count_records(p.records or b"")
                    parts.append(
                        {"index": p.index, "error_code": 0, "base_offset": base,
                         "log_append_time": -1, "log_start_offset": 0, "record_errors": []}
                    )  # fmt: skip
                responses.append({"name": t.name, "partition_responses": parts})
            if body.acks == 0:
                return NO_RESPONSE
            return build(cls, {"responses": responses, "throttle_time": 0})
        return CloseConnection(f"null broker does not implement api_key={request.api_key}")


async def serve_null(host: str, port: int, node_id: int = 1) -> None:
    from .network import SocketServer

    server = SocketServer(NullKafkaApis(node_id, host, port), host, port, DEFAULT_MAX_FRAME_BYTES)
    await server.start()
    server.apis.port = server.port
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"null broker listening on {host}:{server.port}", flush=True)
    try:
        await stop.wait()
    finally:
        await server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="null_broker")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    asyncio.run(serve_null(args.host, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
