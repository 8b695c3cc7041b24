"""The protocol fuzzer: mutated requests against a real broker (or controller) process, with a
well-behaved acks=all idempotent producer beside it, and the checks issue 15 asks for.

`run_fuzz(FuzzOptions)` starts the target as a subprocess on a free port with a tmp data dir,
then `connections` asyncio workers each send Mutator inputs. A complete frame is followed by
an ApiVersions v0 "ping" on the same connection; the input counts as answered when the ping's
response arrives (the broker answers in order), as closed on EOF/reset, and as a HANG when
neither happens within `timeout_s` (a hang detector, not a speed check). Connection-level
inputs (half frames then close or reset, stalled connections, lying size prefixes) use their
own connections. At the end: the good producer's acknowledged values are read back with a
consumer and must each appear exactly once; the target is stopped with SIGTERM and every
segment in its data dir must decode with the project's own decoder; RSS growth is the
target's VmRSS at the end minus after warm-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsV0

from broker_app.protocol.apis import SUPPORTED_APIS
from broker_app.protocol.codec import encode_request
from broker_app.storage.records import decode_records, iter_batches, validate_batch
from harness.localproc import free_port, wait_listening

from .mutate import Corpus, FuzzInput, Mutator

REPO = Path(__file__).resolve().parents[2]
PING_BASE = 0x40000000
GOOD_TOPIC = "fuzz-good"


@dataclass
class FuzzOptions:
    inputs: int = 10_000
    seed: int = 1
    connections: int = 4
    timeout_s: float = 5.0
    target: str = "broker"  # or "controller"
    good_rate: float = 100.0  # good producer messages per second (broker target only)
    max_stalled: int = 16
    keep_dir: Path | None = None


@dataclass
class FuzzReport:
    target: str
    inputs: int = 0
    seconds: float = 0.0
    inputs_per_s: float = 0.0
    answered: int = 0
    closed: int = 0
    hangs: int = 0
    deaths: int = 0
    exit_code: int | None = None
    rss_start_mb: float = 0.0
    rss_end_mb: float = 0.0
    rss_growth_mb: float = 0.0
    good_sent: int = 0
    good_acked: int = 0
    good_failed: int = 0
    good_read_back: int = 0
    good_lost: int = 0
    good_duplicated: int = 0
    batches_on_disk: int = 0
    undecodable_batches: int = 0
    log_bytes: int = 0
    warning_lines: int = 0
    traceback_lines: int = 0
    rss_samples_mb: list[float] = field(default_factory=list)  # every 2 s during the run
    by_mutation: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return (self.deaths == 0 and self.hangs == 0 and self.good_lost == 0
                and self.good_duplicated == 0 and self.undecodable_batches == 0
                and self.rss_growth_mb <= 100)  # fmt: skip


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _start_target(opts: FuzzOptions, data_dir: Path, port: int, log_path: Path) -> subprocess.Popen:
    if opts.target == "broker":
        cmd = [sys.executable, "-m", "broker_app.server.main", "--node-id", "1",
               "--port", str(port), "--data-dir", str(data_dir),
               "--fetch-max-wait-cap-ms", "1000", "--connections-max-idle-ms", "20000"]
    else:
        cmd = [sys.executable, "-m", "broker_app.controller.main", "--port", str(port),
               "--data-dir", str(data_dir), "--fetch-max-wait-cap-ms", "1000"]  # fmt: skip
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_listening(port, proc, 60.0, opts.target)
    except RuntimeError:
        raise RuntimeError(f"{opts.target} exited early ({proc.returncode}): "
                           f"{log_path.read_text()[-2000:]}") from None
    except TimeoutError:
        proc.kill()
        raise
    return proc


class _Worker:
    def __init__(self, port: int, mutator: Mutator, report: FuzzReport, opts: FuzzOptions,
                 counts: Counter, stalled: list[asyncio.StreamWriter]) -> None:  # fmt: skip
        self.port = port
        self.mutator = mutator
        self.report = report
        self.opts = opts
        self.counts = counts
        self.stalled = stalled
        self.conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self.ping_id = PING_BASE

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", self.port), self.opts.timeout_s
        )

    def _drop(self) -> None:
        if self.conn is not None:
            self.conn[1].close()
            self.conn = None

    async def run(self, n: int) -> None:
        for _ in range(n):
            x = self.mutator.next()
            self.counts[x.mutation.split(":")[0]] += 1
            self.report.inputs += 1
            try:
                if x.kind == "frame":
                    await self._frame(x)
                else:
                    await self._connection_level(x)
            except (ConnectionError, OSError) as e:
                # Refused/reset while connecting or writing: the broker closed on us.
                self.report.closed += 1
                self._drop()
                if isinstance(e, ConnectionRefusedError):
                    self.report.problems.append(f"connection refused after {x.mutation}")
                    return

    async def _frame(self, x: FuzzInput) -> None:
        if self.conn is None:
            self.conn = await self._open()
        reader, writer = self.conn
        self.ping_id += 1
        ping = encode_request("ping", self.ping_id, ApiVersionsV0())
        writer.write(x.data + ping)
        try:
            await asyncio.wait_for(self._until_ping(reader, writer), self.opts.timeout_s)
        except TimeoutError:
            self.report.hangs += 1
            if len(self.report.problems) < 20:
                self.report.problems.append(f"hang: {x.mutation} {x.data[:64].hex()}")
            self._drop()

    async def _until_ping(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await writer.drain()
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                payload = await reader.readexactly(size)
                if struct.unpack_from(">i", payload)[0] == self.ping_id:
                    self.report.answered += 1
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            self.report.closed += 1
            self._drop()

    async def _connection_level(self, x: FuzzInput) -> None:
        reader, writer = await self._open()
        writer.write(x.data)
        await writer.drain()
        if x.kind == "stall":
            self.stalled.append(writer)
            while len(self.stalled) > self.opts.max_stalled:
                self.stalled.pop(0).close()
            return
        if x.kind == "lying-size":
            # Too large or negative: refused from the prefix. Otherwise the broker waits for
            # the rest, correctly; either way this connection is done.
            with contextlib.suppress(TimeoutError, ConnectionError):
                await asyncio.wait_for(reader.read(1), 0.05)
        if x.kind == "half-reset":
            sock = writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.close()
        self.report.closed += 1


class _GoodClient:
    """An idempotent acks=all confluent-kafka producer sending numbered values at a rate."""

    def __init__(self, bootstrap: str, run_id: str, rate: float) -> None:
        self.bootstrap = bootstrap
        self.run_id = run_id
        self.rate = rate
        self.sent = 0
        self.acked: list[bytes] = []
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="good-producer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _run(self) -> None:
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                      "enable.idempotence": True, "linger.ms": 5,
                      "message.timeout.ms": 30000})  # fmt: skip

        def on_delivery(err: Any, msg: Any) -> None:
            if err is None:
                self.acked.append(msg.value())
            else:
                self.failed += 1

        interval = 1.0 / self.rate
        while not self._stop.is_set():
            p.produce(GOOD_TOPIC, b"%s-%d" % (self.run_id.encode(), self.sent),
                      on_delivery=on_delivery)  # fmt: skip
            self.sent += 1
            p.poll(interval)
        p.flush(30)

    def read_back(self) -> list[bytes]:
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"check-{self.run_id}",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})  # fmt: skip
        try:
            _low, high = c.get_watermark_offsets(TopicPartition(GOOD_TOPIC, 0), timeout=10)
            c.assign([TopicPartition(GOOD_TOPIC, 0, 0)])
            out: list[bytes] = []
            deadline = time.monotonic() + 60
            last = -1
            while last + 1 < high and time.monotonic() < deadline:
                msg = c.poll(1.0)
                if msg is None or msg.error():
                    continue
                out.append(msg.value())
                last = msg.offset()
            return out
        finally:
            c.close()


def scan_data_dir(data_dir: Path) -> tuple[int, list[str]]:
    """(batches decoded, problems): every segment through the project's own decoder."""
    count, problems = 0, []
    for seg in sorted(data_dir.glob("*/*.log")):
        data = seg.read_bytes()
        try:
            for h, view in iter_batches(data, allow_partial_tail=False):
                validate_batch(view, h)
                decode_records(view)
                count += 1
        except Exception as e:  # any failure to decode is what this scan looks for
            problems.append(f"{seg.relative_to(data_dir)}: {type(e).__name__}: {e}")
    return count, problems


