"""The subscribe workload's commit modes, and cooperative-sticky members, on a local 3-broker
cluster with real confluent-kafka consumers (docs/history-groups.md, "Commit modes").

- Each commit mode (sync, async, auto, none): three members read a backlog while a producer
  writes, one member is replaced (a rebalance), and the history holds the commit ops the mode
  defines (sync/async: `ok` ops with the offsets read; auto: `info` `_OFFSETS_STORED` ops whose
  offsets librdkafka's auto-commit really stored in the group; none: no commit op); the
  checker finds no group anomaly and no lost write.
- cooperative-sticky: two members, a third joins, the first leaves: every revoke a staying
  member gets is incremental (never its whole assignment), a member keeps reading the
  partitions it keeps from where it was, and the checker finds no group anomaly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from harness.checker.history import validate_history
from harness.checker.reference import reference_check
from harness.client import ProcessIds, drain
from harness.group_client import GroupConsumerClient
from harness.plan.model import ConsumerSpec
from harness.store import Store
from harness.workload import ProducerJob, Workload

from .conftest import Cluster
from .helpers import create_topic as create
from .helpers import wait_until
from .test_group_workload import _generation
from .test_groups import BROKER_ARGS

pytestmark = pytest.mark.timeout(240)

TOPIC, PARTITIONS = "cm", 4
GROUP_ANOMALIES = ("commit-regression", "rebalance-skip", "double-assignment",
                   "generation-reuse")
CHECKED = (*GROUP_ANOMALIES, "lost-write", "nonmonotonic-poll", "poll-skip",
           "inconsistent-offset", "duplicate")


def _ops(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _reads(wl: Workload) -> int:
    return wl.stats["poll:ok"]


def _committed(bootstrap: str, group: str) -> dict[int, int]:
    """The group's committed offset per partition (OffsetFetch through a fresh consumer)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "enable.auto.commit": False})
    try:
        got = c.committed([KafkaTopicPartition(TOPIC, p) for p in range(PARTITIONS)],
                          timeout=15)
    finally:
        c.close()
    return {tp.partition: tp.offset for tp in got if tp.offset >= 0}


@pytest.mark.parametrize("commit", ["sync", "async", "auto", "none"])
def test_each_commit_mode_records_its_commits(cluster_factory, tmp_path: Path,
                                              commit: str) -> None:
    cluster: Cluster = cluster_factory(3, BROKER_ARGS)
    create(cluster.bootstrap, TOPIC, partitions=PARTITIONS, rf=3)
    group = f"cm-{commit}"
    run = Store(tmp_path / "store").create_run("commit-modes", {"name": commit})
    ids = ProcessIds()
    parts = [(TOPIC, p) for p in range(PARTITIONS)]
    history = run.history_writer()
    try:
        producer = [ProducerJob(slot=0, acks="all", rate=200, partitions=tuple(parts),
                                values=1600)]
        members = ConsumerSpec(count=3, poll_interval_ms=100, mode="subscribe", group=group,
                               max_poll_records=4, commit=commit)
        wl = Workload(lambda: cluster.bootstrap, history, producer, members,
                      consumer_topics=[TOPIC], new_process=ids)
        wl.start()
        try:
            first = wait_until(lambda: _reads(wl) >= 30 and _generation(wl), 60,
                               "three members of one generation reading")
            wl.restart_member(1)  # a rebalance: partitions move to other members
            wait_until(lambda: (_generation(wl) or 0) > first, 60,
                       "every member in a newer generation")
            before = _reads(wl)
            wait_until(lambda: _reads(wl) >= before + 30, 60, "reads after the rebalance")
            assert wl.wait_producers(timeout_s=60), "the producer did not finish"
        finally:
            assert wl.stop(timeout_s=30), "threads did not stop"
        assert wl.errors == []
        result = drain(cluster.bootstrap, history, parts, ids, timeout_s=60, idle_s=0.5)
    finally:
        history.close()
    assert result.complete, result.failed
    assert validate_history(run.history_path) == []

    ops = _ops(run.history_path)
    commits = [o for o in ops if o["f"] == "commit" and o["type"] != "invoke"]
    reads = [r for o in ops if o["f"] == "poll" and o["type"] == "ok" and not o["final"]
             for r in o["records"]]
    assert len({r["generation"] for r in reads}) >= 2, "no rebalance was recorded"
    if commit == "none":
        assert commits == []
    else:
        assert len(commits) >= 20, len(commits)
        assert {o.get("mode") for o in commits} == {None if commit == "sync" else commit}
    if commit in ("sync", "async"):
        # A member's commits are acknowledged (no fault here): each is an ok op.
        assert {o["type"] for o in commits} == {"ok"}, [o for o in commits if o["type"] != "ok"]
    if commit == "auto":
        assert {(o["type"], o["error"]) for o in commits} == {("info", "_OFFSETS_STORED")}
        # librdkafka's auto-commit sent what the members stored: every partition's committed
        # offset is one a commit op recorded (the last stored ones: the members closed).
        stored = {(c["partition"], c["offset"]) for o in commits for c in o["offsets"]}
        committed = _committed(cluster.bootstrap, group)
        assert set(committed) == set(range(PARTITIONS)), committed
        assert all((p, o) in stored for p, o in committed.items()), (committed, stored)

    found = reference_check(run.history_path)["anomalies"]
    counts = {a: found[a]["count"] for a in CHECKED}
    assert counts == dict.fromkeys(counts, 0), {a: found[a] for a in counts if counts[a]}


