"""Check run directories: history.jsonl in, results.json (HISTORY.md) out, one Spark job for all.

Contract: `check_runs(run_dirs, spark_master, expected)` returns one `RunResult` per run dir, in
order, and writes `results.json` into every run dir whose history could be checked. A run whose
history is missing or malformed, or whose expectations do not parse, gets `error` (a message
naming file:line and field where known) and no results.json. `expected` given here applies to
every run; `expectations` (already-built Expectation objects: what `highwater run` passes from
its in-memory Plan, so the plan is not written out and parsed back) likewise; otherwise a run's
`plan.yaml` `expected` key is used (see `plan_expected`: `highwater check` on a stored run).
The run checks beside the history (`metadata-divergence`, `controller-commit-while-cut`,
`unconverged-replicas`, `diverged-offsets`, `unexpected-exits`) come from
harness.checker.results.gather_run_checks (what `highwater run` stored in run.json, or computed
from the run dir's quorum.jsonl and collected data dirs), each under its own name (HISTORY.md),
and are judged in the run's verdict (`RunResult.verdict`, expectations.run_verdict), not in
results.json's `verdict`, which stays the history's; re-checking a stored run keeps them. The
simulator builds its results.json the same way with the reference checker
(results.check_run).
A history is read from its Parquet sidecar (harness.checker.sidecar: built beside it on the
first check, while the Spark session starts, and used only while it matches the jsonl's size
and SHA-256) or, when it has none (a line pyarrow cannot read with the schema), as JSON; both
give the same table, so the same results.json. All histories are read as one DataFrame and
checked together, in one Spark session (the caller's active one when there is one, else the
process's `process_session`, kept for later checks): each line is parsed once into a flat
table of ops and poll records, shuffled once by topic-partition and cached
(`anomalies.by_partition`); every check reads that table (see `_check`).
"""

from __future__ import annotations

import atexit
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from harness.checker.expectations import (
    Expectation,
    ExpectationError,
    parse_expected,
    run_verdict,
)
from harness.checker.history import (
    ACKS,
    ANOMALIES,
    history_schema,
    validate_history,
)
from harness.checker.results import gather_run_checks, history_results, with_run_checks
from harness.store.history import HISTORY_FILE
from harness.store.results import write_results

PLAN_FILE = "plan.yaml"
_LOG4J = Path(__file__).with_name("log4j2.properties")
# The driver JVM's JIT and collector for a check of small histories (in local[*] the driver runs
# the executor too): a short batch job whose Spark plan is large, so C2's compilations and G1's
# concurrent work cost more than they return. Measured cold on 2 cores (issue 16's note):
# 10^5 ops 22.7 -> 14.4 s, 10^6 ops 34.3 -> 27.5 s; but 10^7 ops (2 GB) 96 -> 160 s, where the
# hot loops need C2: above SMALL_INPUT_BYTES of history the JVM keeps its own defaults.
SMALL_JOB_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"
SMALL_INPUT_BYTES = 1 << 30


@dataclass
class RunResult:
    run_dir: Path
    results: dict[str, Any] | None = None
    error: str | None = None

    @property
    def verdict(self) -> str:
        """The run's verdict (history and metadata check: expectations.run_verdict)."""
        return "error" if self.results is None else run_verdict(self.results).verdict


@dataclass
class _Run:
    run_dir: Path
    history: Path
    expectations: list[Expectation] = field(default_factory=list)
    sidecar: Path | None = None  # history.parquet matching history (sidecar.sidecar_for)


def plan_expected(run_dir: Path) -> Any:
    """The `expected` mapping of the run dir's plan.yaml, or None without a plan or the key."""
    import yaml

    path = Path(run_dir) / PLAN_FILE
    if not path.is_file():
        return None
    try:
        plan = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ExpectationError(f"{path}: cannot read the plan: {e}") from e
    if plan is None:
        return None
    if not isinstance(plan, Mapping):
        raise ExpectationError(f"{path}: the plan must be a mapping, got {type(plan).__name__}")
    return plan.get("expected")