async def _sample_rss(pid: int, report: FuzzReport) -> None:
    while True:
        report.rss_samples_mb.append(round(_rss_mb(pid), 1))
        await asyncio.sleep(2.0)


async def _fuzz(port: int, opts: FuzzOptions, report: FuzzReport, apis: dict, pid: int) -> None:
    rng = random.Random(opts.seed)
    corpus = Corpus(apis, rng)
    counts: Counter[str] = Counter()
    stalled: list[asyncio.StreamWriter] = []
    per = [opts.inputs // opts.connections] * opts.connections
    per[0] += opts.inputs - sum(per)
    workers = [
        _Worker(port, Mutator(corpus, random.Random(opts.seed * 1000 + i)), report, opts,
                counts, stalled)  # fmt: skip
        for i in range(opts.connections)
    ]
    for i, w in enumerate(workers):
        w.ping_id = PING_BASE + i * (1 << 24)
    sampler = asyncio.create_task(_sample_rss(pid, report))
    try:
        await asyncio.gather(*(w.run(n) for w, n in zip(workers, per, strict=True)))
    finally:
        sampler.cancel()
        for w in workers:
            w._drop()
        for s in stalled:
            s.close()
        report.by_mutation = dict(counts)


def _tracebacks(log_text: str) -> list[str]:
    """Each logged traceback with the log line before it, so a failing run says what broke."""
    lines = log_text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)"):
            end = i + 1
            while end < len(lines) and (lines[end].startswith(" ") or not lines[end][:4].isdigit()):
                end += 1
            found.append("\n".join(lines[max(i - 1, 0) : min(end + 1, i + 40)]))
    return found


