"""`highwater nightly` end to end: a tiny suite (the smoke plan, shortened) under a short budget
runs one real plan, skips the rest, and writes summary.html, summary.json and junit.xml."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
SMOKE = REPO / "chaos_plans" / "smoke.yaml"
NIGHTLY_TIMEOUT_S = 900


def test_short_budget_nightly_writes_all_three_outputs(
        cluster_images: dict[str, str], run_id_factory, tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: tiny\nentries:\n"
        f"  - plan: {SMOKE}\n    duration: 10\n"
        f"  - plan: {SMOKE}\n    duration: 10\n    name: smoke-again\n"
        "  - min-isr: {}\n"
    )
    store = tmp_path / "store"
    prev = store / "nightly" / "2025-01-01"
    prev.mkdir(parents=True)
    (prev / "summary.json").write_text(json.dumps({"date": "2025-01-01", "plans": {
        "smoke": {"verdict": "as-expected", "throughput": 50.0, "anomalies_total": 0}}}))
    prefix = run_id_factory("nightly")
    run_id_factory("nightly0")  # the one run that starts: tracked by the session-end check
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", "nightly", "--suite", str(suite), "--budget", "5s",
         "--store", str(store), "--date", "2025-01-02", "--run-id-prefix", prefix],
        cwd=REPO, capture_output=True, text=True, timeout=NIGHTLY_TIMEOUT_S)
    explain = f"exit {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, explain
    out = store / "nightly" / "2025-01-02"
    for name in ("summary.html", "summary.json", "junit.xml"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name

    summary = json.loads((out / "summary.json").read_text())
    runs = summary["runs"]
    assert [r["status"] for r in runs] == ["ran", "skipped", "skipped"], runs
    smoke = runs[0]
    assert smoke["verdict"] == "as-expected" and smoke["exit_code"] == 0
    assert Path(smoke["run_dir"]).parent.name == "smoke"
    assert (Path(smoke["run_dir"]) / "results.json").is_file()
    assert smoke["acked"] > 0 and smoke["throughput"] > 0
    assert 0 < smoke["latency_ms"]["p50"] <= smoke["latency_ms"]["p99"]
    assert all("budget" in r["reason"] for r in runs[1:])
    assert summary["trend"]["nights"] == ["2025-01-01", "2025-01-02"]

    suite_el = ET.parse(out / "junit.xml").getroot().find("testsuite")
    assert suite_el is not None
    assert (suite_el.get("tests"), suite_el.get("failures"), suite_el.get("skipped")) == (
        "3", "0", "2")
    junitparser = pytest.importorskip("junitparser")
    [js] = list(junitparser.JUnitXml.fromfile(str(out / "junit.xml")))
    assert (js.tests, js.failures, js.skipped) == (3, 0, 2)

    html = (out / "summary.html").read_text()
    assert "<svg" in html and "<script" not in html and "smoke-again" in html
