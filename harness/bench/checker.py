"""`highwater bench checker`: checker throughput on synthetic histories of 1e5..1e7 ops.

For each size: write a synthetic history (fast string writer, no per-op json.dumps) with a few
injected lost writes, then check it with `check_runs` (the code path of `highwater check`) in a
fresh process with Spark local[*], and with the plain single-threaded reference implementation
(`harness.checker.reference`) in another fresh process, one after the other. Reports, side
by side, wall time (Spark's including JVM and session start), ops/s, peak RSS of each process
tree (Python driver + JVM), the ratio reference / Spark, whether both found the same anomaly
tables, the checker's phase timings and the slowest Spark stages from Spark's event log.
`--warm` checks the history a second time in the same session (what `scenario run --repeat` and
a nightly summary get from a session kept up) and reports that time apart; the stage figures
then cover both checks.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from harness.checker.sidecar import SIDECAR_FILE


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated op counts")
    parser.add_argument("--partitions", type=int, default=8, help="topic partitions")
    parser.add_argument("--driver-memory", default="3g", help="spark.driver.memory")
    parser.add_argument("--keep", action="store_true", help="keep the generated histories")
    parser.add_argument("--workdir", default=None, help="where to write histories (default tmp)")
    parser.add_argument("--no-reference", action="store_true", help="skip the reference run")
    parser.add_argument(
        "--warm",
        action="store_true",
        help="check again in the same Spark session (as scenario --repeat and nightly do)",
    )
    parser.add_argument("--_one", default=None, help=argparse.SUPPRESS)  # child: check one dir
    parser.add_argument("--_ref", default=None, help=argparse.SUPPRESS)  # child: reference


# ---------------------------------------------------------------- synthetic histories


def generate(path: Path, n_ops: int, partitions: int = 8, seed: int = 1) -> dict[str, int]:
    """Write ~n_ops lines: 8 producers (acks mixed), 4 consumers, nemesis ops, a final drain.

    One in 10,000 acked sends is dropped from the log the consumers see (a lost write).
    """
    rng = random.Random(seed)
    producers, consumers, per_poll, per_final = 8, 4, 10, 500
    logs: list[list[int]] = [[] for _ in range(partitions)]  # values by offset, as consumers see
    read_pos = [[0] * partitions for _ in range(consumers)]
    lines: list[str] = []
    out = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    index = value = lost = 0
    acks_cycle = ("all", "1", "0", "all")
    inject = (
        '{"index":%d,"time":%d,"process":"nemesis","type":"info","f":"kill",'
        '"value":{"node":%d},"phase":"%s"}'
    )
    send_inv = (
        '{"index":%d,"time":%d,"process":%d,"type":"invoke","f":"send","topic":"t",'
        '"partition":%d,"value":%d,"acks":"%s"}'
    )
    send_ok = (
        '{"index":%d,"time":%d,"process":%d,"type":"ok","f":"send","topic":"t",'
        '"partition":%d,"value":%d,"acks":"%s"%s}'
    )
    poll_inv = '{"index":%d,"time":%d,"process":%d,"type":"invoke","f":"poll","final":%s}'
    poll_ok = '{"index":%d,"time":%d,"process":%d,"type":"ok","f":"poll","final":%s,"records":[%s]}'
    rec = '{"topic":"t","partition":%d,"offset":%d,"value":%d}'
    final_lines = 2 * (n_ops // 2 // per_final + partitions + 1)
    offsets = [0] * partitions  # broker-side offsets (lost writes take an offset too)
    while index < n_ops - final_lines:
        r = rng.random()
        if r < 0.8:
            proc = value % producers
            p = value % partitions
            acks = acks_cycle[value % 4]
            lines.append(send_inv % (index, index * 1000, proc, p, value, acks))
            off = offsets[p]
            offsets[p] += 1
            extra = "" if acks == "0" else f',"offset":{off}'
            lines.append(send_ok % (index + 1, index * 1000 + 500, proc, p, value, acks, extra))
            if acks != "0" and rng.random() < 1e-4:
                # Truncated away; the next write reuses the offset (as after a leader change).
                lost += 1
                offsets[p] -= 1
            else:
                logs[p].append(value)
            value += 1
            index += 2
        elif r < 0.999:
            c = rng.randrange(consumers)
            p = rng.randrange(partitions)
            start = read_pos[c][p]
            vals = logs[p][start : start + per_poll]
            read_pos[c][p] = start + len(vals)
            recs = ",".join(rec % (p, start + i, v) for i, v in enumerate(vals))
            lines.append(poll_inv % (index, index * 1000, producers + c, "false"))
            lines.append(poll_ok % (index + 1, index * 1000 + 500, producers + c, "false", recs))
            index += 2
        else:
            node = rng.randrange(3)
            lines.append(inject % (index, index * 1000, node, "start"))
            lines.append(inject % (index + 1, index * 1000 + 1, node, "stop"))
            index += 2
        if len(lines) >= 100_000:
            out.write("\n".join(lines) + "\n")
            lines.clear()
    proc = producers + consumers  # a fresh drain consumer
    for p in range(partitions):
        log = logs[p]
        for start in range(0, max(len(log), 1), per_final):
            vals = log[start : start + per_final]
            recs = ",".join(rec % (p, start + i, v) for i, v in enumerate(vals))
            lines.append(poll_inv % (index, index * 1000, proc, "true"))
            lines.append(poll_ok % (index + 1, index * 1000 + 500, proc, "true", recs))
            index += 2
    out.write("\n".join(lines) + "\n")
    out.close()
    return {"ops": index, "sends": value, "lost": lost}


# ---------------------------------------------------------------- measuring


def _tree_rss_kib(root: int) -> int:
    """Sum of VmRSS over root and all its descendants (Python driver + JVM)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/status", encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def _stages(event_dir: Path, top: int = 8) -> list[dict]:
    """The stages with the most task time, from Spark's event log, with their operators."""
    out = []
    for f in sorted(p for p in event_dir.rglob("*") if p.is_file()):
        for line in f.read_text(encoding="utf-8").splitlines():
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                continue
            if ev.get("Event") != "SparkListenerStageCompleted":
                continue
            info = ev["Stage Info"]
            acc = {a.get("Name"): a.get("Value") for a in info.get("Accumulables", [])}
            scopes = []
            for rdd in info.get("RDD Info", []):
                try:
                    name = json.loads(rdd.get("Scope", "{}")).get("name", "")
                except json.JSONDecodeError:
                    name = ""
                # "WholeStageCodegen (3)" hides its operators; keep the operator scopes.
                if name and not name.startswith("WholeStageCodegen") and name not in scopes:
                    scopes.append(name)
            wall = (info.get("Completion Time", 0) - info.get("Submission Time", 0)) / 1000
            out.append(
                {
                    "stage": info["Stage ID"],
                    "ops": ", ".join(scopes) or info["Stage Name"],
                    "tasks": info["Number of Tasks"],
                    "task_seconds": int(acc.get("internal.metrics.executorRunTime", 0)) / 1000,
                    "cpu_seconds": int(acc.get("internal.metrics.executorCpuTime", 0)) / 1e9,
                    "seconds": wall,
                }
            )
    return sorted(out, key=lambda s: -s["task_seconds"])[:top]