class Observed(GroupConsumerClient):
    """A member that also remembers its rebalance callbacks, in order (the test's record)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.callbacks: list[tuple[str, set[tuple[str, int]], set[tuple[str, int]]]] = []
        super().__init__(*args, **kwargs)

    def _on_assign(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        held = set(self.assignment)
        super()._on_assign(consumer, partitions)
        self.callbacks.append(("assign", {(tp.topic, tp.partition) for tp in partitions}, held))

    def _on_revoke(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        held = set(self.assignment)
        super()._on_revoke(consumer, partitions)
        self.callbacks.append(("revoke", {(tp.topic, tp.partition) for tp in partitions}, held))


def test_cooperative_sticky_members_rebalance_incrementally(cluster_factory,
                                                           tmp_path: Path) -> None:
    cluster: Cluster = cluster_factory(3, BROKER_ARGS)
    create(cluster.bootstrap, TOPIC, partitions=6, rf=3)
    parts = [(TOPIC, p) for p in range(6)]
    run = Store(tmp_path / "store").create_run("cooperative", {"name": "cooperative"})
    ids = ProcessIds()
    history = run.history_writer()
    members: list[Observed] = []

    def member() -> Observed:
        m = Observed(ids(), cluster.bootstrap, history, [TOPIC], "coop",
                     assignor="cooperative-sticky", max_records=5,
                     config={"session.timeout.ms": 6000, "heartbeat.interval.ms": 300})
        members.append(m)
        return m

    def round_(active: list[Observed]) -> None:
        for m in active:
            assert not m.crashed, f"member {m.process} crashed"
            m.poll(timeout_s=0.1)
            m.commit()

    def settle(active: list[Observed], what: str) -> None:
        """Poll until the members hold every partition between them, disjointly."""
        def done() -> bool:
            round_(active)
            held = [m.assignment for m in active]
            return (all(held) and sum(map(len, held)) == 6
                    and set().union(*held) == set(parts))
        wait_until(done, 60, what)

    producer = [ProducerJob(slot=0, acks="all", rate=300, partitions=tuple(parts), values=3000)]
    wl = Workload(lambda: cluster.bootstrap, history, producer, new_process=ids)
    try:
        wl.start()
        try:
            a, b = member(), member()
            settle([a, b], "two members sharing the partitions")
            for _ in range(10):
                round_([a, b])
            before_c = {m.process: set(m.assignment) for m in (a, b)}
            c = member()
            settle([a, b, c], "the third member given partitions")
            for _ in range(10):
                round_([a, b, c])
            # what each member's callbacks were while it stayed (its own close revokes all)
            upto = {a.process: len(a.callbacks)}
            a.close()  # LeaveGroup: its partitions move, the others keep theirs
            settle([b, c], "two members again")
            for _ in range(10):
                round_([b, c])
            upto |= {m.process: len(m.callbacks) for m in (b, c)}
            assert wl.wait_producers(timeout_s=60), "the producer did not finish"
        finally:
            assert wl.stop(timeout_s=30)
            for m in members[1:]:
                m.close()
        result = drain(cluster.bootstrap, history, parts, ids, timeout_s=60, idle_s=0.5)
    finally:
        history.close()
    assert result.complete, result.failed
    assert validate_history(run.history_path) == []

    # No eager revoke: while a member stays in the group, a revoke takes only some of what it
    # holds (cooperative), and A and B each kept partitions across C's join.
    for m in (a, b, c):
        for kind, got, held in m.callbacks[:upto[m.process]]:
            if kind == "revoke" and got:
                assert got < held, (m.process, m.callbacks)
    took = set()
    for m in (a, b):
        revoked = set().union(*(got for k, got, _ in m.callbacks[:upto[m.process]]
                                if k == "revoke"))
        assert before_c[m.process] - revoked, (m.process, m.callbacks)
        took |= revoked & before_c[m.process]
    assert took, "C's join took nothing from A or B"

    ops = _ops(run.history_path)
    # Positions continue: a member's reads of a partition it kept go on from where they were
    # (offset + 1), across the generations, never back to a committed offset.
    last: dict[tuple[int, str, int], int] = {}
    for o in ops:
        if o["f"] != "poll" or o["type"] != "ok" or o["final"]:
            continue
        for r in o["records"]:
            key = (o["process"], r["topic"], r["partition"])
            if key in last:
                assert r["offset"] > last[key], (key, r, last[key])
            last[key] = r["offset"]
    gens = {r["generation"] for o in ops if o["f"] == "poll" and o["type"] == "ok"
            and not o["final"] for r in o["records"]}
    assert len(gens) >= 2, gens

    found = reference_check(run.history_path)["anomalies"]
    counts = {k: found[k]["count"] for k in CHECKED}
    assert counts == dict.fromkeys(counts, 0), {k: found[k] for k in counts if counts[k]}
