"""`highwater bench proxy`: cluster cold start, and what crossing Toxiproxy costs a producer.

One run (images built first, not timed): start a cluster of --brokers brokers (Toxiproxy on
every link) and time (1) Cluster.up() until every process listens and (2) until a topic of
--partitions partitions, created through the client proxy, has a leader for every partition.
Then drive broker-1 with the same pipelined raw Produce loop (Produce v9, acks=1, --batch
records of --value-bytes per request, --inflight requests in flight) for --seconds, once
through its client proxy and once straight to its own published port, and print records/s,
MB/s for both and the proxy/direct ratio. A raw loop, not confluent-kafka: the broker
advertises the proxy port, so a metadata-following client could not go direct. Speed is
reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=10.0, help="produce time per path")
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--batch", type=int, default=100, help="records per Produce request")
    parser.add_argument("--inflight", type=int, default=8, help="pipelined requests")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")


@dataclass
class PathResult:
    path: str
    requests: int
    records: int
    seconds: float
    records_per_s: float
    mb_per_s: float


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"closed by the broker after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def produce_loop(address: str, topic: str, seconds: float, value_bytes: int, batch: int,
                 inflight: int, label: str) -> PathResult:
    """Pipelined acks=1 Produce requests to partition 0 of topic at address, for `seconds`."""
    from broker_app.protocol.codec import decode_response, encode_request, request_class
    from broker_app.protocol.entities import build
    from broker_app.storage.records import build_batch

    records = build_batch([(None, b"x" * value_bytes)] * batch)
    body = build(request_class(0, 9), {
        "transactional_id": None, "acks": 1, "timeout": 10_000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    })
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sent = done = 0
        started = time.monotonic()
        deadline = started + seconds
        while True:
            while sent - done < inflight and time.monotonic() < deadline:
                sent += 1
                sock.sendall(encode_request("bench", sent, body))
            if done == sent:
                break
            (size,) = struct.unpack(">i", _recv_exact(sock, 4))
            _corr, resp = decode_response(0, 9, _recv_exact(sock, size))
            err = resp.responses[0].partition_responses[0].error_code
            if err:
                raise RuntimeError(f"{label}: produce to {topic} failed with error code {err}")
            done += 1
        elapsed = time.monotonic() - started
    n = done * batch
    return PathResult(label, done, n, elapsed, n / elapsed, n * value_bytes / elapsed / 1e6)


def _wait_leaders(bootstrap: str, topic: str, partitions: int, timeout_s: float) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for attempt in range(3):  # bounded: a fresh connection through the proxy can drop once
        try:
            admin.create_topics([NewTopic(topic, partitions, 1)],
                                request_timeout=30)[topic].result(timeout=timeout_s)
            break
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                break
            if attempt == 2:
                raise
            time.sleep(0.5)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        if md is not None and md.error is None and len(md.partitions) == partitions and all(
            p.leader >= 0 for p in md.partitions.values()
        ):
            return
        time.sleep(0.05)
    raise TimeoutError(f"{topic}: not every partition had a leader within {timeout_s}s")


def run(args: argparse.Namespace) -> int:
    from harness.cluster import Cluster, new_run_id
    from harness.cluster.cluster import _ensure_images

    images = _ensure_images()
    out: dict[str, Any] = {"brokers": args.brokers, "partitions": args.partitions}
    t0 = time.monotonic()
    with Cluster(new_run_id("bench"), brokers=args.brokers, images=images) as cluster:
        out["up_s"] = round(time.monotonic() - t0, 2)
        _wait_leaders(cluster.client_address("broker-1"), "bench-leaders", args.partitions, 60)
        out["all_leaders_s"] = round(time.monotonic() - t0, 2)
        print(f"cold start: processes listening {out['up_s']}s, every partition led "
              f"{out['all_leaders_s']}s (brokers={args.brokers})")
        for label in ("proxy", "direct"):  # Produce does not auto-create topics
            _wait_leaders(cluster.client_address("broker-1"), f"bench-{label}", 1, 60)
        direct = cluster.direct_address("broker-1")
        assert direct is not None
        results = []
        for label, address in (("proxy", cluster.client_address("broker-1")),
                               ("direct", direct)):
            # A warm-up request creates the topic on this path before timing.
            produce_loop(address, f"bench-{label}", 0.5, args.value_bytes, args.batch, 1, label)
            r = produce_loop(address, f"bench-{label}", args.seconds, args.value_bytes,
                             args.batch, args.inflight, label)
            results.append(r)
            print(f"{label:<7} {r.records_per_s:>10.0f} records/s {r.mb_per_s:>7.2f} MB/s "
                  f"({r.requests} requests in {r.seconds:.1f}s)")
        ratio = results[0].records_per_s / results[1].records_per_s
        print(f"proxy/direct throughput ratio: {ratio:.2f}")
        out["paths"] = [asdict(r) for r in results]
        out["proxy_direct_ratio"] = round(ratio, 3)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0