def _sample(pid: int, peak: list[int], stop: threading.Event) -> None:
    while not stop.wait(0.25):
        peak[0] = max(peak[0], _tree_rss_kib(pid))


def _check_one(run_dir: str, driver_memory: str, warm: bool = False) -> int:
    """Child process: check one run dir like `highwater check`, print timings as JSON."""
    from pyspark.sql import SparkSession

    from harness.checker.check import check_runs

    event_dir = Path(run_dir) / "spark-events"
    event_dir.mkdir(exist_ok=True)
    # check_runs starts the session itself, as `highwater check` does (overlapping the start
    # with building the Parquet sidecar); the event log for the stage figures comes by conf.
    conf = {
        "spark.driver.memory": driver_memory,
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": f"file:{event_dir}",
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
    }
    os.environ["PYSPARK_SUBMIT_ARGS"] = (
        " ".join(f"--conf {k}={v}" for k, v in conf.items()) + " pyspark-shell"
    )
    os.environ["HIGHWATER_SPARK_DRIVER_MEMORY"] = driver_memory
    timings: dict[str, float] = {}
    warm_s = None
    try:
        (result,) = check_runs([run_dir], timings=timings)
        spark = SparkSession.getActiveSession()
        startup = timings.get("spark start", 0.0)
        if warm and result.results is not None:
            t1 = time.perf_counter()
            (again,) = check_runs([run_dir], spark=spark)
            warm_s = time.perf_counter() - t1
            if again.results != result.results:
                print(json.dumps({"error": "the warm re-check gave other results"}))
                return 2
    finally:
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
    if result.results is None:
        print(json.dumps({"error": result.error}))
        return 2
    stages_all = _stages(event_dir, top=10_000)
    res = result.results
    summary = {"startup": startup, "timings": timings, "stages": stages_all[:8], "warm": warm_s}
    summary["stages_all"] = [{"cpu_seconds": s["cpu_seconds"]} for s in stages_all]
    summary["anomalies"] = {k: v["count"] for k, v in res["anomalies"].items() if v["count"]}
    summary["tables"] = {"anomalies": res["anomalies"], "stats": res["stats"]}
    print(json.dumps(summary))
    return 0


def _reference_one(run_dir: str) -> int:
    """Child process: the plain single-threaded reference on one history, result as JSON."""
    from harness.checker.reference import reference_check

    t0 = time.perf_counter()
    tables = reference_check(Path(run_dir) / "history.jsonl")
    print(json.dumps({"seconds": time.perf_counter() - t0, "tables": tables}))
    return 0


