"""HISTORY.md's validity checks and anomalies as Spark DataFrame operations.

Contract: every function takes DataFrames that carry a `run` column (one history per run, many
runs checked together) and returns a DataFrame; nothing here collects rows. The result of
`anomaly_rows` has one row per counted anomaly unit (send, (p, offset), value, occurrence…):
`run, anomaly, p, acks, key, ex` where `ex` is the list of history indexes involved and `key`
orders examples (earliest first). `acks` is set only for lost-write (for stats.lost_by_acks).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from harness.checker.history import ACKS, NEMESIS, PHASES, TYPES

_SEND, _POLL = "send", "poll"
_EX_MAX = 10


def _pname(topic: Column, partition: Column) -> Column:
    return F.concat(topic, F.lit("-"), partition.cast("string"))


def prepare(raw: DataFrame) -> DataFrame:
    """Typed ops: `value_raw` as read, `value` as a long for sends, `p` = `<topic>-<partition>`."""
    is_send = (F.col("f") == _SEND) & (F.col("process") != NEMESIS)
    return raw.select(
        "run",
        "index",
        "time",
        "process",
        "type",
        "f",
        "topic",
        "partition",
        F.col("value").alias("value_raw"),
        F.when(is_send, F.col("value").try_cast("long")).alias("value"),
        "acks",
        "offset",
        "error",
        "final",
        "records",
        "phase",
        "_corrupt_record",
        _pname(F.col("topic"), F.col("partition")).alias("p"),
    )


# ---------------------------------------------------------------- validation


def _first_problem(*checks: tuple[Column, str]) -> Column:
    """The message of the first check that holds, else null."""
    out = F.lit(None).cast("string")
    for cond, msg in reversed(checks):
        out = F.when(cond, F.lit(msg)).otherwise(out)
    return out


def row_problems(ops: DataFrame) -> DataFrame:
    """(run, index, why) for lines that break HISTORY.md on their own."""
    c = F.col
    client = c("process") != NEMESIS
    send = client & (c("f") == _SEND)
    poll = client & (c("f") == _POLL)
    bad_record = F.exists(
        c("records"),
        lambda r: (
            r["topic"].isNull()
            | r["partition"].isNull()
            | (r["partition"] < 0)
            | r["offset"].isNull()
            | (r["offset"] < 0)
            | r["value"].isNull()
        ),
    )
    why = _first_problem(
        (c("_corrupt_record").isNotNull(), "bad JSON or a field of the wrong type"),
        (c("index").isNull(), "index missing"),
        (c("time").isNull() | (c("time") < 0), "time missing or negative"),
        (c("process").isNull(), "process missing"),
        (client & ~c("process").rlike("^[0-9]+$"), "process must be an integer or 'nemesis'"),
        (c("type").isNull() | ~c("type").isin(*TYPES), "type invalid"),
        (c("f").isNull(), "f missing"),
        (~client & (c("type") != "info"), "nemesis ops must be info"),
        (~client & (c("phase").isNull() | ~c("phase").isin(*PHASES)), "nemesis phase invalid"),
        (client & ~c("f").isin(_SEND, _POLL), "client f must be send or poll"),
        (send & (c("topic").isNull() | c("partition").isNull()), "send topic/partition missing"),
        (send & (c("partition") < 0), "send partition negative"),
        (
            send & (c("value").isNull() | ~c("value_raw").rlike("^-?[0-9]+$")),
            "send value must be an integer",
        ),
        (send & (c("acks").isNull() | ~c("acks").isin(*ACKS)), "send acks invalid"),
        (
            send & (c("type") == "ok") & c("acks").isin("1", "all") & c("offset").isNull(),
            "ok send needs an offset",
        ),
        (send & (c("offset") < 0), "send offset negative"),
        (send & c("type").isin("fail", "info") & c("error").isNull(), "send error missing"),
        (poll & c("final").isNull(), "poll final missing"),
        (poll & (c("type") == "ok") & c("records").isNull(), "ok poll needs records"),
        (poll & (c("type") == "ok") & bad_record, "poll record invalid"),
    )
    return ops.select("run", "index", why.alias("why")).filter(F.col("why").isNotNull())


def paired(ops: DataFrame) -> DataFrame:
    """Client ops (narrow, no records) with the previous op of the same process: prev_*."""
    w = Window.partitionBy("run", "process").orderBy("index")
    return (
        ops.filter((F.col("process") != NEMESIS) & F.col("index").isNotNull())
        .select("run", "process", "index", "type", "f", "p", "value", "acks", "offset")
        .withColumn("prev_type", F.lag("type").over(w))
        .withColumn("prev_f", F.lag("f").over(w))
        .withColumn("prev_index", F.lag("index").over(w))
    )


def pairing_problems(pairs: DataFrame) -> DataFrame:
    c = F.col
    why = _first_problem(
        (
            (c("type") == "invoke") & (c("prev_type") == "invoke"),
            "invoke while the process has an op in flight",
        ),
        (
            (c("type") != "invoke") & (c("prev_type").isNull() | (c("prev_type") != "invoke")),
            "completion without an invoke of its process",
        ),
        ((c("type") != "invoke") & (c("prev_f") != c("f")), "completion f differs from its invoke"),
        (c("prev_index") == c("index"), "index repeated"),
    )
    return pairs.select("run", "index", why.alias("why")).filter(F.col("why").isNotNull())


def duplicate_value_problems(pairs: DataFrame) -> DataFrame:
    """Send values must be unique within a run (the checks identify a message by its value)."""
    invokes = pairs.filter(
        (F.col("f") == _SEND) & (F.col("type") == "invoke") & F.col("value").isNotNull()
    )
    return (
        invokes.groupBy("run", "value")
        .agg(F.count("*").alias("n"), F.max("index").alias("index"))
        .filter(F.col("n") > 1)
        .select("run", "index", F.lit("send value sent more than once").alias("why"))
    )


def index_problems(ops: DataFrame) -> DataFrame:
    """Indexes must span 0..n-1. Repeats are caught within a process (pairing_problems); exact
    file order is the plain validator's job: a global sort here would cost a full shuffle."""
    agg = ops.groupBy("run").agg(
        F.count("*").alias("n"),
        F.count("index").alias("n_index"),
        F.min("index").alias("lo"),
        F.max("index").alias("hi"),
    )
    bad = (F.col("n") != F.col("n_index")) | (F.col("lo") != 0) | (F.col("hi") != F.col("n") - 1)
    return agg.filter(bad).select(
        "run", F.lit(None).cast("long").alias("index"), F.lit("indexes are not 0..n-1").alias("why")
    )