def spark_session(
    master: str = "local[*]",
    driver_memory: str | None = None,
    extra_conf: Mapping[str, str] | None = None,
    input_bytes: int | None = None,
):
    """A quiet Spark session tuned for small machines; reuses an active session if there is one.
    `input_bytes`, the size of the histories it is started for, picks the JIT (`java_options`)."""
    from pyspark.sql import SparkSession

    local = master.startswith("local")
    if local:
        # Keep the driver on loopback (and silence Spark's "resolves to a loopback" warning).
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(master)
        .appName("highwater-check")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        # Adaptive execution runs each query stage as a job of its own (26 jobs, 38 stages for
        # one check of a 10^3-op history; 7 jobs, 16 stages without), and its re-planning has
        # nothing to gain here: the partitions are set by `_tune`, the one shuffle is cached.
        .config("spark.sql.adaptive.enabled", "false")
        .config(
            "spark.driver.memory",
            driver_memory or os.environ.get("HIGHWATER_SPARK_DRIVER_MEMORY", "3g"),
        )
        .config(
            "spark.driver.extraJavaOptions",
            f"-Dlog4j2.configurationFile=file:{_LOG4J} "
            + java_options(input_bytes),
        )
    )
    if local:
        builder = (
            builder.config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
        )
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def java_options(input_bytes: int | None) -> str:
    """The driver JVM's options: $HIGHWATER_SPARK_JAVA_OPTIONS when set, else the small-job
    options unless the histories to check are known to be large."""
    if "HIGHWATER_SPARK_JAVA_OPTIONS" in os.environ:
        return os.environ["HIGHWATER_SPARK_JAVA_OPTIONS"]
    small = input_bytes is None or input_bytes < SMALL_INPUT_BYTES
    return SMALL_JOB_JAVA_OPTIONS if small else ""


def _run_key(file_uri: str) -> str:
    """Spark's `_metadata.file_path` (a URI) -> the real path of the run dir."""
    path = unquote(urlparse(file_uri).path) if file_uri.startswith("file:") else file_uri
    return str(Path(path).parent)


def _prepare_runs(
    run_dirs: Iterable[str | Path], expected: Any,
    expectations: Sequence[Expectation] | None = None,
) -> tuple[list[_Run], dict[Path, RunResult]]:
    runs, failed = [], {}
    for d in run_dirs:
        run_dir = Path(d)
        history = run_dir / HISTORY_FILE
        if not run_dir.is_dir():
            failed[run_dir] = RunResult(run_dir, error=f"{run_dir}: not a directory")
            continue
        if not history.is_file() or not os.access(history, os.R_OK):
            failed[run_dir] = RunResult(run_dir, error=f"{history}: missing or unreadable")
            continue
        try:
            if expectations is not None:
                exps = list(expectations)
            elif expected is not None:
                exps = parse_expected(expected, "--expected")
            else:
                exps = parse_expected(plan_expected(run_dir), f"{run_dir / PLAN_FILE}: expected")
        except ExpectationError as e:
            failed[run_dir] = RunResult(run_dir, error=str(e))
            continue
        runs.append(_Run(run_dir, history.resolve(), exps))
    return runs, failed


def check_runs(
    run_dirs: Iterable[str | Path],
    spark_master: str = "local[*]",
    expected: Any = None,
    spark=None,
    timings: dict[str, float] | None = None,
    expectations: Sequence[Expectation] | None = None,
    sidecars: bool = True,
) -> list[RunResult]:
    """Check every run dir; see the module docstring. `timings` receives seconds per phase;
    `sidecars=False` reads every history.jsonl as JSON (no Parquet sidecar built or read)."""
    run_dirs = [Path(d) for d in run_dirs]
    runs, failed = _prepare_runs(run_dirs, expected, expectations)
    checked: dict[Path, RunResult] = {}
    timings = timings if timings is not None else {}
    if runs:
        if spark is None:
            from pyspark.sql import SparkSession

            spark = SparkSession.getActiveSession()
        if spark is None:
            # Start the JVM while the sidecars are built: both take seconds, and the sidecar
            # build runs in C++ threads that leave the GIL (and the cores) to the start-up.
            t0 = time.perf_counter()
            with ThreadPoolExecutor(1) as pool:
                size = sum(r.history.stat().st_size for r in runs)
                starting = pool.submit(process_session, spark_master, size)
                if sidecars:
                    _sidecars(runs, timings)
                spark = starting.result()
            timings["spark start"] = time.perf_counter() - t0  # overlapped with the sidecars
        elif sidecars:
            _sidecars(runs, timings)
        found = _check(spark, runs, timings)
        for run, result in zip(runs, found, strict=True):
            checked[run.run_dir] = result
    return [failed.get(d) or checked[d] for d in run_dirs]


