"""`highwater bench startup`: broker start-up time on a data dir of many partitions.

Builds a data dir of --partitions partitions of one topic directly (each with a one-batch
segment, an empty index and a leader-epoch checkpoint, as a broker that led it leaves
behind), then starts `highwater broker` on it twice (the first start has no clean-shutdown
marker, so every segment is recovered; the second follows a clean shutdown) under an fd ulimit
of --fd-limit, and prints the seconds until it listens. Figures, never assertions.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from broker_app.server.topic_store import FILE_NAME
from broker_app.storage.records import build_batch
from harness.localproc import free_port, wait_listening

REPO = Path(__file__).resolve().parents[2]


def make_data_dir(data_dir: Path, topic: str, partitions: int) -> None:
    """The topic store file plus one directory per partition holding what a broker that led
    it at epoch 0 leaves behind: a segment with one batch, an empty index, the leader-epoch
    checkpoint. (Empty partitions would also start, but each start would then rewrite and
    fsync every epoch checkpoint, as Kafka's truncateFromEnd does: minutes on a slow disk.)"""
    batch = build_batch([(None, b"seed")], timestamp=0)
    data_dir.mkdir(parents=True)
    (data_dir / FILE_NAME).write_text(json.dumps({topic: {
        "topic_id": str(uuid.uuid4()), "num_partitions": partitions,
        "replication_factor": 1, "configs": {}}}))  # fmt: skip
    for i in range(partitions):
        d = data_dir / f"{topic}-{i}"
        d.mkdir()
        (d / "00000000000000000000.log").write_bytes(batch)
        (d / "00000000000000000000.index").touch()
        (d / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--fd-limit", type=int, default=256)


def _start_seconds(data_dir: Path, fd_limit: int) -> float:
    port = free_port()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit))

    cmd = [sys.executable, "-m", "broker_app.server.main", "--node-id", "1",
           "--port", str(port), "--data-dir", str(data_dir)]  # fmt: skip
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, preexec_fn=limit)  # fmt: skip
    try:
        wait_listening(port, proc, 600.0, "broker")
        return time.monotonic() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="hw-startup-") as tmp:
        data_dir = Path(tmp) / "data"
        t0 = time.monotonic()
        make_data_dir(data_dir, "many", args.partitions)
        build_s = time.monotonic() - t0
        first = _start_seconds(data_dir, args.fd_limit)
        second = _start_seconds(data_dir, args.fd_limit)
    print(f"partitions={args.partitions} fd_limit={args.fd_limit} build_dir_s={build_s:.1f} "
          f"first_start_s={first:.1f} (recovery) second_start_s={second:.1f} (clean)")  # fmt: skip
    return 0