# ---------------------------------------------------------------- stats


def stats(pairs: DataFrame) -> DataFrame:
    """Per run: sends (invokes), acked/failed/info (send completions), polls (invokes)."""
    c = F.col

    def n(cond: Column) -> Column:
        return F.sum(F.when(cond, 1).otherwise(0))

    send, poll = c("f") == _SEND, c("f") == _POLL
    return pairs.groupBy("run").agg(
        n(send & (c("type") == "invoke")).alias("sends"),
        n(send & (c("type") == "ok")).alias("acked"),
        n(send & (c("type") == "fail")).alias("failed"),
        n(send & (c("type") == "info")).alias("info"),
        n(poll & (c("type") == "invoke")).alias("polls"),
    )


# ---------------------------------------------------------------- anomalies


def _rows(df: DataFrame, anomaly: str, key: Column, ex: Column, acks: Column | None = None):
    return df.select(
        "run",
        F.lit(anomaly).alias("anomaly"),
        "p",
        (acks if acks is not None else F.lit(None).cast("string")).alias("acks"),
        key.cast("long").alias("key"),
        ex.cast("array<long>").alias("ex"),
    )


def poll_records(ops: DataFrame) -> DataFrame:
    """One row per record read by an ok poll: run, process, index, final, pos, p, offset, value."""
    polls = ops.filter(
        (F.col("process") != NEMESIS) & (F.col("f") == _POLL) & (F.col("type") == "ok")
    )
    return polls.select(
        "run", "process", "index", "final", F.posexplode("records").alias("pos", "r")
    ).select(
        "run",
        "process",
        "index",
        "final",
        "pos",
        _pname(F.col("r.topic"), F.col("r.partition")).alias("p"),
        F.col("r.offset").alias("offset"),
        F.col("r.value").alias("value"),
    )


