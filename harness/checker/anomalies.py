"""HISTORY.md's validity checks and anomalies as Spark DataFrame operations, on flat events.

Contract: `events(raw)` turns the parsed history lines (`history_schema()`, with a `file` column)
into ONE flat table: a row per op (`kind` 0), per record of an ok poll (`kind` 1) and per offset
of a commit (`kind` COMMIT), with
small integer codes instead of strings (TYPE, F, ACKS) and `rid`, a 64-bit hash of the history's
path, as the run id. `by_partition(ev)` shuffles it once by (rid, topic, partition); the caller
caches that (`part`) and everything else reads it:
- `run_stats(part)`: per run, counts for stats, index span and row problems (validation), as
  one or two rows that `merge_run_stats` adds up;
- `order_problems(part)`: (rid, n) for runs whose ops break pairing, repeat a send value or
  an index;
- `anomaly_rows(anomaly_input(part), obs)`: one row per counted anomaly unit: rid, anomaly,
  topic, partition, acks, key, ex, where `ex` lists the history indexes involved and `key`
  orders examples (earliest first); `acks` is set only for lost-write (stats.lost_by_acks).
Every anomaly is per topic-partition (HISTORY.md), so after that one shuffle every aggregation,
window and join of the anomalies runs inside its partition: no further exchange of the events.
Nothing here collects rows.
"""

from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from harness.checker.history import ACKS, CLIENT_FS, NEMESIS, PHASES, TYPES

# Codes of the flat table (tinyint): type, f and acks as small integers.
TYPE = {t: i for i, t in enumerate(TYPES)}  # invoke 0, ok 1, fail 2, info 3
F_SEND, F_POLL, F_COMMIT, F_OTHER = 0, 1, 2, 3
ACKS_CODE = {a: i for i, a in enumerate(ACKS)}  # "0" 0, "1" 1, "all" 2
OP, RECORD, COMMIT = 0, 1, 2  # COMMIT: one row per offset of a commit op
_EX_MAX = 10
PART = ["rid", "topic", "partition"]

c = F.col


def _code(col: Column, table: dict[str, int]) -> Column:
    out = F.lit(None).cast("tinyint")
    for name, code in table.items():
        out = F.when(col == name, F.lit(code).cast("tinyint")).otherwise(out)
    return out


def _first_problem(*checks: tuple[Column, str]) -> Column:
    """The message of the first check that holds, else null."""
    out = F.lit(None).cast("string")
    for cond, msg in reversed(checks):
        out = F.when(cond, F.lit(msg)).otherwise(out)
    return out


