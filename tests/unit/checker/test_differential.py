"""Differential test: the Spark checker and the plain reference agree on every anomaly table.

Histories: every well-formed fixture, the bench's synthetic history (lost writes planted), and
seeded random histories with every anomaly of HISTORY.md planted (truncations, replaced
offsets, duplicates, skips and rewinds in polls, failed and info sends that were written, a
partition without a final read, values in a partition they were not sent to, duplicated values
no client sent: the checker gathers sends and the final log in one aggregation per value).
All are checked in ONE check_runs call, as a nightly does.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from harness.bench.checker import generate
from harness.checker.history import ANOMALIES
from harness.checker.reference import reference_check
from harness.store.history import HistoryWriter

pytestmark = pytest.mark.spark

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "histories"


def planted(path: Path, seed: int, partitions: int = 3) -> None:
    """A random history whose broker log misbehaves in every way HISTORY.md names."""
    rng = random.Random(seed)
    logs: dict[int, list[int]] = {p: [] for p in range(partitions)}  # offset -> value
    value = 0
    with HistoryWriter(path) as w:
        for step in range(400):
            p = rng.randrange(partitions)
            r = rng.random()
            if r < 0.6:
                acks = rng.choice(["0", "1", "all"])
                inv = w.invoke(step % 5, "send", topic="t", partition=p, value=value, acks=acks)
                outcome = rng.random()
                if outcome < 0.8:
                    logs[p].append(value)
                    extra = {} if acks == "0" else {"offset": len(logs[p]) - 1}
                    w.complete(inv, "ok", **extra)
                    if rng.random() < 0.05:  # truncated later, offset reused: lost write
                        logs[p].pop()
                    elif rng.random() < 0.03:  # written twice: duplicate
                        logs[p].append(value)
                    elif rng.random() < 0.03:  # also written to another partition's log
                        logs[(p + 1) % partitions].append(value)
                    elif rng.random() < 0.03:  # a value no client sent, written twice
                        logs[p] += [90_000 + value, 90_000 + value]
                elif outcome < 0.9:
                    if rng.random() < 0.3:  # the client was told no, yet it was written
                        logs[p].append(value)
                    w.complete(inv, "fail", error="NOT_ENOUGH_REPLICAS")
                else:
                    if rng.random() < 0.5:
                        logs[p].append(value)
                    w.complete(inv, "info", error="REQUEST_TIMED_OUT")
                value += 1
            elif r < 0.95:
                proc = 10 + rng.randrange(3)
                log = logs[p]
                start = rng.randrange(len(log) + 1)
                recs = [
                    {"topic": "t", "partition": p, "offset": o, "value": log[o]}
                    for o in range(start, min(len(log), start + rng.randrange(1, 6)))
                ]
                if recs and rng.random() < 0.2:  # a read of something later replaced
                    recs[-1] = {**recs[-1], "value": 10_000 + value}
                    value += 1
                if len(recs) > 2 and rng.random() < 0.2:  # skip one record
                    del recs[1]
                w.complete(w.invoke(proc, "poll", final=False), "ok", records=recs)
            else:
                w.nemesis("kill", "start", {"node": 1})
                w.nemesis("kill", "stop", {"node": 1})
        for p in range(partitions - 1):  # the last partition gets no final read
            log = logs[p]
            for start in range(0, len(log), 7):
                recs = [
                    {"topic": "t", "partition": p, "offset": o, "value": log[o]}
                    for o in range(start, min(len(log), start + 7))
                ]
                w.complete(w.invoke(20, "poll", final=True), "ok", records=recs)


def planted_group(path: Path, seed: int, partitions: int = 2) -> None:
    """A random group history (docs/history-groups.md): members come and go, generations
    advance (or repeat), commits succeed, fail or go unanswered, and a member starts where
    it pleases: at the commit, below it, beyond it, or beside another member."""
    rng = random.Random(seed)
    logs = {p: list(range(1000 * p, 1000 * p + 30)) for p in range(partitions)}
    with HistoryWriter(path) as w:
        for p, log in logs.items():
            for o, v in enumerate(log):
                inv = w.invoke(0, "send", topic="t", partition=p, value=v, acks="all")
                w.complete(inv, "ok", offset=o)
        committed = dict.fromkeys(logs, 0)
        gen, rebalances = 0, dict.fromkeys(range(1, 6), 0)
        for _ in range(40):
            gen += 0 if rng.random() < 0.1 else 1  # now and then a generation comes twice
            for p, log in logs.items():
                owners = [rng.randrange(1, 6)] + ([rng.randrange(1, 6)] if rng.random() < 0.1
                                                  else [])
                for proc in owners:
                    rebalances[proc] += 1
                    start = max(0, min(len(log) - 1, committed[p] + rng.choice(
                        [0, 0, 0, -2, 2])))
                    stop = min(len(log), start + rng.randrange(1, 5))
                    recs = [{"topic": "t", "partition": p, "offset": o, "value": log[o],
                             "generation": gen, "rebalance": rebalances[proc]}
                            for o in range(start, stop)]
                    done = w.invoke(proc, "poll", final=False, group="g")
                    w.complete(done, "ok", records=recs, generation=gen)
                    offsets = [{"topic": "t", "partition": p, "offset": stop}]
                    inv = w.invoke(proc, "commit", group="g", offsets=offsets)
                    outcome = rng.random()
                    if outcome < 0.7:
                        committed[p] = stop
                        w.complete(inv, "ok")
                    elif outcome < 0.85:
                        w.complete(inv, "fail", error="ILLEGAL_GENERATION")
                    else:
                        if rng.random() < 0.5:
                            committed[p] = stop
                        w.complete(inv, "info", error="REQUEST_TIMED_OUT")
                    if rng.random() < 0.1:  # the coordinator forgets the last commit
                        committed[p] = max(0, committed[p] - 3)
        for p, log in logs.items():
            recs = [{"topic": "t", "partition": p, "offset": o, "value": v}
                    for o, v in enumerate(log)]
            w.complete(w.invoke(20, "poll", final=True), "ok", records=recs)


def test_spark_checker_agrees_with_the_reference(spark, tmp_path: Path) -> None:
    from harness.checker.check import check_runs

    runs = []
    for fixture in sorted(FIXTURES.iterdir()):
        if fixture.name == "malformed":
            continue
        run = tmp_path / fixture.name
        run.mkdir()
        shutil.copy(fixture / "history.jsonl", run / "history.jsonl")
        runs.append(run)
    (tmp_path / "bench").mkdir()
    generate(tmp_path / "bench" / "history.jsonl", 20_000, partitions=4, seed=3)
    runs.append(tmp_path / "bench")
    for seed in range(6):
        run = tmp_path / f"planted-{seed}"
        run.mkdir()
        planted(run / "history.jsonl", seed)
        runs.append(run)

    for seed in range(3):
        run = tmp_path / f"planted-group-{seed}"
        run.mkdir()
        planted_group(run / "history.jsonl", seed)
        runs.append(run)

    results = check_runs(runs, spark=spark)
    seen: set[str] = set()
    for run, result in zip(runs, results, strict=True):
        assert result.results is not None, result.error
        ref = reference_check(run / "history.jsonl")
        got = {"anomalies": result.results["anomalies"], "stats": result.results["stats"]}
        for name in ANOMALIES:
            assert got["anomalies"][name] == ref["anomalies"][name], (run.name, name)
        assert got["stats"] == ref["stats"], run.name
        seen |= {a for a, t in ref["anomalies"].items() if t["count"]}
    # The planted histories must really exercise every anomaly, or agreement says little.
    assert seen == set(ANOMALIES)