def anomaly_rows(recs: DataFrame, pairs: DataFrame) -> DataFrame:
    """Every anomaly unit of every run, unioned (see the module docstring for the columns).

    `recs` is `poll_records(ops)`, `pairs` is `paired(ops)`.
    """
    c = F.col
    # F[p]: (p, offset, value) read by final polls, with the first final poll that read it.
    final_log = (
        recs.filter(c("final"))
        .groupBy("run", "p", "offset", "value")
        .agg(F.min("index").alias("fidx"))
    )
    final_parts = final_log.select("run", "p").distinct()
    final_values = final_log.groupBy("run", "p", "value").agg(
        F.min("fidx").alias("fidx"), F.count("*").alias("n_offsets")
    )

    # Send completions with their invoke's index (pairing validated, so prev is the invoke).
    done = pairs.filter((c("f") == _SEND) & c("type").isin("ok", "fail", "info")).select(
        "run", "p", "value", "acks", "offset", "type", "index", c("prev_index").alias("inv")
    )
    checked = done.join(F.broadcast(final_parts), ["run", "p"], "left_semi").join(
        final_values.select("run", "p", "value", "fidx"), ["run", "p", "value"], "left"
    )
    lost = checked.filter((c("type") == "ok") & c("fidx").isNull())
    lost_failure = checked.filter((c("type") == "fail") & c("fidx").isNotNull())
    unseen_info = checked.filter((c("type") == "info") & c("fidx").isNotNull())

    # inconsistent-offset: every observation of (p, offset) -> value; cheap min/max pass first,
    # examples only for the (few) offsets that disagree.
    observed = recs.select("run", "p", "offset", "value", "index").unionByName(
        done.filter((c("type") == "ok") & c("offset").isNotNull()).select(
            "run", "p", "offset", "value", "index"
        )
    )
    disagree = (
        observed.groupBy("run", "p", "offset")
        .agg(F.min("value").alias("vmin"), F.max("value").alias("vmax"))
        .filter(c("vmin") != c("vmax"))
        .select("run", "p", "offset")
    )
    inconsistent = (
        observed.join(disagree, ["run", "p", "offset"], "left_semi")
        .groupBy("run", "p", "offset", "value")
        .agg(F.min("index").alias("i"))
        .groupBy("run", "p", "offset")
        .agg(F.sort_array(F.collect_list("i")).alias("ex"))
    )

    # uncommitted-read: non-final reads that F[p] does not hold at that offset.
    uncommitted = (
        recs.filter(~c("final"))
        .join(F.broadcast(final_parts), ["run", "p"], "left_semi")
        .groupBy("run", "p", "offset", "value")
        .agg(F.min("index").alias("i"))
        .join(final_log, ["run", "p", "offset", "value"], "left_anti")
    )

    duplicate = (
        final_log.join(
            final_values.filter(c("n_offsets") > 1).select("run", "p", "value"),
            ["run", "p", "value"],
            "left_semi",
        )
        .groupBy("run", "p", "value")
        .agg(F.sort_array(F.collect_list("fidx")).alias("ex"))
    )

    # Per-process poll sequences; final and non-final polls are separate sequences.
    w = Window.partitionBy("run", "process", "final", "p").orderBy("index", "pos")
    seq = recs.withColumn("prev_offset", F.lag("offset").over(w)).withColumn(
        "prev_index", F.lag("index").over(w)
    )
    nonmonotonic = seq.filter(c("offset") <= c("prev_offset"))
    skips = _poll_skips(seq.filter(c("offset") > c("prev_offset") + 1), final_log)

    sent_parts = (
        pairs.filter((c("f") == _SEND) & (c("type") == "invoke"))
        .groupBy("run", "p")
        .agg(F.min("index").alias("i"))
    )
    no_final = sent_parts.join(final_parts, ["run", "p"], "left_anti")

    parts = [
        _rows(lost, "lost-write", c("inv"), F.array("inv", "index"), acks=c("acks")),
        _rows(inconsistent, "inconsistent-offset", c("ex")[0], F.slice("ex", 1, _EX_MAX)),
        _rows(uncommitted, "uncommitted-read", c("i"), F.array("i")),
        _rows(duplicate, "duplicate", c("ex")[0], F.slice("ex", 1, _EX_MAX)),
        _rows(nonmonotonic, "nonmonotonic-poll", c("index"), F.array("prev_index", "index")),
        _rows(skips, "poll-skip", c("index"), F.array("prev_index", "index")),
        _rows(lost_failure, "lost-failure", c("inv"), F.array("inv", "index", "fidx")),
        _rows(unseen_info, "unseen-info", c("inv"), F.array("inv", "index", "fidx")),
        _rows(no_final, "no-final-read", c("i"), F.array("i")),
    ]
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    return out


def _poll_skips(candidates: DataFrame, final_log: DataFrame) -> DataFrame:
    """Candidates (offset > prev + 1) for which F[p] holds an offset strictly in between.

    An as-of lookup without a range join: candidates and F's offsets in one sequence per
    partition, ordered by offset descending; a running `last` over F's offsets then gives, at
    each candidate's prev_offset, the smallest F offset strictly above it.
    """
    c = F.col
    f_offsets = final_log.select("run", "p", c("offset").alias("o")).distinct()
    cand = candidates.select(
        "run",
        "p",
        c("prev_offset").alias("o"),
        F.lit(0).alias("kind"),  # sorts before an F offset equal to prev_offset: excludes it
        c("offset").alias("hi"),
        "index",
        "prev_index",
    )
    f_rows = f_offsets.select(
        "run",
        "p",
        "o",
        F.lit(1).alias("kind"),
        F.lit(None).cast("long").alias("hi"),
        F.lit(None).cast("long").alias("index"),
        F.lit(None).cast("long").alias("prev_index"),
    )
    w = (
        Window.partitionBy("run", "p")
        .orderBy(c("o").desc(), c("kind").asc())
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    nxt = F.last(F.when(c("kind") == 1, c("o")), ignorenulls=True).over(w)
    return (
        cand.unionByName(f_rows)
        .withColumn("next_final", nxt)
        .filter((c("kind") == 0) & (c("next_final") < c("hi")))
    )
