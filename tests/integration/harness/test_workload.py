"""The harness's clients, generator, drain and store against one real local broker process.

A few seconds of acks=1 and acks=all producers plus a polling consumer, then a drain: the
history must validate, pair every invoke with one completion, mark the drain's polls final,
and the Spark checker must find the run valid.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.checker.history import validate_history
from harness.client import ConsumerClient, ProcessIds, ProducerClient, drain
from harness.plan.model import ConsumerSpec
from harness.store import Store
from harness.workload import ProducerJob, Workload

from ..clients import create_topic

TOPIC = "hw"
PARTS = [(TOPIC, 0), (TOPIC, 1)]


def _ops(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _assert_paired(ops: list[dict]) -> None:
    in_flight: dict[int, dict] = {}
    for op in ops:
        if op["process"] == "nemesis":
            continue
        if op["type"] == "invoke":
            assert op["process"] not in in_flight, f"two ops in flight: {op}"
            in_flight[op["process"]] = op
        else:
            inv = in_flight.pop(op["process"])
            assert inv["f"] == op["f"]
    assert not in_flight, f"ops never completed: {list(in_flight.values())[:3]}"


def test_producer_ok_offsets_and_definite_fail(broker, tmp_path: Path) -> None:
    create_topic(broker.bootstrap, TOPIC, partitions=2)
    run = Store(tmp_path / "store").create_run("single", {"name": "single"})
    with run.history_writer() as history:
        p = ProducerClient(0, broker.bootstrap, history, acks="all", timeout_ms=5000)
        try:
            oks = [p.send(TOPIC, 1, v) for v in range(5)]
            # Partition 7 does not exist: librdkafka fails it locally, nothing was sent.
            bad = p.send(TOPIC, 7, 99)
        finally:
            p.close()
    assert [o["type"] for o in oks] == ["ok"] * 5
    assert [o["offset"] for o in oks] == [0, 1, 2, 3, 4]
    assert bad["type"] == "fail" and bad["error"] in ("_UNKNOWN_PARTITION", "UNKNOWN_TOPIC_OR_PART")
    assert validate_history(run.history_path) == []


def test_acks0_ok_has_no_offset(broker, tmp_path: Path) -> None:
    create_topic(broker.bootstrap, TOPIC, partitions=1)
    with Store(tmp_path).create_run("a0").history_writer() as history:
        p = ProducerClient(0, broker.bootstrap, history, acks="0", timeout_ms=5000)
        try:
            done = p.send(TOPIC, 0, 1)
        finally:
            p.close()
    assert done["type"] == "ok" and "offset" not in done


def test_producer_to_dead_broker_is_info_and_crashed(tmp_path: Path) -> None:
    from ..conftest import free_port

    with Store(tmp_path).create_run("dead").history_writer() as history:
        p = ProducerClient(3, f"127.0.0.1:{free_port()}", history, acks="1", timeout_ms=1500)
        try:
            done = p.send(TOPIC, 0, 1)
        finally:
            p.close()
    assert done["type"] == "info" and done["error"].startswith("_")
    assert p.crashed
    with pytest.raises(RuntimeError):
        p.send(TOPIC, 0, 2)


def test_workload_drain_and_checker_valid(broker, tmp_path: Path) -> None:
    create_topic(broker.bootstrap, TOPIC, partitions=2)
    store = Store(tmp_path / "store")
    run = store.create_run("smoke", {"name": "smoke", "expected": {}})
    ids = ProcessIds()
    history = run.history_writer()
    try:
        jobs = [
            ProducerJob(slot=0, acks="1", rate=40, partitions=tuple(PARTS), duration_s=3),
            ProducerJob(slot=1, acks="all", rate=40, partitions=tuple(PARTS), values=60),
        ]
        wl = Workload(
            broker.bootstrap,
            history,
            jobs,
            ConsumerSpec(count=1, poll_interval_ms=100),
            PARTS,
            new_process=ids,
        )
        wl.start()
        try:
            assert wl.wait_producers(timeout_s=60), "producers did not finish"
        finally:
            assert wl.stop(timeout_s=30), "threads did not stop"
        assert wl.errors == []
        history.nemesis("kill", "start", {"node": 1})  # windows must not disturb the checker
        history.nemesis("kill", "stop", {"node": 1})
        result = drain(broker.bootstrap, history, PARTS, ids, timeout_s=60, idle_s=0.5)
    finally:
        history.close()
    assert result.complete, result.failed

    assert validate_history(run.history_path) == []
    ops = _ops(run.history_path)
    _assert_paired(ops)
    sends = [o for o in ops if o["f"] == "send" and o["type"] == "ok"]
    assert {o["acks"] for o in sends} == {"1", "all"}
    assert len([o for o in sends if o["acks"] == "all"]) == 60
    assert {o["partition"] for o in sends} == {0, 1}
    assert wl.stats["send:ok"] == len(sends)
    values = [o["value"] for o in ops if o["f"] == "send" and o["type"] == "invoke"]
    assert len(values) == len(set(values))
    live = [o for o in ops if o["f"] == "poll" and o["type"] == "ok" and not o["final"]]
    assert any(o["records"] for o in live), "the live consumer read nothing"
    final = [o for o in ops if o["f"] == "poll" and o["type"] == "ok" and o["final"]]
    final_values = {r["value"] for o in final for r in o["records"]}
    assert {o["value"] for o in sends} <= final_values
    assert result.drained == {
        f"{TOPIC}-{p}": 1 + max(o["offset"] for o in sends if o["partition"] == p) for p in (0, 1)
    }

    from harness.checker.check import check_runs

    [res] = check_runs([run.path])
    assert res.error is None, res.error
    assert res.results["valid"] is True, res.results["anomalies"]
    assert res.results["stats"]["acked"] == len(sends)
    assert json.loads(run.results_path.read_text())["verdict"] == "as-expected"


def test_consumer_poll_records_and_drain_of_empty_partition(broker, tmp_path: Path) -> None:
    create_topic(broker.bootstrap, TOPIC, partitions=2)
    ids = ProcessIds()
    with Store(tmp_path).create_run("c").history_writer() as history:
        p = ProducerClient(ids(), broker.bootstrap, history, acks="1")
        try:
            for v in range(3):
                assert p.send(TOPIC, 0, v)["type"] == "ok"
        finally:
            p.close()
        c = ConsumerClient(ids(), broker.bootstrap, history, [(TOPIC, 0)])
        try:
            got: list[dict] = []
            for _ in range(40):
                got += c.poll(timeout_s=0.25)["records"]
                if len(got) >= 3:
                    break
        finally:
            c.close()
        assert got == [{"topic": TOPIC, "partition": 0, "offset": i, "value": i} for i in range(3)]
        result = drain(broker.bootstrap, history, PARTS, ids, timeout_s=30, idle_s=0.3)
    assert result.drained == {f"{TOPIC}-0": 3, f"{TOPIC}-1": 0}


def test_broker_crash_replaces_clients_and_report_renders(broker, tmp_path: Path) -> None:
    """SIGKILL the broker mid-run and restart it: sends in flight end `info`, their clients are
    replaced by new process numbers, the history stays well-formed, and the run's report has
    its plots and the kill window."""
    import signal
    import threading

    from harness.report import write_report

    create_topic(broker.bootstrap, TOPIC, partitions=2)
    run = Store(tmp_path / "store").create_run("crash", {"name": "crash"})
    ids = ProcessIds()
    history = run.history_writer()
    try:
        jobs = [ProducerJob(slot=i, acks="1", rate=30, partitions=tuple(PARTS), duration_s=7,
                            timeout_ms=1500) for i in range(2)]
        wl = Workload(broker.bootstrap, history, jobs, ConsumerSpec(count=1), PARTS,
                      new_process=ids)
        wl.start()
        try:
            assert not wl.stop_event.wait(1.5)
            history.nemesis("kill", "start", {"node": 1})
            broker.signal(signal.SIGKILL)
            threading.Event().wait(2.0)
            broker.start()
            history.nemesis("kill", "stop", {"node": 1})
            assert wl.wait_producers(timeout_s=60), "producers did not finish"
        finally:
            assert wl.stop(timeout_s=30), "threads did not stop"
        assert wl.errors == []
        result = drain(broker.bootstrap, history, PARTS, ids, timeout_s=60, idle_s=0.5)
    finally:
        history.close()
    assert result.complete, result.failed
    assert validate_history(run.history_path) == []
    ops = _ops(run.history_path)
    _assert_paired(ops)
    done = [o for o in ops if o["f"] == "send" and o["type"] != "invoke"]
    assert any(o["type"] in ("info", "fail") for o in done), "the kill went unnoticed"
    healed = next(o["index"] for o in ops if o["process"] == "nemesis" and o["phase"] == "stop")
    assert any(o["type"] == "ok" and o["index"] > healed for o in done), "no recovery"
    send_processes = {o["process"] for o in done}
    assert len(send_processes) > 2, "no producer was replaced after an info"
    for o in done:
        if o["type"] == "info":  # an info'd process never sends again
            later = [x for x in ops if x["process"] == o["process"] and x["index"] > o["index"]]
            assert later == []

    html = write_report(run.path).read_text()
    assert html.count("<svg") == 2  # latency and throughput (no states.jsonl here)
    assert 'class="fault"' in html and "kill node=1" in html


def test_smoke_plan_on_one_broker_end_to_end(broker, tmp_path: Path) -> None:
    """chaos_plans/smoke.yaml shrunk to one broker: store, workload from the plan, drain,
    checker (expectations from the stored plan.yaml) and report, as `highwater run` chains them."""
    from harness.checker.check import check_runs
    from harness.plan.loader import load_plan
    from harness.plan.serialize import plan_to_data
    from harness.report import write_report
    from harness.workload import workload_from_plan

    repo = Path(__file__).resolve().parents[3]
    plan = load_plan(repo / "chaos_plans" / "smoke.yaml", {
        "cluster.brokers": "1", "cluster.topics.0.replication_factor": "1",
        "cluster.topics.0.min_insync_replicas": "1", "workload.producers.values": "40",
    })
    create_topic(broker.bootstrap, "t", partitions=2)
    store = Store(tmp_path / "store")
    run = store.create_run(plan.name, plan_to_data(plan))
    run.write_meta(seed=1234)
    ids = ProcessIds()
    history = run.history_writer()
    try:
        wl = workload_from_plan(plan, broker.bootstrap, history, new_process=ids)
        wl.start()
        try:
            assert wl.wait_producers(timeout_s=60)
        finally:
            assert wl.stop(timeout_s=30)
        parts = [("t", 0), ("t", 1)]
        result = drain(broker.bootstrap, history, parts, ids, timeout_s=plan.drain.timeout_s,
                       idle_s=0.5)
    finally:
        history.close()
    assert result.complete, result.failed
    assert wl.stats["send:ok"] == 80  # 2 producers x 40 values, acks=all
    [res] = check_runs([store.latest().path])
    assert res.error is None, res.error
    assert res.results["verdict"] == "as-expected", res.results
    assert res.results["expected"]["lost-write"] == "== 0"
    html = write_report(run.path).read_text()
    assert "as-expected" in html and '<code id="seed">1234</code>' in html

