"""`highwater run` end to end: real containers, Toxiproxy links, real clients, PySpark checker.

Each test runs the CLI as a subprocess (what `make run` and CI do) with a run id from the
session's factory, so the session-end check proves the cluster removed itself. Workloads are
shortened with --duration to keep the suite inside CI's budget.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hw_docker_util import leftovers

pytestmark = [pytest.mark.docker, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
PLANS = REPO / "chaos_plans"
HIGHWATER = [sys.executable, "-m", "harness.cli"]
RUN_TIMEOUT_S = 600


def _run(args: list[str], timeout_s: float = RUN_TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run([*HIGHWATER, "run", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout_s)


def _only_run(store: Path) -> Path:
    runs = [d for p in store.iterdir() if p.is_dir() and not p.is_symlink() for d in p.iterdir()]
    assert len(runs) == 1, runs
    return runs[0]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _explain(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"


def test_smoke_plan_is_valid_and_stores_every_artifact(
        cluster_images: dict[str, str], run_id_factory, tmp_path: Path) -> None:
    store = tmp_path / "store"
    proc = _run([str(PLANS / "smoke.yaml"), "--duration", "15", "--store", str(store),
                 "--run-id", run_id_factory("run-smoke")])
    assert proc.returncode == 0, _explain(proc)
    assert "verdict as-expected" in proc.stdout
    run = _only_run(store)
    for name in ("plan.yaml", "run.json", "history.jsonl", "states.jsonl", "results.json",
                 "report.html"):
        assert (run / name).is_file() and (run / name).stat().st_size > 0, name
    # Issue 13: a KRaft quorum of 3 controllers by default, each with its log and data dir.
    controllers = {"controller-1", "controller-2", "controller-3"}
    assert {p.name for p in (run / "logs").iterdir()} >= {
        "broker-1.log", "broker-2.log", "broker-3.log", "toxiproxy.log",
        *(f"{c}.log" for c in controllers)}
    assert {p.name for p in (run / "data").iterdir()} >= {"broker-1", "broker-2", "broker-3",
                                                          *controllers}
    assert (run / "quorum.jsonl").stat().st_size > 0  # the controller epoch timeline
    assert 'id="elections-controller"' in (run / "report.html").read_text()
    assert (store / "latest").resolve() == run.resolve()
    results = json.loads((run / "results.json").read_text())
    assert results["valid"] is True and results["verdict"] == "as-expected"
    assert results["stats"]["acked"] > 100
    # Issue 24: liveness and on-disk divergence are run checks in results.json and the report.
    conv = results["unconverged-replicas"]
    assert conv["count"] == 0 and set(conv["recovery_s"]) == {"t-0", "t-1"}, conv
    assert all(isinstance(t, float | int) for t in conv["recovery_s"].values()), conv
    assert results["diverged-offsets"]["count"] == 0, results["diverged-offsets"]
    html = (run / "report.html").read_text()
    assert 'id="convergence"' in html and 'id="anomaly-unconverged-replicas"' in html
    meta = json.loads((run / "run.json").read_text())
    assert meta["exit_code"] == 0 and meta["settled"] is True and isinstance(meta["seed"], int)
    # Every controller link crossed Toxiproxy, and the voters' committed logs were compared.
    assert all(not c["direct"] for n, c in meta["direct_connections"].items()
               if n in controllers), meta["direct_connections"]
    logs = meta["metadata_divergence"]["committed_log"]
    assert logs["count"] == 0 and logs["committed"] > 0 and not logs["unreadable"], logs
    final = [o for o in _lines(run / "history.jsonl") if o["f"] == "poll" and o.get("final")]
    assert final, "no drain reads"


def test_leader_kill_under_acks_all_is_valid_and_shows_leader_changes(
        cluster_images: dict[str, str], run_id_factory, tmp_path: Path) -> None:
    store = tmp_path / "store"
    proc = _run([str(PLANS / "leader-kill.yaml"), "--duration", "40", "--store", str(store),
                 "--run-id", run_id_factory("run-lk")])
    assert proc.returncode == 0, _explain(proc)
    run = _only_run(store)
    results = json.loads((run / "results.json").read_text())
    assert results["valid"] is True, results["anomalies"]
    assert results["anomalies"]["lost-write"]["count"] == 0
    ops = _lines(run / "history.jsonl")
    kills = [o for o in ops if o["process"] == "nemesis" and o["f"] == "kill"]
    assert [o["phase"] for o in kills] == ["start", "stop", "start", "stop"], kills
    # The leader of t-0 changed: samples from leaders show more than one leader epoch.
    samples = _lines(run / "states.jsonl")
    epochs = {s["epoch"] for s in samples if s["topic"] == "t" and s["partition"] == 0
              and s["role"] == "leader"}
    assert len(epochs) >= 3, epochs  # the first leader, then one per kill
    html = (run / "report.html").read_text()
    assert html.count('<g class="leader-change"') >= 3  # epoch 0, then one marker per kill


def test_bad_plan_exits_2_with_file_line_and_starts_nothing(
        run_id_factory, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text((PLANS / "smoke.yaml").read_text().replace("acks: all", "acks: two"))
    line = next(i for i, text in enumerate(bad.read_text().splitlines(), 1) if "acks: two" in text)
    store = tmp_path / "store"
    rid = run_id_factory("run-bad")
    proc = _run([str(bad), "--store", str(store), "--run-id", rid], timeout_s=60)
    assert proc.returncode == 2, _explain(proc)
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and f"{bad}:{line}:" in err[0] and "acks" in err[0], err
    assert not store.exists()
    assert leftovers([rid]) == []


def test_unconverged_replica_fails_the_run_though_nothing_was_lost(
        cluster_images: dict[str, str], run_id_factory, tmp_path: Path) -> None:
    """Issue 24's negative control: a follower killed a second before the workload ends, a
    0.5 s settle window. The history is valid; the liveness check fails the run (exit 1)."""
    store = tmp_path / "store"
    proc = _run([str(REPO / "tests/fixtures/plans/unconverged.yaml"), "--store", str(store),
                 "--run-id", run_id_factory("run-unconv")])
    assert proc.returncode == 1, _explain(proc)
    run = _only_run(store)
    results = json.loads((run / "results.json").read_text())
    assert results["valid"] is True, results["anomalies"]
    conv = results["unconverged-replicas"]
    assert conv["count"] >= 1 and conv["recovery_s"]["t-0"] is None, conv
    assert "verdict unexpected" in proc.stdout
    meta = json.loads((run / "run.json").read_text())
    assert meta["exit_code"] == 1 and meta["settled"] is False