def run_fuzz(opts: FuzzOptions) -> FuzzReport:
    from broker_app.controller.apis import CONTROLLER_APIS

    report = FuzzReport(opts.target)
    apis = SUPPORTED_APIS if opts.target == "broker" else CONTROLLER_APIS
    with tempfile.TemporaryDirectory(prefix="hw-fuzz-") as tmp:
        base = opts.keep_dir or Path(tmp)
        data_dir = base / "data"
        log_path = base / f"{opts.target}.log"
        port = free_port()
        proc = _start_target(opts, data_dir, port, log_path)
        good = None
        try:
            if opts.target == "broker":
                good = _GoodClient(f"127.0.0.1:{port}", f"good{opts.seed}", opts.good_rate)
                good.start()
                time.sleep(1.0)  # warm-up: topic created, producer id assigned
            report.rss_start_mb = _rss_mb(proc.pid)
            t0 = time.monotonic()
            asyncio.run(_fuzz(port, opts, report, apis, proc.pid))
            report.seconds = time.monotonic() - t0
            report.inputs_per_s = report.inputs / max(report.seconds, 1e-9)
            report.rss_end_mb = _rss_mb(proc.pid)
            report.rss_growth_mb = round(report.rss_end_mb - report.rss_start_mb, 1)
            if good is not None:
                good.stop()
                report.good_sent, report.good_failed = good.sent, good.failed
                report.good_acked = len(good.acked)
                if proc.poll() is None:
                    read = Counter(good.read_back())
                    report.good_read_back = sum(read.values())
                    report.good_lost = sum(1 for v in good.acked if read[v] == 0)
                    report.good_duplicated = sum(1 for v in good.acked if read[v] > 1)
        finally:
            if good is not None:
                good.stop()
            if proc.poll() is not None:
                report.deaths = 1
                report.exit_code = proc.returncode
            else:
                proc.send_signal(signal.SIGTERM)
                try:
                    report.exit_code = proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    report.problems.append("target ignored SIGTERM for 30 s")
                    report.exit_code = proc.wait(timeout=10)
        # Every segment, the controller's metadata log included, must decode.
        report.batches_on_disk, bad = scan_data_dir(data_dir)
        report.undecodable_batches = len(bad)
        report.problems.extend(bad[:10])
        text = log_path.read_text(errors="replace")
        report.log_bytes = len(text.encode())
        report.warning_lines = text.count(" WARNING ")
        report.traceback_lines = text.count("Traceback (most recent call last)")
        report.problems.extend(_tracebacks(text)[:3])
        if report.exit_code not in (0, None) and report.deaths == 0:
            report.problems.append(f"exit code {report.exit_code} after SIGTERM")
    return report


def summary(report: FuzzReport) -> str:
    d = asdict(report)
    keys = ("target", "inputs", "seconds", "inputs_per_s", "answered", "closed", "hangs",
            "deaths", "rss_start_mb", "rss_growth_mb", "good_acked", "good_lost",
            "good_duplicated", "batches_on_disk", "undecodable_batches", "log_bytes",
            "warning_lines", "traceback_lines")  # fmt: skip
    return " ".join(f"{k}={round(d[k], 1) if isinstance(d[k], float) else d[k]}" for k in keys)