def _measure(cmd: list[str]) -> tuple[dict | None, float, int, str]:
    """Run a child, sampling its tree's RSS: (last JSON line, wall s, peak KiB, stdout)."""
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    peak, stop = [0], threading.Event()
    sampler = threading.Thread(target=_sample, args=(child.pid, peak, stop), daemon=True)
    sampler.start()
    t1 = time.perf_counter()
    try:
        stdout, _ = child.communicate(timeout=3 * 3600)
    except subprocess.TimeoutExpired:
        child.kill()
        stdout, _ = child.communicate(timeout=60)
    wall = time.perf_counter() - t1
    stop.set()
    sampler.join(timeout=5)
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    info = json.loads(lines[-1]) if child.returncode == 0 and lines else None
    return info, wall, peak[0], stdout


def run(args: argparse.Namespace) -> int:
    if args._one:
        return _check_one(args._one, args.driver_memory, args.warm)
    if args._ref:
        return _reference_one(args._ref)
    sizes = [int(float(s)) for s in args.sizes.split(",") if s.strip()]
    base = Path(args.workdir or tempfile.mkdtemp(prefix="hw-bench-checker-"))
    base.mkdir(parents=True, exist_ok=True)
    for n in sizes:
        run_dir = base / f"ops-{n}"
        run_dir.mkdir(exist_ok=True)
        t0 = time.perf_counter()
        gen = generate(run_dir / "history.jsonl", n, args.partitions)
        # The same seed writes the same bytes, whose sidecar would still match: measure cold.
        (run_dir / SIDECAR_FILE).unlink(missing_ok=True)
        gen_s = time.perf_counter() - t0
        size_mb = (run_dir / "history.jsonl").stat().st_size / 1e6
        print(f"size {n:>11,}: generated {gen['ops']:,} ops ({size_mb:.0f} MB) in {gen_s:.1f}s")
        me = [sys.executable, "-m", "harness.bench.checker"]
        # Each check in its own child: peak memory is that of one check, JVM included.
        info, wall, peak, stdout = _measure(
            [*me, "--_one", str(run_dir), "--driver-memory", args.driver_memory]
            + (["--warm"] if args.warm else [])
        )
        if info is None or "error" in info:
            print(f"  check failed: {stdout.strip()[-500:]}")
            return 2
        t = info["timings"]
        if info.get("warm") is not None:
            # The warm re-check is inside the child's wall time: take it out of the cold figure.
            wall -= info["warm"]
        print(
            f"  spark     {wall:6.1f}s wall ({info['startup']:.1f}s Spark start, during which "
            f"{t.get('sidecar', 0):.1f}s Parquet sidecar; {t['total']:.1f}s check): "
            f"{gen['ops'] / wall:,.0f} ops/s; peak RSS {peak / 1024:,.0f} MiB "
            f"(driver+JVM); lost writes injected {gen['lost']}, found {info['anomalies']}"
        )
        if not args.no_reference:
            ref, ref_wall, ref_peak, out = _measure([*me, "--_ref", str(run_dir)])
            if ref is None:
                print(f"  reference failed: {out.strip()[-500:]}")
                return 2
            same = ref["tables"] == info["tables"]
            print(
                f"  reference {ref_wall:6.1f}s wall (single-threaded Python): "
                f"{gen['ops'] / ref_wall:,.0f} ops/s; peak RSS {ref_peak / 1024:,.0f} MiB; "
                f"ratio reference/spark {ref_wall / wall:.2f}x; "
                f"same anomaly tables: {'yes' if same else 'NO'}"
            )
        if info.get("warm") is not None:
            print(
                f"  spark warm re-check in the same session: {info['warm']:.1f}s "
                f"({gen['ops'] / info['warm']:,.0f} ops/s)"
            )
        cpu = sum(s["cpu_seconds"] for s in info["stages_all"])
        phases = ", ".join(
            f"{k} {v:.1f}s" for k, v in t.items() if k not in ("total", "spark start")
        )
        phases += f"; {len(info['stages_all'])} stages, {cpu:.1f}s executor cpu in all"
        print(f"  phases: {phases}")
        print("  stages with the most task time (stages overlap, so wall times do not add up):")
        for s in info["stages"]:
            print(
                f"    stage {s['stage']:>3} task time {s['task_seconds']:6.1f}s "
                f"(cpu {s['cpu_seconds']:5.1f}s) "
                f"(wall {s['seconds']:5.1f}s, {s['tasks']:>3} tasks): {s['ops'][:90]}"
            )
    if not args.keep and args.workdir is None:
        import shutil

        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(prog="highwater bench checker")
    add_arguments(_parser)
    sys.exit(run(_parser.parse_args()))
