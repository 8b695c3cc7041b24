"""A broker with a 256-fd ulimit starts (and starts again) on a data dir of 2,000 partitions,
and serves the last one: segment and index files go through the bounded fd cache
(storage/file_cache.py) instead of each holding two fds for the process's lifetime.
Start-up time is measured by `highwater bench startup`, never asserted here."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

from procutil import REPO, free_port, read_log, stop_process, wait_listening

from broker_app.protocol.codec import request_class
from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors
from broker_app.storage.records import build_batch, decode_records, iter_batches
from harness.bench.startup import make_data_dir

from .rawclient import RawClient

# Far more than the fd limit (each partition has a segment and an index); 10,000 partitions,
# with the time to start on them, is `highwater bench startup`'s figure.
PARTITIONS = 2_000
FD_LIMIT = 256


def _limit_fds() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


def _start(data_dir: Path, port: int, log_path: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "broker_app.server.main", "--node-id", "1",
           "--port", str(port), "--data-dir", str(data_dir)]  # fmt: skip
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log,
                                preexec_fn=_limit_fds)  # fmt: skip
    try:
        wait_listening(proc, [port], "broker", lambda: read_log(log_path))
    except BaseException:
        stop_process(proc)  # never leave a broker behind when start-up fails
        raise
    return proc


def _produce_and_fetch(port: int, partition: int, value: bytes) -> list[bytes]:
    produce = build(request_class(0, 9), {
        "transactional_id": None, "acks": -1, "timeout": 5000,
        "topic_data": [{"name": "many", "partition_data": [
            {"index": partition, "records": build_batch([(None, value)])}]}]})  # fmt: skip
    fetch = build(request_class(1, 12), {
        "replica_id": -1, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": "many", "partitions": [{
            "partition": partition, "current_leader_epoch": -1, "fetch_offset": 0,
            "last_fetched_epoch": -1, "log_start_offset": -1,
            "partition_max_bytes": 1 << 20}]}],
        "forgotten_topics_data": [], "rack_id": ""})  # fmt: skip
    # After an unclean stop the lone broker's controller takes it out of every ISR and elects
    # it again once unfenced (KIP-966): until the broker has applied that election it answers
    # NOT_LEADER_OR_FOLLOWER, and a client asks again, as this one does (bounded).
    deadline = time.monotonic() + 120
    with RawClient(port, timeout=120) as c:
        while True:
            p = c.request(produce).responses[0].partition_responses[0]
            if int(p.error_code) != Errors.NOT_LEADER_OR_FOLLOWER or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert int(p.error_code) == Errors.NONE, p
        part = c.request(fetch, correlation_id=2).responses[0].partitions[0]
    assert int(part.error_code) == Errors.NONE
    return [r.value for _, view in iter_batches(part.records, allow_partial_tail=True)
            for r in decode_records(view) if r.value != b"seed"]  # fmt: skip


def test_broker_starts_twice_on_2000_partitions_under_a_256_fd_limit(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    make_data_dir(data_dir, "many", PARTITIONS)
    log_path = tmp_path / "broker.log"
    port = free_port()
    proc = _start(data_dir, port, log_path)  # first start: no clean-shutdown marker
    try:
        assert _produce_and_fetch(port, PARTITIONS - 1, b"first") == [b"first"]
        assert _produce_and_fetch(port, 0, b"zero") == [b"zero"]
    finally:
        stop_process(proc)
    proc = _start(data_dir, port, log_path)  # and again, after a clean shutdown
    try:
        assert _produce_and_fetch(port, PARTITIONS - 1, b"second") == [b"first", b"second"]
    finally:
        stop_process(proc)
    log = read_log(log_path)
    assert "Too many open files" not in log and "out of system resource" not in log
