"""The min-isr table from a run directory (no docker): sends attributed to the ISR size the
leader reported when they completed, boundary sends apart, losses against the final log, and
the acks=all contract check."""

from __future__ import annotations

import json
from pathlib import Path

from harness.plan.loader import parse_plan
from harness.scenario.min_isr import check_acks_all, matrix_plan, render_html, render_text, tabulate

S = 1_000_000_000


def _write(run: Path, history: list[dict], states: list[dict]) -> None:
    (run / "history.jsonl").write_text("".join(json.dumps(h) + "\n" for h in history))
    (run / "states.jsonl").write_text("".join(json.dumps(s) + "\n" for s in states))


def _state(t: float, isr: list[int]) -> dict:
    return {"time": int(t * S), "node": 1, "topic": "t", "partition": 0, "role": "leader",
            "leader": 1, "epoch": 0, "hw": 0, "leo": 0, "isr": isr}


def _send(i: int, t: float, typ: str, acks: str = "all", error: str | None = None) -> dict:
    op = {"index": i, "time": int(t * S), "process": 0, "type": typ, "f": "send", "topic": "t",
          "partition": 0, "value": i, "acks": acks}
    if error:
        op["error"] = error
    return op


def test_tabulate_attributes_sends_to_isr_size_and_counts_losses(tmp_path: Path) -> None:
    states = [_state(0, [1, 2, 3]), _state(10, [1, 2]), _state(20, [1])]
    history = [
        _send(1, 5, "ok"), _send(2, 6, "ok"),                      # ISR 3, 2 is lost
        _send(3, 15, "ok"),                                        # ISR 2
        _send(4, 25, "fail", error="NOT_ENOUGH_REPLICAS"),         # ISR 1
        _send(5, 26, "info", error="_MSG_TIMED_OUT"),              # ISR 1
        _send(6, 10.2, "ok"),                                      # boundary
        _send(7, 5, "ok", acks="1"),
        {"index": 8, "time": 40 * S, "process": 9, "type": "ok", "f": "poll", "final": True,
         "records": [{"topic": "t", "partition": 0, "offset": o, "value": v}
                     for o, v in enumerate([1, 3, 6, 7])]},
    ]
    _write(tmp_path, history, states)
    rows = {(r.acks, r.isr): r.counts for r in tabulate(tmp_path, 2)}
    assert rows[("all", "3")]["ok"] == 2 and rows[("all", "3")]["lost"] == 1
    assert rows[("all", "2")]["ok"] == 1 and rows[("all", "2")]["lost"] == 0
    assert rows[("all", "1")]["NOT_ENOUGH_REPLICAS"] == 1 and rows[("all", "1")]["timeout"] == 1
    assert rows[("all", "boundary")]["ok"] == 1
    assert rows[("1", "3")]["ok"] == 1
    violations = check_acks_all(tabulate(tmp_path, 2))
    assert violations == ["Kafka 4.1 min.insync=2 ISR=3: 1 acknowledged writes lost"]
    text = render_text(tabulate(tmp_path, 2))
    assert "NOT_ENOUGH" in text and text.count("\n") >= 5
    assert "<table>" in render_html(tabulate(tmp_path, 2), {2: str(tmp_path)})


def test_contract_flags_errors_above_and_acks_below_min_isr(tmp_path: Path) -> None:
    states = [_state(0, [1, 2, 3]), _state(10, [1])]
    history = [_send(1, 5, "fail", error="NOT_ENOUGH_REPLICAS"), _send(2, 15, "ok")]
    _write(tmp_path, history, states)
    violations = check_acks_all(tabulate(tmp_path, 2))
    want = "Kafka 4.1 min.insync=2 ISR=3: 1 NOT_ENOUGH_REPLICAS with ISR >= min.insync"
    assert want in violations
    assert "Kafka 4.1 min.insync=2 ISR=1: 1 acknowledged with ISR < min.insync" in violations


def test_the_table_has_a_kafka_version_dimension(tmp_path: Path) -> None:
    states = [_state(0, [1, 2, 3])]
    _write(tmp_path, [_send(1, 5, "ok")], states)
    rows = tabulate(tmp_path, 2, "3.9") + tabulate(tmp_path, 2, "4.1")
    assert [r.kafka_version for r in rows] == ["3.9", "4.1"]
    text = render_text(rows).splitlines()
    assert text[0].split()[:2] == ["Kafka", "min.isr"]
    assert [line.split()[0] for line in text[2:]] == ["3.9", "4.1"]
    page = render_html(rows, {("3.9", 2): "a", ("4.1", 2): "b"})
    assert "<th>Kafka version</th>" in page and "<td>3.9</td>" in page
    assert "Kafka 3.9, min.insync.replicas=2" in page
    for v in ("3.9", "4.1"):
        plan = parse_plan(matrix_plan(2, v), "m")
        assert plan.cluster.kafka_version == v
    assert parse_plan(matrix_plan(2, "3.9"), "m").name == "min-isr-2-k39"


def test_generated_plans_load_for_every_min_isr() -> None:
    for m in (1, 2, 3):
        plan = parse_plan(matrix_plan(m), f"min-isr-{m}")
        assert plan.cluster.topics[0].min_insync_replicas == m
        assert {p.acks for p in plan.workload.producers} == {"0", "1", "all"}
        assert [s.action for s in plan.faults] == ["partition", "partition", "latency", "heal",
                                                   "kill"]
        assert [s.when is not None for s in plan.faults] == [True, True, True, False, True]
