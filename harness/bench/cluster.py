"""`highwater bench cluster`: replication overhead, 3 local brokers + controller, RF=3.

In one run: a lone broker (combined mode: its own controller in its process) is driven with
acks=1 as the baseline, then a
controller and three brokers are started on free 127.0.0.1 ports, topic `bench` is created with
RF=3 through a broker (AdminClient), and the same confluent-kafka producer (harness/bench/
broker.py's `drive`) runs with acks=all and with acks=1 against its leader. Prints records/s,
MB/s, p50/p99 latency and each figure's ratio to the single-node one. Speed is reported, never
asserted. Every process is stopped in `finally`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from harness.bench.broker import REPO, Result, drive
from harness.localproc import LocalCluster, free_port, stop_processes, wait_listening


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=10.0, help="produce time per case")
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--linger-ms", type=int, default=5)
    parser.add_argument("--compression", default="none")
    parser.add_argument("--batch-bytes", type=int, default=1_000_000)
    parser.add_argument("--json", type=Path, default=None, help="also write results here")


def _start(cmd: list[str], port: int, procs: list[subprocess.Popen], log: Path) -> None:
    with open(log, "ab") as f:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=f)
    procs.append(proc)
    wait_listening(port, proc, 30.0, "broker")


def _case(args: argparse.Namespace, acks: str) -> argparse.Namespace:
    return argparse.Namespace(**{**vars(args), "acks": acks})


def _wait_leader_and_isr(bootstrap: str, timeout: float = 60) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("bench", 1, 3)], request_timeout=15)["bench"].result(30)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p = admin.list_topics("bench", timeout=10).topics["bench"].partitions.get(0)
        if p is not None and p.leader >= 0 and len(p.isrs) == 3:
            return
        time.sleep(0.2)
    raise TimeoutError("topic bench has no leader with a full ISR")


def run(args: argparse.Namespace) -> int:
    py = sys.executable
    results: list[Result] = []
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(prefix="hw-bench-cluster-") as tmp:
        base = Path(tmp)
        try:
            port = free_port()
            _start([py, "-m", "broker_app.server.main", "--node-id", "1", "--port", str(port),
                    "--data-dir", str(base / "single"), "--log-level", "WARNING"],
                   port, procs, base / "single.log")  # fmt: skip
            results.append(drive(f"127.0.0.1:{port}", "single acks=1", _case(args, "1")))
            stop_processes(procs)
            procs.clear()
            with LocalCluster(base / "rf3", 3, broker_args=["--log-level", "WARNING",
                                                            "--no-auto-create-topics"],
                              controller_args=["--log-level", "WARNING"]) as cluster:
                bootstrap = cluster.bootstrap
                _wait_leader_and_isr(bootstrap)
                for acks in ("all", "1"):
                    results.append(drive(bootstrap, f"rf3 acks={acks}", _case(args, acks)))
        finally:
            stop_processes(procs)
    single = results[0]
    print(f"{'case':<14} {'records':>9} {'rec/s':>9} {'MB/s':>7} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'x single':>8}")  # fmt: skip
    for r in results:
        ratio = r.records_per_s / max(single.records_per_s, 1)
        print(f"{r.target:<14} {r.records:>9} {r.records_per_s:>9} {r.mb_per_s:>7} "
              f"{r.p50_ms:>8} {r.p99_ms:>8} {ratio:>8.2f}"
              + (f"  errors={r.errors}" if r.errors else ""))  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 0
