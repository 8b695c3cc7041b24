"""`highwater bench broker`: confluent-kafka producer throughput/latency, real vs null broker.

One run starts, in turn, the real broker (tmp data dir) and the null broker (same network
edge and codec, stores nothing) as subprocesses on free 127.0.0.1 ports, drives each with the
same producer (100-byte values, acks=1 by default) for --seconds, and prints records/s, MB/s
and p50/p99 produce latency (librdkafka's per-message latency: produce() call -> delivery
report) plus the real/null ratio. --profile runs the real broker under cProfile and prints
where its time goes. Speed is reported, never asserted.

--validator picks the broker's record walk (HIGHWATER_VALIDATOR): native (the C walk, the
default), python (the reference: the turn-back figure) or both (two real-broker runs). The
validation's own share of the broker's CPU: the broker runs with HIGHWATER_VALIDATION_CPU_FILE,
so log_validator adds up its thread's CPU time inside validate_client_batch and writes it on
exit; that is divided by the broker process's CPU time over the driven window.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import shutil
import signal
import statistics
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
    parser.add_argument("--validator", choices=("native", "python", "both"), default="native",
                        help="the broker's record walk (python: the reference, turn-back)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every target this many times, alternating the order; the "
                        "ratio is the median of the rounds' ratios")
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
    validation_cpu_s: float = 0.0  # the broker's CPU inside validate_client_batch (its probe)
    validation_share: float = 0.0  # validation_cpu_s / broker_cpu_s


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


def validation_cpu(path: Path) -> tuple[float, str]:
    """(CPU seconds, walk) the broker spent in validate_client_batch, as its probe wrote them
    on exit (log_validator._account_cpu); (nan, "?") when the broker wrote nothing."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return float("nan"), "?"
    return float(data["cpu_s"]), str(data["implementation"])


def _run_broker(
    cmd: list[str], port: int, target: str, args: argparse.Namespace,
    env: dict[str, str] | None = None,
) -> Result:  # fmt: skip
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log, env=env)
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


def _run_real(walk: str, tmp: Path, args: argparse.Namespace, profile: Path | None) -> Result:
    """One run of the real broker with the given record walk, its validation CPU filled in."""
    port = free_port()
    data_dir = tmp / f"data-{walk}-{time.monotonic_ns()}"
    cmd = [sys.executable]
    if profile is not None:
        cmd += ["-m", "cProfile", "-o", str(profile)]
    cmd += ["-m", "broker_app.server.main", "--node-id", "1", "--port", str(port),
            "--data-dir", str(data_dir), "--log-level", "WARNING"]  # fmt: skip
    target = "broker" if walk == "native" else "broker-py"
    probe = tmp / f"validation-{walk}.json"
    probe.unlink(missing_ok=True)
    env = {**os.environ, "HIGHWATER_VALIDATOR": walk,
           "HIGHWATER_VALIDATION_CPU_FILE": str(probe)}  # fmt: skip
    result = _run_broker(cmd, port, target, args, env)
    cpu, ran = validation_cpu(probe)
    if ran != walk:
        print(f"warning: {target} ran the {ran} record walk, not {walk} "
              "(native needs broker_app.storage._recordwalk: make venv)")  # fmt: skip
    # The probe counts the whole run (warm-up too); the warm-up is one tiny batch.
    result.validation_cpu_s = round(cpu, 3)
    result.validation_share = round(cpu / max(result.broker_cpu_s, 1e-9), 3)
    shutil.rmtree(data_dir, ignore_errors=True)  # rounds would otherwise pile up GBs in tmp
    return result


def run(args: argparse.Namespace) -> int:
    walks = ("native", "python") if args.validator == "both" else (args.validator,)
    rounds: list[list[Result]] = []
    with tempfile.TemporaryDirectory(prefix="hw-bench-") as tmp:
        prof = Path(tmp) / "broker.prof"
        for n in range(args.rounds):
            # Alternate the order, so a machine that slows down or speeds up during the bench
            # (shared cores) does not always favour the same target.
            order = [*walks, "null"] if n % 2 == 0 else ["null", *walks]
            got: dict[str, Result] = {}
            for what in order:
                if what == "null":
                    port = free_port()
                    null_cmd = [sys.executable, "-m", "broker_app.server.null_broker",
                                "--port", str(port)]  # fmt: skip
                    got[what] = _run_broker(null_cmd, port, "null-broker", args)
                else:
                    profile = prof if args.profile and n == 0 and what == walks[0] else None
                    got[what] = _run_real(what, Path(tmp), args, profile)
            rounds.append([got[w] for w in (*walks, "null")])
        print(
            f"{'target':<12} {'records':>9} {'rec/s':>9} {'MB/s':>7} {'p50 ms':>8} "
            f"{'p99 ms':>8} {'cpu s':>6} {'cpu us/rec':>10} {'valid. cpu':>10}"
        )
        for results in rounds:
            for r in results:
                share = f"{r.validation_share:>9.1%}" if r.target != "null-broker" else f"{'-':>9}"
                print(
                    f"{r.target:<12} {r.records:>9} {r.records_per_s:>9} {r.mb_per_s:>7} "
                    f"{r.p50_ms:>8} {r.p99_ms:>8} {r.broker_cpu_s:>6} "
                    f"{r.broker_cpu_us_per_record:>10} {share}"
                    + (f"  errors={r.errors}" if r.errors else "")
                )
        # Per round: each real broker against the null broker of the same round.
        round_ratios = {
            r.target: [rs[i].records_per_s / max(rs[-1].records_per_s, 1) for rs in rounds]
            for i, r in enumerate(rounds[0][:-1])
        }
        ratios = {t: statistics.median(v) for t, v in round_ratios.items()}
        for target, ratio in ratios.items():
            label = "real" if target == "broker" else f"real ({target})"
            each = ", ".join(f"{v:.2f}" for v in round_ratios[target])
            print(f"{label}/null throughput ratio: {ratio:.2f}"
                  + (f" (median of rounds: {each})" if args.rounds > 1 else ""))  # fmt: skip
        print("valid. cpu: CPU time of the broker's thread inside validate_client_batch, as a "
              "share of the broker process's CPU while driven")  # fmt: skip
        if args.profile and prof.exists():
            print("\nreal broker profile (top 25 by own time):")
            pstats.Stats(str(prof)).sort_stats("tottime").print_stats(25)
    if args.json:
        args.json.write_text(json.dumps({
            "results": [asdict(r) for r in rounds[0]],
            "rounds": [[asdict(r) for r in rs] for rs in rounds],
            "ratio": ratios[rounds[0][0].target], "ratios": ratios,
            "round_ratios": round_ratios}, indent=1))  # fmt: skip
    return 0