def row_problem(value: Column) -> Column:
    """Why a parsed line breaks HISTORY.md on its own (null when it does not); `value` = long.
    Poll records are checked on their own rows (`events`), without a per-line array scan."""
    client = c("process") != NEMESIS
    send = client & (c("f") == "send")
    poll = client & (c("f") == "poll")
    commit = client & (c("f") == "commit")
    return _first_problem(
        (c("_corrupt_record").isNotNull(), "bad JSON or a field of the wrong type"),
        (c("index").isNull(), "index missing"),
        (c("time").isNull() | (c("time") < 0), "time missing or negative"),
        (c("process").isNull(), "process missing"),
        (client & ~c("process").rlike("^[0-9]+$"), "process must be an integer or 'nemesis'"),
        (c("type").isNull() | ~c("type").isin(*TYPES), "type invalid"),
        (c("f").isNull(), "f missing"),
        (~client & (c("type") != "info"), "nemesis ops must be info"),
        (~client & (c("phase").isNull() | ~c("phase").isin(*PHASES)), "nemesis phase invalid"),
        (client & ~c("f").isin(*CLIENT_FS), "client f must be send, poll or commit"),
        (send & (c("topic").isNull() | c("partition").isNull()), "send topic/partition missing"),
        (send & (c("partition") < 0), "send partition negative"),
        (
            send & (value.isNull() | ~c("value").rlike("^-?[0-9]+$")),
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
        (commit & (c("group").isNull() | (c("group") == "")), "commit group missing"),
        (commit & (c("offsets").isNull() | (F.size("offsets") == 0)), "commit offsets missing"),
        (commit & c("type").isin("fail", "info") & c("error").isNull(), "commit error missing"),
        (c("generation") < 0, "generation negative"),
    )


def events(raw: DataFrame) -> DataFrame:
    """The flat table: rid, file, kind, index, process, type, f, final, acks, group, bad, pos,
    topic, partition, offset, value, generation. `process` is -1 for nemesis ops; record rows
    carry their poll's index, process, type, f, final and group, and the record's pos, topic,
    partition, offset, value, generation and rebalance; commit rows (one per offset of a
    commit op, any type) carry the op's fields and the offset's topic, partition, offset.

    Built with plain expressions only (no lambdas: Spark evaluates higher-order functions
    without code generation, which made this step 10x slower): the op itself becomes element 0
    of an array that continues with the poll's records, and one posexplode makes the rows."""
    client = c("process") != NEMESIS
    is_send = client & (c("f") == "send")
    value = F.when(is_send, c("value").try_cast("long"))
    rec_type = ("struct<topic:string,partition:int,offset:bigint,value:bigint,generation:int,"
                "rebalance:int>")
    op = F.struct(c("topic"), c("partition"), c("offset"), value.alias("value"),
                  c("generation"), F.lit(None).cast("int").alias("rebalance"))
    ok_poll = client & (c("f") == "poll") & (c("type") == "ok")
    empty = F.array().cast(f"array<{rec_type}>")
    recs = F.coalesce(F.when(ok_poll, c("records")), empty)
    offs = F.coalesce(F.when(client & (c("f") == "commit"), c("offsets")), empty)
    e = c("e")
    record = c("pos0") > 0
    is_commit = c("f") == F_COMMIT
    bad_record = record & (
        e["topic"].isNull()
        | e["partition"].isNull()
        | (e["partition"] < 0)
        | e["offset"].isNull()
        | (e["offset"] < 0)
        | (e["value"].isNull() & ~is_commit)
        | (e["generation"] < 0)
        | (e["rebalance"] < 1)
    )
    return raw.select(
        F.xxhash64("file").alias("rid"),
        "file",
        "index",
        F.when(~client, F.lit(-1)).otherwise(c("process").try_cast("int")).alias("process"),
        _code(c("type"), TYPE).alias("type"),
        F.when(c("f") == "send", F.lit(F_SEND))
        .when(c("f") == "poll", F.lit(F_POLL))
        .when(c("f") == "commit", F.lit(F_COMMIT))
        .otherwise(F.lit(F_OTHER))
        .cast("tinyint")
        .alias("f"),
        "final",
        _code(c("acks"), ACKS_CODE).alias("acks"),
        "group",
        row_problem(value).isNotNull().alias("bad_op"),
        F.posexplode(F.concat(F.array(op), recs, offs)).alias("pos0", "e"),
    ).select(
        # The run's file only on op rows: the flat table is shuffled once whole (by_partition).
        "rid", F.when(~record, c("file")).alias("file"), "index", "process", "type", "f",
        "final", "acks", "group",
        (F.when(record, F.lit(False)).otherwise(c("bad_op")) | bad_record).alias("bad"),
        F.when(~record, F.lit(OP)).when(is_commit, F.lit(COMMIT)).otherwise(F.lit(RECORD))
        .cast("tinyint").alias("kind"),
        (c("pos0") - 1).alias("pos"),
        e["topic"].alias("topic"), e["partition"].alias("partition"),
        e["offset"].alias("offset"), e["value"].alias("value"),
        e["generation"].alias("generation"), e["rebalance"].alias("rebalance"),
    )  # fmt: skip


def _n(cond: Column) -> Column:
    return F.sum(F.when(cond, 1).otherwise(0))


def run_stats(ev: DataFrame) -> DataFrame:
    """Per run: file, stats counts, index span of the ops and the number of bad lines; a run
    may give two rows (file set, and null for its record rows): `merge_run_stats` adds them."""
    op = c("kind") == OP
    client = op & (c("process") >= 0)
    send, poll = client & (c("f") == F_SEND), client & (c("f") == F_POLL)
    # Grouped by file too (rid is its hash): a string aggregate would force a sort-based plan.
    return ev.groupBy("rid", "file").agg(
        _n(op).alias("n"),
        F.count(F.when(op, c("index"))).alias("n_index"),
        F.min(F.when(op, c("index"))).alias("lo"),
        F.max(F.when(op, c("index"))).alias("hi"),
        _n(c("bad")).alias("bad"),
        _n(send & (c("type") == TYPE["invoke"])).alias("sends"),
        _n(send & (c("type") == TYPE["ok"])).alias("acked"),
        _n(send & (c("type") == TYPE["fail"])).alias("failed"),
        _n(send & (c("type") == TYPE["info"])).alias("info"),
        _n(poll & (c("type") == TYPE["invoke"])).alias("polls"),
    )


def merge_run_stats(rows: list[dict]) -> dict[int, dict]:
    """rid -> one stats dict, from run_stats' rows (counts added, index span widened)."""
    out: dict[int, dict] = {}
    for row in rows:
        have = out.get(row["rid"])
        if have is None:
            out[row["rid"]] = dict(row)
            continue
        for key in ("n", "n_index", "bad", "sends", "acked", "failed", "info", "polls"):
            have[key] = (have[key] or 0) + (row[key] or 0)
        for key, pick in (("lo", min), ("hi", max)):
            both = [v for v in (have[key], row[key]) if v is not None]
            have[key] = pick(both) if both else None
        have["file"] = have["file"] or row["file"]
    return out


def order_problems(ev: DataFrame) -> DataFrame:
    """(rid, n) for runs where a process's ops do not pair up (invoke, completion, invoke…; a
    completion has its invoke's f), a send value is invoked twice (the checks identify a
    message by its value) or two lines share an index. File order itself is the plain
    validator's job."""
    ops = ev.filter((c("kind") == OP) & (c("process") >= 0) & c("index").isNotNull())
    w = Window.partitionBy("rid", "process").orderBy("index")
    invoke = TYPE["invoke"]
    prev_type, prev_f = F.lag("type").over(w), F.lag("f").over(w)
    paired = ops.select(
        "rid",
        (
            ((c("type") == invoke) & (prev_type == invoke))
            | ((c("type") != invoke) & (prev_type.isNull() | (prev_type != invoke)))
            | ((c("type") != invoke) & (prev_f != c("f")))
            | (F.lag("index").over(w) == c("index"))
        ).alias("bad"),
    ).filter(c("bad"))
    twice = (
        ops.filter((c("f") == F_SEND) & (c("type") == invoke) & c("value").isNotNull())
        .groupBy("rid", "value")
        .count()
        .filter(c("count") > 1)
    )
    # An index held by two lines of different processes (nemesis included), with another one
    # missing, keeps the count and the span right: only a count per index sees it.
    repeated = (
        ev.filter((c("kind") == OP) & c("index").isNotNull())
        .groupBy("rid", "index")
        .count()
        .filter(c("count") > 1)
    )
    return (
        paired.select("rid").unionByName(twice.select("rid")).unionByName(repeated.select("rid"))
        .groupBy("rid").count()
    )  # fmt: skip


# ---------------------------------------------------------------- anomalies


def by_partition(ev: DataFrame, partitions: int) -> DataFrame:
    """The whole flat table hash-partitioned by (rid, topic, partition): the one shuffle of the
    events. The caller caches it; stats, validation and anomalies all read it (`anomaly_input`)."""
    return ev.repartition(partitions, *PART)


def anomaly_input(part: DataFrame) -> DataFrame:
    """The rows the anomalies read: poll records, commit offsets and client send ops."""
    return part.filter((c("kind") != OP) | ((c("f") == F_SEND) & (c("process") >= 0)))


def _rows(df: DataFrame, anomaly: str, key: Column, ex: Column, acks: Column | None = None):
    return df.select(
        "rid",
        F.lit(anomaly).alias("anomaly"),
        "topic",
        "partition",
        (acks if acks is not None else F.lit(None).cast("tinyint")).alias("acks"),
        key.cast("long").alias("key"),
        ex.cast("array<long>").alias("ex"),
    )


def observations(part: DataFrame) -> DataFrame:
    """Per (p, offset, value) seen by an ok poll or an ok send: the first index that saw it
    (`obs`), the first final poll that read it (`fidx`) and the first non-final one (`nfidx`).
    F[p] is the rows with `fidx`; the caller caches this (it feeds most checks)."""
    rec = c("kind") == RECORD
    seen = rec | ((c("kind") == OP) & (c("type") == TYPE["ok"]) & c("offset").isNotNull())
    return (
        part.filter(seen)
        .groupBy(*PART, "offset", "value")
        .agg(
            F.min("index").alias("obs"),
            F.min(F.when(rec & c("final"), c("index"))).alias("fidx"),
            F.min(F.when(rec & ~c("final"), c("index"))).alias("nfidx"),
        )
    )


def anomaly_rows(part: DataFrame, obs: DataFrame, cached: list[DataFrame]) -> DataFrame:
    """Every anomaly unit of every run, unioned (see the module docstring for the columns).

    `part` is `anomaly_input(by_partition(ev))`, `obs` is `observations(part)`. Every
    intermediate that feeds several anomalies is persisted and appended to `cached` (the caller
    unpersists them): the plan has no exchange after the one shuffle, so Spark cannot reuse a
    shared subplan and would compute it once per anomaly that reads it."""

    def shared(df: DataFrame) -> DataFrame:
        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        cached.append(df)
        return df

    final_log = obs.filter(c("fidx").isNotNull())
    final_parts = F.broadcast(final_log.select(*PART).distinct())

    # One row per (p, value): its send's invoke and completion (values are unique per run) and
    # where F[p] holds it: one aggregation over send ops and F[p]'s rows, no join between them.
    inv = TYPE["invoke"]
    nothing = F.lit(None)
    by_value = shared(
        part.filter(c("kind") == OP)
        .select(*PART, "value", "type", "index", "acks", nothing.cast("long").alias("fidx"))
        .unionByName(
            final_log.select(
                *PART, "value", nothing.cast("tinyint").alias("type"),
                nothing.cast("long").alias("index"), nothing.cast("tinyint").alias("acks"), "fidx",
            )  # fmt: skip
        )
        .groupBy(*PART, "value")
        .agg(
            F.min(F.when(c("type") == inv, c("index"))).alias("inv"),
            F.max(F.when(c("type") != inv, c("index"))).alias("idx"),
            F.max(F.when(c("type") != inv, c("type"))).alias("done"),
            F.max("acks").alias("acks"),
            F.min("fidx").alias("fmin"),
            F.count("fidx").alias("n_offsets"),
        )
    )
    checked = by_value.filter(c("done").isNotNull()).join(final_parts, PART, "left_semi")
    lost = checked.filter((c("done") == TYPE["ok"]) & c("fmin").isNull())
    lost_failure = checked.filter((c("done") == TYPE["fail"]) & c("fmin").isNotNull())
    unseen_info = checked.filter((c("done") == TYPE["info"]) & c("fmin").isNotNull())

    # Per (p, offset): how many values were observed there, and whether F[p] holds it.
    offsets = shared(
        obs.groupBy(*PART, "offset").agg(
            F.count("*").alias("n_values"), F.count("fidx").alias("n_final")
        )
    )
    # The joins below gather examples for the few units found: a hash table of those few (the
    # hint), not a sort of every observation.
    inconsistent = (
        obs.join(
            offsets.filter(c("n_values") > 1).select(*PART, "offset").hint("shuffle_hash"),
            [*PART, "offset"],
            "left_semi",
        )
        .groupBy(*PART, "offset")
        .agg(F.sort_array(F.collect_list("obs")).alias("ex"))
    )
    uncommitted = obs.filter(c("nfidx").isNotNull() & c("fidx").isNull()).join(
        final_parts, PART, "left_semi"
    )
    duplicate = (
        final_log.join(
            by_value.filter(c("n_offsets") > 1).select(*PART, "value").hint("shuffle_hash"),
            [*PART, "value"],
            "left_semi",
        )
        .groupBy(*PART, "value")
        .agg(F.sort_array(F.collect_list("fidx")).alias("ex"))
    )

    # Per-process poll sequences; final and non-final polls are separate sequences, and so are
    # a group member's reads under different generations (docs/history-groups.md; null for
    # every record of a history without group polls, so those keep HISTORY.md's sequences).
    w = Window.partitionBy(*PART, "process", "final", "generation", "rebalance").orderBy(
        "index", "pos"
    )
    seq = part.filter(c("kind") == RECORD).select(
        *PART,
        "index",
        "offset",
        F.lag("offset").over(w).alias("prev_offset"),
        F.lag("index").over(w).alias("prev_index"),
    )
    # Only the records that break the sequence (few), kept: both poll checks read them.
    breaks = (c("offset") <= c("prev_offset")) | (c("offset") > c("prev_offset") + 1)
    seq = shared(seq.filter(breaks))
    nonmonotonic = seq.filter(c("offset") <= c("prev_offset"))
    # poll-skip: F[p] holds an offset strictly between prev and this one. For every observed
    # offset o, the smallest F offset above it (a running value, offsets descending); the
    # previous offset of a poll is an observed offset, so one equi-join finds it.
    wf = (
        Window.partitionBy(*PART)
        .orderBy(c("offset").desc())
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    next_final = offsets.select(
        *PART,
        c("offset").alias("prev_offset"),
        F.last(F.when(c("n_final") > 0, c("offset")), ignorenulls=True).over(wf).alias("nf"),
    )
    skips = (
        seq.filter(c("offset") > c("prev_offset") + 1)
        .hint("shuffle_hash")
        .join(next_final, [*PART, "prev_offset"])
        .filter(c("nf") < c("offset"))
    )

    truncation_skips = _truncation_skips(part, uncommitted, offsets)

    no_final = (
        part.filter((c("kind") == OP) & (c("type") == inv))
        .groupBy(*PART)
        .agg(F.min("index").alias("i"))
        .join(final_parts, PART, "left_anti")
    )

    parts = [
        _rows(lost, "lost-write", c("inv"), F.array("inv", "idx"), acks=c("acks")),
        _rows(inconsistent, "inconsistent-offset", c("ex")[0], F.slice("ex", 1, _EX_MAX)),
        _rows(uncommitted, "uncommitted-read", c("nfidx"), F.array("nfidx")),
        _rows(duplicate, "duplicate", c("ex")[0], F.slice("ex", 1, _EX_MAX)),
        _rows(nonmonotonic, "nonmonotonic-poll", c("index"), F.array("prev_index", "index")),
        _rows(skips, "poll-skip", c("index"), F.array("prev_index", "index")),
        _rows(lost_failure, "lost-failure", c("inv"), F.array("inv", "idx", "fmin")),
        _rows(unseen_info, "unseen-info", c("inv"), F.array("inv", "idx", "fmin")),
        _rows(no_final, "no-final-read", c("i"), F.array("i")),
        _rows(truncation_skips, "truncation-skip", c("m.index"), F.array("m.index", "m.past")),
        *group_rows(part, final_log),
    ]
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def _truncation_skips(part: DataFrame, uncommitted: DataFrame, offsets: DataFrame) -> DataFrame:
    """docs/history-truncation-skip.md: per (process sequence, p, offset), a non-final read of
    a value F[p] replaced at that offset, followed in the sequence by a read of a higher offset
    holding F[p]'s value and by no read of that offset with F[p]'s value. Candidate reads are
    few (uncommitted reads at offsets F[p] holds), so only their sequences are windowed. Columns
    as `_rows` wants them, plus `m`: (index of the first such read, index of the highest-offset
    final read after it)."""
    seq = [*PART, "process", "g", "r"]
    reads = part.filter((c("kind") == RECORD) & ~c("final")).select(
        *PART, "process", F.coalesce(c("generation"), F.lit(-1)).alias("g"),
        F.coalesce(c("rebalance"), F.lit(-1)).alias("r"), "index", "pos", "offset", "value",
    )  # fmt: skip
    bad = uncommitted.select(*PART, "offset", "value")
    replaced = F.broadcast(
        bad.join(offsets.filter(c("n_final") > 0).select(*PART, "offset"), [*PART, "offset"],
                 "left_semi"))  # fmt: skip
    sequences = reads.join(replaced, [*PART, "offset", "value"], "left_semi").select(*seq)
    reads = reads.join(F.broadcast(sequences.distinct()), seq, "left_semi").join(
        F.broadcast(bad.withColumn("bad", F.lit(True))), [*PART, "offset", "value"], "left")
    good = c("bad").isNull()
    after = Window.partitionBy(*seq).orderBy("index", "pos").rowsBetween(
        1, Window.unboundedFollowing)
    after_here = Window.partitionBy(*seq, "offset").orderBy("index", "pos").rowsBetween(
        1, Window.unboundedFollowing)
    marked = reads.select(
        *seq, "index", "offset", "value",
        F.max(F.when(good, F.struct(c("offset").alias("o"), c("index").alias("i"))))
        .over(after).alias("past"),
        F.max(F.when(good, F.lit(1))).over(after_here).alias("reread"),
    )  # fmt: skip
    return (
        marked.join(replaced, [*PART, "offset", "value"], "left_semi")
        .filter((c("past.o") > c("offset")) & c("reread").isNull())
        .groupBy(*seq, "offset")
        .agg(F.min(F.struct(c("index").alias("index"), c("past.i").alias("past"))).alias("m"))
    )


def group_rows(part: DataFrame, final_log: DataFrame) -> list[DataFrame]:
    """docs/history-groups.md's anomalies, as `_rows` tables (see that file for the rules).

    A tenure is (group, p, process, generation, rebalance): a member's non-final reads of p
    under one assignment; its first read is the record with the smallest (index, pos)."""
    key = [*PART, "group"]
    tenure = ["process", "generation", "rebalance"]
    reads = part.filter(
        (c("kind") == RECORD) & ~c("final") & c("group").isNotNull()
        & c("generation").isNotNull()
    )
    # The same process's previous read of p (any tenure): where its position stood.
    wp = Window.partitionBy(*key, "process").orderBy("index", "pos")
    wt = Window.partitionBy(*key, *tenure).orderBy("index", "pos")
    first = (
        reads.select(*key, *tenure, "index", "offset", F.lag("offset").over(wp).alias("prev"),
                     F.row_number().over(wt).alias("n"))
        .filter(c("n") == 1)
        .drop("n")
    )  # fmt: skip
    commits = part.filter(c("kind") == COMMIT).select(*key, "index", "type", "offset")
    ok = commits.filter(c("type") == TYPE["ok"])
    f_cols = [c(f"f.{k}") for k in (*key, *tenure, "index", "offset", "prev")]
    # commit-regression: an ok commit completed before the poll that made the first read.
    acked = (
        first.alias("f").join(ok.alias("k"), key)
        .filter(c("k.index") < c("f.index"))
        .groupBy(*f_cols)
        .agg(F.max(F.struct(c("k.offset").alias("o"), c("k.index").alias("i"))).alias("top"))
    )  # fmt: skip
    regression = acked.filter(c("offset") < c("top.o")).select(
        *key, "index", c("top.i").alias("commit")
    )
    # rebalance-skip: the most a group could have committed (any commit invoked before the
    # first read's poll completed) or the process's own position, whichever is further.
    invoked = commits.filter(c("type") == TYPE["invoke"])
    bound = (
        first.alias("f")
        .join(invoked.alias("k"),
              [*[c(f"f.{k}") == c(f"k.{k}") for k in key], c("k.index") < c("f.index")], "left")
        .groupBy(*f_cols)
        .agg(F.max("k.offset").alias("committed"))
        .select(*key, *tenure, "index", "offset",
                F.coalesce(F.greatest(c("committed"), c("prev") + 1), F.lit(-1)).alias("start"))
    )  # fmt: skip
    held = final_log.select(*PART, c("offset").alias("fo"))
    skipped = (
        bound.filter(c("offset") > c("start")).alias("b")
        .join(held.alias("h"), PART)
        .filter((c("h.fo") >= c("b.start")) & (c("h.fo") < c("b.offset")))
        .select(*[c(f"b.{k}") for k in (*key, *tenure)], c("b.index"))
        .distinct()
    )  # fmt: skip
    # double-assignment: two processes read p under one generation of one group.
    owners = (
        first.groupBy(*key, "generation", "process").agg(F.min("index").alias("i"))
        .groupBy(*key, "generation")
        .agg(F.count("*").alias("members"), F.sort_array(F.collect_list("i")).alias("ex"))
        .filter(c("members") > 1)
    )  # fmt: skip
    # generation-reuse: one member read p under two assignments with one generation number.
    reused = (
        first.groupBy(*key, "process", "generation")
        .agg(F.count("*").alias("tenures"), F.sort_array(F.collect_list("index")).alias("ex"))
        .filter(c("tenures") > 1)
    )  # fmt: skip
    return [
        _rows(regression, "commit-regression", c("index"), F.array("commit", "index")),
        _rows(skipped, "rebalance-skip", c("index"), F.array("index")),
        _rows(owners, "double-assignment", c("ex")[0], F.slice("ex", 1, _EX_MAX)),
        _rows(reused, "generation-reuse", c("ex")[0], F.slice("ex", 1, _EX_MAX)),
    ]


def top_examples(rows: DataFrame) -> DataFrame:
    """Per (rid, anomaly, topic, partition, acks): its size `cnt` and its first 10 rows by
    (key, ex), numbered `rn`; `p` names the partition and `acks` is text again."""
    w = Window.partitionBy("rid", "anomaly", "topic", "partition", "acks").orderBy("key", "ex")
    acks = F.element_at(F.array(*[F.lit(a) for a in ACKS]), c("acks").cast("int") + 1)
    return (
        rows.withColumn("rn", F.row_number().over(w))
        .withColumn(
            "cnt",
            F.count("*").over(w.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)),
        )
        .filter(c("rn") <= _EX_MAX)
        .select(
            "rid",
            "anomaly",
            F.concat("topic", F.lit("-"), c("partition").cast("string")).alias("p"),
            acks.alias("acks"),
            "key",
            "ex",
            "rn",
            "cnt",
        )
    )
