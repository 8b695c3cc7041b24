"""`highwater bench startup`: broker start-up time on a data dir of many partitions.

Builds a data dir of --partitions partitions of one topic (created through a broker, then each
given a one-batch segment, an empty index and a leader-epoch checkpoint, as a broker that led
it leaves behind), then starts `highwater broker` on it twice (the first start has no
clean-shutdown marker, so every segment is recovered and its controller handles an unclean
shutdown, KIP-966; the second follows a clean shutdown) under an fd ulimit of --fd-limit, and
prints the seconds until it listens and until it answers a client. Figures, never assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from broker_app.protocol.apis import ApiKey
from broker_app.protocol.codec import request_class
from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors
from broker_app.server.network_client import KafkaClient
from broker_app.storage.log_manager import CLEAN_SHUTDOWN_FILE
from broker_app.storage.records import build_batch
from harness.localproc import free_port, stop_processes, wait_listening

REPO = Path(__file__).resolve().parents[2]


def make_data_dir(data_dir: Path, topic: str, partitions: int) -> None:
    """A data dir of `partitions` partitions of `topic`, each holding what a broker that led
    it at epoch 0 leaves behind: a segment with one batch, an empty index, the leader-epoch
    checkpoint; and no clean-shutdown marker, so the next start recovers every segment.

    The topic is made the way a user makes one: `highwater broker` starts once on the empty
    dir (combined mode: its own controller keeps the topic in `<data-dir>/controller/`), a
    CreateTopics creates it, and the broker stops cleanly; then each segment gets its batch.
    (Empty partitions would also start, but each start would then rewrite and fsync every
    epoch checkpoint, as Kafka's truncateFromEnd does: minutes on a slow disk.)"""
    data_dir.mkdir(parents=True)
    port = free_port()
    cmd = [sys.executable, "-m", "broker_app.server.main", "--node-id", "1",
           "--port", str(port), "--data-dir", str(data_dir)]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, proc, 60.0, "broker")
        _create_topic(port, topic, partitions)
    finally:
        stop_processes([proc])
    batch = build_batch([(None, b"seed")], timestamp=0)
    for i in range(partitions):
        d = data_dir / f"{topic}-{i}"
        if not d.is_dir():
            raise RuntimeError(f"the broker stopped before it hosted {d.name}")
        (d / "00000000000000000000.log").write_bytes(batch)
        (d / "00000000000000000000.index").write_bytes(b"")
        (d / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    (data_dir / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)


def _request(port: int, body: object) -> object:
    """One request to the broker on 127.0.0.1:`port` with the broker's own client (bounded)."""
    return asyncio.run(KafkaClient("127.0.0.1", port, "bench-startup", 600_000).send(body))


def _create_topic(port: int, topic: str, partitions: int) -> None:
    """CreateTopics through the broker; it answers once its image has the topic, and it hosts
    every partition when it applies the controller's records (checked by the caller)."""
    resp: Any = _request(port, build(request_class(ApiKey.CREATE_TOPICS, 7), {
        "topics": [{"name": topic, "num_partitions": partitions, "replication_factor": 1,
                    "assignments": [], "configs": []}],
        "timeout": 600_000, "validate_only": False}))  # fmt: skip
    [t] = resp.topics
    if t.error_code.value != Errors.NONE:
        raise RuntimeError(f"CreateTopics {topic!r}: {t.error_code.name}: {t.error_message}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--fd-limit", type=int, default=256)


def _start_seconds(data_dir: Path, fd_limit: int) -> tuple[float, float]:
    """(seconds until it listens, seconds until it answers an ApiVersions): a broker answers
    clients once its controller unfenced it, after it applied the metadata."""
    port = free_port()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit))

    cmd = [sys.executable, "-m", "broker_app.server.main", "--node-id", "1",
           "--port", str(port), "--data-dir", str(data_dir), "--log-level", "WARNING"]  # fmt: skip
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, preexec_fn=limit)  # fmt: skip
    try:
        wait_listening(port, proc, 600.0, "broker")
        listening = time.monotonic() - t0
        _request(port, build(request_class(ApiKey.API_VERSIONS, 3), {
            "client_software_name": "bench-startup", "client_software_version": "1"}))
        return listening, time.monotonic() - t0
    finally:
        stop_processes([proc])


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="hw-startup-") as tmp:
        data_dir = Path(tmp) / "data"
        t0 = time.monotonic()
        make_data_dir(data_dir, "many", args.partitions)
        build_s = time.monotonic() - t0
        first = _start_seconds(data_dir, args.fd_limit)
        second = _start_seconds(data_dir, args.fd_limit)
    print(f"partitions={args.partitions} fd_limit={args.fd_limit} build_dir_s={build_s:.1f} "
          f"first_start: listening_s={first[0]:.1f} serving_s={first[1]:.1f} (recovery, "
          f"unclean) second_start: listening_s={second[0]:.1f} serving_s={second[1]:.1f} "
          "(clean)")  # fmt: skip
    return 0
