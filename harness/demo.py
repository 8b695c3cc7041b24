"""`highwater demo`: the current main job (`make run`).

Starts one broker as a local process on a free 127.0.0.1 port, produces a few
thousand messages with a real confluent-kafka producer (acks=all), reads them
back with a real consumer in assign mode, and prints what was acknowledged,
what was read and whether the two agree. Exit 0 when every acknowledged value
was read back exactly once and in order. Later work replaces this with a chaos
plan run.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.localproc import free_port, wait_listening

TOPIC = "demo"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--messages", type=int, default=5000, help="how many to produce")
    parser.add_argument("--acks", choices=["0", "1", "all"], default="all")
    parser.add_argument("--keep-data", action="store_true", help="keep the broker's data dir")


def run(args: argparse.Namespace) -> int:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    data_dir = Path(tempfile.mkdtemp(prefix="highwater-demo-"))
    port = free_port()
    broker = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "broker", "--node-id", "1",
         "--port", str(port), "--data-dir", str(data_dir)],
    )
    bootstrap = f"127.0.0.1:{port}"
    try:
        wait_listening(port, broker, 30.0, "broker")
        print(f"broker 1 listening on {bootstrap}, data in {data_dir}")
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)])[
            TOPIC
        ].result(timeout=30)

        acked: list[tuple[int, int]] = []  # (offset, value)
        failed: list[str] = []

        def on_delivery(err, msg) -> None:  # noqa: ANN001 - confluent-kafka callback
            if err is None:
                acked.append((msg.offset(), int(msg.value())))
            else:
                failed.append(err.name())

        producer = Producer({"bootstrap.servers": bootstrap, "acks": args.acks,
                             "linger.ms": 5})
        started = time.monotonic()
        for value in range(args.messages):
            producer.produce(TOPIC, value=str(value).encode(), partition=0,
                             on_delivery=on_delivery)
            producer.poll(0)
        remaining = producer.flush(60)
        elapsed = time.monotonic() - started
        print(f"produced {args.messages} with acks={args.acks} in {elapsed:.2f}s: "
              f"{len(acked)} acknowledged, {len(failed)} failed, {remaining} unresolved")

        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "highwater-demo",
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        read: list[tuple[int, int]] = []
        deadline = time.monotonic() + 60
        while len(read) < len(acked) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                read.append((msg.offset(), int(msg.value())))
        consumer.close()
        print(f"read back {len(read)} records")

        expected = sorted(acked) if args.acks != "0" else None
        if expected is not None:
            ok = read == expected
        else:
            ok = [v for _, v in read] == list(range(len(read)))
        print("verdict:", "every acknowledged message read back, in order" if ok else
              "MISMATCH between acknowledged and read")
        return 0 if ok else 1
    finally:
        broker.terminate()
        try:
            broker.wait(timeout=15)
        except subprocess.TimeoutExpired:
            broker.kill()
            broker.wait(timeout=5)
        if not args.keep_data:
            shutil.rmtree(data_dir, ignore_errors=True)
