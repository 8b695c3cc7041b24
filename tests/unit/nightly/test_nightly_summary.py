"""The night's summary on fixture run dirs: real histories (HistoryWriter), real results.json
(check_runs), one Spark job -> per-plan metrics, trend with a previous night, junit.xml that
xml.etree and junitparser read, summary.html self-contained."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.checker.check import check_runs
from harness.nightly.junit import junit_xml
from harness.nightly.night import build_summary, load_previous, write_json
from harness.nightly.page import summary_html
from harness.nightly.schedule import RAN, SKIPPED, RunRecord
from harness.nightly.summary import summarize
from harness.store.history import HistoryWriter

pytestmark = pytest.mark.spark
MS = 1_000_000


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    from harness.checker.check import spark_session

    session = spark_session("local[2]", driver_memory="1g")
    try:
        yield session
    finally:
        session.stop()


def make_run(run_dir: Path, latencies_ms: list[int], read: int | None = None) -> Path:
    """Process 0 sends one value per second (invoke at i s, ok after latencies_ms[i]); process 1
    does a final poll reading the first `read` of them (default all)."""
    run_dir.mkdir(parents=True)
    now = [0]
    with HistoryWriter(run_dir / "history.jsonl", clock=lambda: now[0]) as h:
        for i, lat in enumerate(latencies_ms):
            now[0] = i * 1000 * MS
            inv = h.invoke(0, "send", topic="t", partition=0, value=i + 1, acks="all")
            now[0] += lat * MS
            h.complete(inv, "ok", offset=i)
        now[0] += 500 * MS
        poll = h.invoke(1, "poll", final=True)
        n = len(latencies_ms) if read is None else read
        records = [{"topic": "t", "partition": 0, "offset": i, "value": i + 1} for i in range(n)]
        now[0] += 10 * MS
        h.complete(poll, "ok", records=records)
    return run_dir


@pytest.fixture(scope="module")
def night(spark, tmp_path_factory):
    store = tmp_path_factory.mktemp("store")
    a = make_run(store / "smoke" / "20250102T010000.000Z", [10, 20, 30, 40])
    b = make_run(store / "smoke" / "20250102T011000.000Z", [50, 60])
    c = make_run(store / "lossy" / "20250102T012000.000Z", [5, 5], read=1)  # loses value 2
    broken = store / "broken" / "20250102T013000.000Z"  # exit 2: history, no results.json
    make_run(broken, [7])
    results = check_runs([a, b, c], spark=spark)
    assert [r.verdict for r in results] == ["as-expected", "as-expected", "unexpected"]
    # A previous night (kept in the store) and an unreadable one.
    for date, tput, anomalies in (("2025-01-01", 1.25, 0), ("2024-12-31", 2.5, 3)):
        prev = store / "nightly" / date
        prev.mkdir(parents=True)
        write_json(prev / "summary.json", {"date": date, "plans": {
            "smoke": {"verdict": "as-expected", "throughput": tput, "anomalies_total": anomalies},
            "retired": {"verdict": "unexpected", "throughput": 9.0, "anomalies_total": 1}}})
    (store / "nightly" / "2024-12-30").mkdir()
    (store / "nightly" / "2024-12-30" / "summary.json").write_text("{not json")
    later = store / "nightly" / "2025-01-03"  # after tonight: not a previous night
    later.mkdir()
    write_json(later / "summary.json", {"date": "2025-01-03", "plans": {}})

    records = [
        RunRecord(0, "smoke", "plan", 11, RAN, plan="smoke.yaml", exit_code=0, run_dir=str(a),
                  elapsed_s=30.0),
        RunRecord(1, "smoke", "plan", 12, RAN, plan="smoke.yaml", exit_code=0, run_dir=str(b),
                  elapsed_s=20.0),
        RunRecord(2, "lossy", "plan", 13, RAN, plan="lossy.yaml", exit_code=1, run_dir=str(c),
                  elapsed_s=10.0),
        RunRecord(3, "broken", "plan", 14, RAN, plan="broken.yaml", exit_code=2,
                  run_dir=str(broken), reason="could not be carried out: docker gone"),
        RunRecord(4, "late", "plan", 15, SKIPPED, plan="late.yaml", reason="budget 60s spent"),
    ]
    metrics = summarize(spark, [(r.run_dir, r.label) for r in records if r.run_dir])
    previous, warnings = load_previous(store / "nightly", "2025-01-02")
    summary = build_summary("2025-01-02", records, metrics, previous, warnings=warnings,
                            suite="nightly.yaml", budget_s=60.0, started="2025-01-02T01:00:00Z")
    out = store / "nightly" / "2025-01-02"
    out.mkdir()
    (out / "junit.xml").write_bytes(junit_xml(summary))
    (out / "summary.html").write_text(summary_html(summary, out))
    write_json(out / "summary.json", summary)
    return {"summary": summary, "out": out, "runs": {"a": a, "b": b, "c": c, "broken": broken}}


def test_per_run_metrics_come_from_the_history(night) -> None:
    runs = night["summary"]["runs"]
    a = runs[0]
    assert a["verdict"] == "as-expected" and a["acked"] == 4
    assert a["workload_s"] == pytest.approx(3.04)  # first invoke 0 s, last ok 3.04 s
    assert a["throughput"] == pytest.approx(4 / 3.04, abs=1e-3)
    # Spark's exact percentile interpolates: [10, 20, 30, 40] -> p50 25, p99 39.7.
    assert a["latency_ms"] == {"p50": pytest.approx(25.0), "p99": pytest.approx(39.7)}
    assert runs[2]["verdict"] == "unexpected" and runs[2]["anomalies"]["lost-write"] == 1
    assert runs[2]["replay"] == f"highwater run --replay {night['runs']['c']}"
    assert runs[3]["verdict"] == "error" and runs[3]["anomalies"] is None
    assert runs[3]["acked"] == 1  # its history is still summarized
    assert runs[4]["verdict"] == "skipped" and "acked" not in runs[4]


def test_per_plan_metrics_pool_the_plans_runs(night) -> None:
    plans = night["summary"]["plans"]
    smoke = plans["smoke"]
    assert (smoke["verdict"], smoke["runs"], smoke["skipped"]) == ("as-expected", 2, 0)
    assert smoke["acked"] == 6
    assert smoke["workload_s"] == pytest.approx(3.04 + 1.06)
    assert smoke["throughput"] == pytest.approx(6 / 4.1, abs=1e-3)
    assert smoke["latency_ms"]["p50"] == pytest.approx(35.0)  # pooled [10..60]
    assert smoke["anomalies_total"] == 0
    assert plans["lossy"]["verdict"] == "unexpected" and plans["lossy"]["anomalies_total"] == 1
    assert plans["broken"]["verdict"] == "error"
    assert plans["late"]["verdict"] == "skipped" and plans["late"]["skipped"] == 1
    assert night["summary"]["failed"] == ["lossy", "broken"]
    assert night["summary"]["exit_code"] == 1


def test_trend_includes_previous_nights_and_ignores_bad_ones(night) -> None:
    s = night["summary"]
    trend = s["trend"]
    assert trend["nights"] == ["2024-12-31", "2025-01-01", "2025-01-02"]
    smoke = trend["plans"]["smoke"]
    assert [p["throughput"] for p in smoke[:2]] == [2.5, 1.25]
    assert smoke[2]["throughput"] == pytest.approx(6 / 4.1, abs=1e-3)
    assert trend["plans"]["retired"][2] is None and trend["plans"]["lossy"][0] is None
    assert any("2024-12-30" in w and "ignored" in w for w in s["warnings"])
    saved = json.loads((night["out"] / "summary.json").read_text())
    assert saved["trend"]["nights"] == trend["nights"]


def test_junit_parses_with_etree(night) -> None:
    root = ET.parse(night["out"] / "junit.xml").getroot()
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("5", "2", "1")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert set(cases) == {"smoke seed=11", "smoke seed=12", "lossy seed=13", "broken seed=14",
                          "late seed=15"}
    fail = cases["lossy seed=13"].find("failure")
    assert fail is not None and "lost-write=1" in fail.get("message")
    assert str(night["runs"]["c"]) in fail.get("message")
    assert "lost-write" in fail.text and "highwater run --replay" in fail.text
    assert cases["broken seed=14"].find("failure").get("type") == "error"
    assert "docker gone" in cases["broken seed=14"].find("failure").get("message")
    assert cases["late seed=15"].find("skipped").get("message") == "budget 60s spent"
    assert cases["smoke seed=11"].find("failure") is None


def test_junit_parses_with_junitparser(night) -> None:
    junitparser = pytest.importorskip("junitparser")
    xml = junitparser.JUnitXml.fromfile(str(night["out"] / "junit.xml"))
    [suite] = list(xml)
    outcome = {}
    for case in suite:
        kinds = {type(r).__name__ for r in case.result}
        outcome[case.name] = kinds
    assert outcome["lossy seed=13"] == {"Failure"} and outcome["broken seed=14"] == {"Failure"}
    assert outcome["late seed=15"] == {"Skipped"} and outcome["smoke seed=11"] == set()
    assert (suite.tests, suite.failures, suite.skipped) == (5, 2, 1)


def test_summary_html_is_offline_and_links_runs(night) -> None:
    html = (night["out"] / "summary.html").read_text()
    assert html.count("<svg") == 2 and "<script" not in html
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html
    assert 'href="../../smoke/20250102T010000.000Z"' in html
    assert f"highwater run --replay {night['runs']['c']}" in html
    assert "2024-12-31" in html and "retired" in html


def test_summary_takes_a_scenario_run_dir_and_the_scenarios_verdict(spark, tmp_path) -> None:
    # A `highwater scenario run` run dir is a run dir of the store like any other: the one
    # Spark job reads its history; the row's verdict is the scenario's own, not results.json's.
    run_dir = make_run(tmp_path / "L1-fixed" / "20250102T020000.000Z", [10, 30])
    [result] = check_runs([run_dir], spark=spark)
    assert result.verdict == "as-expected"
    rec = RunRecord(0, "L1-fixed", "scenario", 21, RAN, plan="scenarios/L1.yaml", mode="fixed",
                    exit_code=1, run_dir=str(run_dir), run_dirs=[str(run_dir)],
                    verdict="unexpected", reason="not reproduced: lost-write 1")
    metrics = summarize(spark, [(d, rec.label) for d in rec.run_dirs])
    assert metrics["runs"][str(run_dir.resolve())]["acked"] == 2
    summary = build_summary("2025-01-02", [rec], metrics)
    [row] = summary["runs"]
    assert row["verdict"] == "unexpected" and row["acked"] == 2 and row["kind"] == "scenario"
    assert summary["plans"]["L1-fixed"]["verdict"] == "unexpected" and summary["exit_code"] == 1
    case = ET.fromstring(junit_xml(summary)).find("testsuite/testcase")
    message = case.find("failure").get("message")
    assert "scenario verdict unexpected: not reproduced: lost-write 1" in message
    assert str(run_dir) in message
