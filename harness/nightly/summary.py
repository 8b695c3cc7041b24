"""The night's summary: ONE PySpark job over every run's history.jsonl and results.json.

Contract: `summarize(spark, runs)` with `runs` = [(run_dir, label)] returns
`{"runs": {run_dir: metrics}, "plans": {label: metrics}}` where metrics are
- `verdict` (results.json; per plan: the worst of its runs is left to the caller),
- `anomalies` {name: count} (results.json, summed per plan), `anomalies_total` (non-informational),
- `acked` (history: `send` completions of type ok), `workload_s` (history: first send invoke to
  last send completion; per plan the sum over its runs), `throughput` = acked / workload_s,
- `latency_ms` {p50, p99}: exact percentiles of invoke->ok completion of acked sends (the
  completion is the next op of the same process: one op in flight per process, HISTORY.md),
  over the run's, or the plan's pooled, sends.
Run dirs without history.jsonl are left out; a missing results.json gives null verdict and
anomalies. Everything is DataFrame aggregation; only one row per run/plan reaches the driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.checker.check import _run_key  # Spark's file URI -> the run dir (shared rule)
from harness.checker.history import ANOMALIES, INFORMATIONAL, history_schema
from harness.store.history import HISTORY_FILE
from harness.store.results import RESULTS_FILE


def results_schema():
    from pyspark.sql import types as T

    count = T.StructType([T.StructField("count", T.LongType())])
    return T.StructType([
        T.StructField("valid", T.BooleanType()),
        T.StructField("verdict", T.StringType()),
        T.StructField("anomalies", T.StructType([T.StructField(a, count) for a in ANOMALIES])),
        T.StructField("stats", T.StructType(
            [T.StructField(k, T.LongType()) for k in ("sends", "acked", "failed", "info")])),
    ])


def _file_runs(spark, df, labels: dict[str, str]):
    """A (file, run, label) DataFrame for the distinct input files of `df` (one per run)."""
    files = [r["file"] for r in df.select("file").distinct().collect()]
    rows = [(f, _run_key(f), labels[_run_key(f)]) for f in files if _run_key(f) in labels]
    return spark.createDataFrame(rows, "file string, run string, label string")


def summarize(spark, runs: Sequence[tuple[str | Path, str]]) -> dict[str, dict[str, Any]]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    labels = {str(Path(d).resolve()): label for d, label in runs}
    histories = sorted(str(Path(d) / HISTORY_FILE) for d in labels
                       if (Path(d) / HISTORY_FILE).is_file())
    results = sorted(str(Path(d) / RESULTS_FILE) for d in labels
                     if (Path(d) / RESULTS_FILE).is_file())
    out: dict[str, dict[str, Any]] = {"runs": {}, "plans": {}}
    if not histories:
        return out

    raw = (spark.read.schema(history_schema()).option("mode", "PERMISSIVE")
           .json(histories).withColumn("file", F.col("_metadata.file_path")))
    ops = (raw.join(F.broadcast(_file_runs(spark, raw, labels)), "file")
           .filter((F.col("process") != "nemesis") & (F.col("f") == "send")))
    w = Window.partitionBy("run", "process").orderBy("index")
    sends = (ops.withColumn("next_type", F.lead("type").over(w))
             .withColumn("next_time", F.lead("time").over(w)))
    latency = (sends.filter((F.col("type") == "invoke") & (F.col("next_type") == "ok"))
               .select("run", "label", ((F.col("next_time") - F.col("time")) / 1e6).alias("ms")))
    per_run = ops.groupBy("label", "run").agg(
        F.sum(F.when(F.col("type") == "ok", 1).otherwise(0)).alias("acked"),
        ((F.max("time") - F.min("time")) / 1e9).alias("workload_s"),
    )
    pct = F.expr("percentile(ms, array(0.5, 0.99))")
    lat_run = latency.groupBy("run").agg(pct.alias("pct"))
    lat_plan = latency.groupBy("label").agg(pct.alias("pct"))

    anomaly_cols = [F.col(f"anomalies.`{a}`.count").alias(a) for a in ANOMALIES]
    if results:
        res_raw = (spark.read.schema(results_schema()).option("multiLine", True)
                   .json(results).withColumn("file", F.col("_metadata.file_path")))
        res = (res_raw.join(F.broadcast(_file_runs(spark, res_raw, labels)), "file")
               .select("run", F.col("verdict"), *anomaly_cols))
    else:
        res = spark.createDataFrame(
            [], "run string, verdict string, " + ", ".join(f"`{a}` long" for a in ANOMALIES))
    run_rows = per_run.join(lat_run, "run", "left").join(res, "run", "left")
    plan_rows = (run_rows.groupBy("label")
                 .agg(F.sum("acked").alias("acked"), F.sum("workload_s").alias("workload_s"),
                      *[F.sum(F.col(f"`{a}`")).alias(a) for a in ANOMALIES])
                 .join(lat_plan, "label", "left"))

    for row in run_rows.collect():
        m = _metrics(row.asDict())
        m["verdict"] = row["verdict"]
        m["label"] = row["label"]
        out["runs"][row["run"]] = m
    for row in plan_rows.collect():
        out["plans"][row["label"]] = _metrics(row.asDict())
    return out


def _metrics(d: dict[str, Any]) -> dict[str, Any]:
    acked = int(d.get("acked") or 0)
    secs = float(d.get("workload_s") or 0.0)
    pct = d.get("pct")
    have = any(d.get(a) is not None for a in ANOMALIES)
    anomalies = {a: int(d[a]) for a in ANOMALIES if d.get(a) is not None} if have else None
    return {
        "acked": acked,
        "workload_s": round(secs, 3),
        "throughput": round(acked / secs, 3) if secs > 0 else None,
        "latency_ms": ({"p50": round(pct[0], 3), "p99": round(pct[1], 3)} if pct else None),
        "anomalies": anomalies,
        "anomalies_total": (sum(n for a, n in anomalies.items() if a not in INFORMATIONAL)
                            if anomalies is not None else None),
    }