def _sidecars(runs: list[_Run], timings: dict[str, float]) -> None:
    """Each run's Parquet sidecar (harness.checker.sidecar), built or rebuilt when it does not
    match its history; a history that has none is read as JSON."""
    from harness.checker.sidecar import sidecar_for

    t0 = time.perf_counter()
    for run in runs:
        run.sidecar = sidecar_for(run.history)
    timings["sidecar"] = time.perf_counter() - t0


def process_session(master: str = "local[*]", input_bytes: int | None = None):
    """A Spark session that stays up until the process exits (stopped then by atexit).

    Starting a session costs seconds (JVM, SparkContext); a process that checks several times
    (`scenario run --repeat`, the min-isr matrix: one Runner per run, each checking its run)
    pays it once, since `check_runs` takes the active session when there is one."""
    spark = spark_session(master, input_bytes=input_bytes)
    atexit.register(spark.stop)
    return spark


def _check(spark, runs: list[_Run], timings: dict[str, float]) -> list[RunResult]:
    """Parse every history once into the flat table, shuffled by topic-partition and cached, then
    three jobs on it: per-run stats and row validation, ordering validation (these two side by
    side), anomalies (after both, of the runs they found well-formed)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    from harness.checker import anomalies as A

    t0 = time.perf_counter()
    by_key = {str(r.history.parent): r for r in runs}
    # A dir given twice is read once; a run with a sidecar is read from it, the rest as JSON.
    columnar = sorted({str(r.sidecar) for r in runs if r.sidecar is not None})
    jsonl = sorted({str(r.history) for r in runs if r.sidecar is None})
    _tune(spark, columnar + jsonl)
    schema = history_schema()
    tables = []
    if columnar:  # the sidecar has every column but _corrupt_record (its lines all parsed)
        tables.append(
            spark.read.schema(StructType(schema.fields[:-1])).parquet(*columnar)
            .withColumn("_corrupt_record", F.lit(None).cast("string"))
            .withColumn("file", F.col("_metadata.file_path"))
        )  # fmt: skip
    if jsonl:
        tables.append(
            spark.read.schema(schema)
            .option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", "_corrupt_record")
            .json(jsonl)
            .withColumn("file", F.col("_metadata.file_path"))
        )
    raw = tables[0] if len(tables) == 1 else tables[0].unionByName(tables[1])
    level = StorageLevel.MEMORY_AND_DISK
    # The one shuffle of the events, cached: every job below reads it (no cache of the parse
    # itself, which was a second copy of the same rows).
    part = A.by_partition(A.events(raw), _partitions(spark)).persist(level)
    cached = [part]
    try:
        # The stats and ordering jobs run side by side (two threads) while this thread builds
        # the anomaly plan, whose analysis and the planning of its persisted parts take
        # seconds of driver time; the anomaly job runs once both are in (`_anomaly_rows`).
        with ThreadPoolExecutor(2) as pool:
            stats_job = pool.submit(lambda: [r.asDict() for r in A.run_stats(part).collect()])
            order_job = pool.submit(lambda: [r["rid"] for r in A.order_problems(part).collect()])
            source = A.anomaly_input(part)
            obs = A.observations(source).persist(level)
            cached.append(obs)
            every = A.top_examples(A.anomaly_rows(source, obs, cached))
            stats_rows = A.merge_run_stats(stats_job.result())
            timings["parse+stats"] = time.perf_counter() - t0
            t1 = time.perf_counter()
            bad = set(order_job.result())
        bad |= {
            rid
            for rid, s in stats_rows.items()
            if s["bad"] or s["n"] != s["n_index"] or s["lo"] != 0 or s["hi"] != s["n"] - 1
        }
        timings["validate"] = time.perf_counter() - t1  # the wait for it after the stats
        key_of = {rid: _run_key(s["file"]) for rid, s in stats_rows.items()}
        results: dict[str, RunResult] = {}
        for rid in bad:
            run = by_key[key_of[rid]]
            found = validate_history(run.history, max_problems=5)
            detail = (
                "; ".join(map(str, found)) if found else f"{run.history}: does not fit HISTORY.md"
            )
            results[key_of[rid]] = RunResult(run.run_dir, error=f"malformed history: {detail}")
        good = [r for r in runs if str(r.history.parent) not in results]
        if good:
            t2 = time.perf_counter()
            top = _anomaly_rows(every, bad)
            timings["anomalies"] = time.perf_counter() - t2
            rows_by_run: dict[str, list] = {}
            for row in top:
                rows_by_run.setdefault(key_of[row["rid"]], []).append(row)
            stats_by_run = {key_of[rid]: s for rid, s in stats_rows.items()}
            for run in good:
                key = str(run.history.parent)
                res = build_results(stats_by_run.get(key), rows_by_run.get(key, []),
                                    run.expectations, gather_run_checks(run.run_dir))
                write_results(run.run_dir, res)
                results[key] = RunResult(run.run_dir, results=res)
    finally:
        for df in cached:
            df.unpersist()
    timings["total"] = time.perf_counter() - t0
    return [replace(results[str(r.history.parent)], run_dir=r.run_dir) for r in runs]


def _anomaly_rows(every, bad: set[int]) -> list:
    """The anomaly rows of the runs not in `bad`. `every` (built before validation ended) is
    every run's; every anomaly is keyed by the run id (grouped, windowed and joined by it), so
    dropping the bad runs' rows at the end leaves the good runs' rows as they are."""
    from pyspark.sql import functions as F

    return (every.filter(~F.col("rid").isin(list(bad))) if bad else every).collect()


def _cores(spark) -> int:
    return max(1, spark.sparkContext.defaultParallelism)


def _partitions(spark) -> int:
    """Shuffle partitions: a few per core, so 2 cores stay busy despite uneven partitions."""
    return 4 * _cores(spark)


def _tune(spark, paths: list[str]) -> None:
    """Session settings for this check: split the input evenly over the cores (Spark's 128 MB
    default gives 3 splits of a 342 MB history on 2 cores: one core idles for a third of the
    scan); keyed aggregations may reuse the partitioning by (run, topic, partition)."""
    total = sum(os.path.getsize(p) for p in paths)
    split = max(4 << 20, min(128 << 20, total // (2 * _cores(spark)) + 1))
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(split))
    spark.conf.set("spark.sql.shuffle.partitions", str(_partitions(spark)))
    spark.conf.set("spark.sql.requireAllClusterKeysForCoPartition", "false")


def stored_metadata_divergence(run_dir: Path) -> dict[str, Any] | None:
    """The metadata check `highwater run` stored in run.json, or None (not run, or unreadable:
    the history is still checked, and a `metadata-divergence` expectation then misses)."""
    from harness.checker.results import stored_run_check

    return stored_run_check(run_dir, "metadata_divergence")


def build_results(
    stats_row: Mapping[str, Any] | None, rows: list, expectations: Sequence[Expectation],
    checks: Mapping[str, Mapping[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """results.json of HISTORY.md from one run's stats row and top-10 anomaly rows, plus the
    run checks (results.gather_run_checks) under their own names (HISTORY.md)."""
    anomalies: dict[str, dict[str, Any]] = {
        name: {"count": 0, "by_partition": {}, "examples": []} for name in ANOMALIES
    }
    lost_by_acks = dict.fromkeys(("all", "1", "0"), 0)
    candidates: dict[str, list[tuple[int, list[int]]]] = {name: [] for name in ANOMALIES}
    for row in rows:
        # Each (anomaly, p, acks) group sends up to 10 rows; cnt is the group's size.
        if row["rn"] == 1:
            a = anomalies[row["anomaly"]]
            a["count"] += row["cnt"]
            a["by_partition"][row["p"]] = a["by_partition"].get(row["p"], 0) + row["cnt"]
            if row["anomaly"] == "lost-write" and row["acks"] in ACKS:
                lost_by_acks[row["acks"]] += row["cnt"]
        candidates[row["anomaly"]].append((row["key"], list(row["ex"])))
    for name, a in anomalies.items():
        a["by_partition"] = dict(sorted(a["by_partition"].items()))
        a["examples"] = [ex for _, ex in sorted(candidates[name])[:10]]
    s = dict(stats_row or {})
    stats = {k: int(s.get(k) or 0) for k in ("sends", "acked", "failed", "info", "polls")}
    stats["lost_by_acks"] = lost_by_acks
    return with_run_checks(history_results(anomalies, stats, expectations), checks or {})
