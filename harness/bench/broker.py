"""`highwater bench broker`: confluent-kafka producer throughput/latency, real vs null broker.

One run starts, in turn, the real broker (tmp data dir) and the null broker (same network
edge and codec, stores nothing) as subprocesses on free 127.0.0.1 ports, drives each with the
same producer (100-byte values, acks=1 by default) for --seconds, and prints records/s, MB/s
and p50/p99 produce latency (librdkafka's per-message latency: produce() call -> delivery
report) plus the real/null ratio. --profile runs the real broker under cProfile and prints
where its time goes. Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.localproc import free_port, wait_listening

REPO = Path(__file__).resolve().parents[2]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=20.0, help="produce time per broker")
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--acks", default="1")
    parser.add_argument("--linger-ms", type=int, default=5)
    parser.add_argument("--compression", default="none")
    parser.add_argument(
        "--batch-bytes", type=int, default=1_000_000, help="librdkafka batch.size (Java: 16384)"
    )
    parser.add_argument("--profile", action="store_true", help="cProfile the real broker")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")


@dataclass
class Result:
    target: str
    records: int
    errors: int
    seconds: float
    records_per_s: float
    mb_per_s: float
    p50_ms: float
    p99_ms: float
    broker_cpu_s: float = 0.0  # user+system CPU the broker process used while driven
    broker_cpu_us_per_record: float = 0.0


def _cpu_seconds(pid: int) -> float:
    """utime+stime of a process from /proc (Linux); 0.0 where /proc is unavailable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def drive(bootstrap: str, target: str, args: argparse.Namespace) -> Result:
    from confluent_kafka import Producer

    latencies: list[float] = []
    errors = 0

    def on_delivery(err, msg) -> None:  # noqa: ANN001
        nonlocal errors
        if err is None:
            latencies.append(msg.latency())
        else:
            errors += 1

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": args.acks,
            "linger.ms": args.linger_ms,
            "compression.type": args.compression,
            "batch.size": args.batch_bytes,
            "enable.idempotence": False,
        }
    )
    topic = "bench"
    # Warm-up: topic creation/metadata and connection set-up stay out of the measurement.
    p.produce(topic, b"warmup", partition=0)
    p.flush(30)
    latencies.clear()
    value = os.urandom(args.value_bytes)
    start = time.monotonic()
    end = start + args.seconds
    sent = 0
    while True:
        for _ in range(1000):
            try:
                p.produce(topic, value, partition=0, on_delivery=on_delivery)
                sent += 1
            except BufferError:
                p.poll(0.001)
        p.poll(0)
        if time.monotonic() >= end:
            break
    p.flush(60)
    elapsed = time.monotonic() - start
    lat = sorted(latencies)
    n = len(lat)
    return Result(
        target=target,
        records=n,
        errors=errors,
        seconds=round(elapsed, 2),
        records_per_s=round(n / elapsed),
        mb_per_s=round(n * args.value_bytes / elapsed / 1e6, 2),
        p50_ms=round(_percentile(lat, 0.50) * 1000, 2),
        p99_ms=round(_percentile(lat, 0.99) * 1000, 2),
    )


def _run_broker(cmd: list[str], port: int, target: str, args: argparse.Namespace) -> Result:
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_listening(port, proc, 30.0, "broker")
        cpu_before = _cpu_seconds(proc.pid)
        result = drive(f"127.0.0.1:{port}", target, args)
        result.broker_cpu_s = round(_cpu_seconds(proc.pid) - cpu_before, 2)
        result.broker_cpu_us_per_record = round(
            result.broker_cpu_s * 1e6 / max(result.records, 1), 3
        )
        return result
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def run(args: argparse.Namespace) -> int:
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="hw-bench-") as tmp:
        port = free_port()
        prof = Path(tmp) / "broker.prof"
        cmd = [sys.executable]
        if args.profile:
            cmd += ["-m", "cProfile", "-o", str(prof)]
        cmd += ["-m", "broker_app.server.main", "--node-id", "1", "--port", str(port),
                "--data-dir", str(Path(tmp) / "data"), "--log-level", "WARNING"]  # fmt: skip
        results.append(_run_broker(cmd, port, "broker", args))
        port = free_port()
        null_cmd = [sys.executable, "-m", "broker_app.server.null_broker", "--port", str(port)]
        results.append(_run_broker(null_cmd, port, "null-broker", args))
        print(
            f"{'target':<12} {'records':>9} {'rec/s':>9} {'MB/s':>7} {'p50 ms':>8} "
            f"{'p99 ms':>8} {'cpu s':>6} {'cpu us/rec':>10}"
        )
        for r in results:
            print(
                f"{r.target:<12} {r.records:>9} {r.records_per_s:>9} {r.mb_per_s:>7} "
                f"{r.p50_ms:>8} {r.p99_ms:>8} {r.broker_cpu_s:>6} {r.broker_cpu_us_per_record:>10}"
                + (f"  errors={r.errors}" if r.errors else "")
            )
        ratio = results[0].records_per_s / max(results[1].records_per_s, 1)
        print(f"real/null throughput ratio: {ratio:.2f}")
        if args.profile and prof.exists():
            print("\nreal broker profile (top 25 by own time):")
            pstats.Stats(str(prof)).sort_stats("tottime").print_stats(25)
    if args.json:
        args.json.write_text(
            json.dumps({"results": [asdict(r) for r in results], "ratio": ratio}, indent=1)
        )
    return 0
