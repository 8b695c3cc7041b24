"""The Spark checker on hand-written fixture histories: each anomaly alone, results.json shape."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.checker.history import ANOMALIES

pytestmark = pytest.mark.spark

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "histories"

# fixture -> (anomaly it must trigger, count, by_partition, examples)
SINGLE = {
    "lost-write": ("lost-write", 2, {"t-0": 2}, [[2, 3], [4, 5]]),
    "inconsistent-offset": ("inconsistent-offset", 1, {"t-0": 1}, [[1, 3]]),
    "uncommitted-read": ("uncommitted-read", 1, {"t-0": 1}, [[5]]),
    "duplicate": ("duplicate", 1, {"t-0": 1}, [[3, 5]]),
    "nonmonotonic-poll": ("nonmonotonic-poll", 1, {"t-0": 1}, [[5, 7]]),
    "poll-skip": ("poll-skip", 1, {"t-0": 1}, [[7, 9]]),
    "lost-failure": ("lost-failure", 1, {"t-0": 1}, [[0, 1, 3]]),
    "unseen-info": ("unseen-info", 1, {"t-0": 1}, [[0, 1, 3]]),
    "no-final-read": ("no-final-read", 1, {"t-1": 1}, [[2]]),
    # docs/history-groups.md
    "commit-regression": ("commit-regression", 1, {"t-0": 1}, [[11, 15]]),
    "rebalance-skip": ("rebalance-skip", 1, {"t-0": 1}, [[13]]),
    "double-assignment": ("double-assignment", 1, {"t-0": 1}, [[5, 7]]),
    "generation-reuse": ("generation-reuse", 1, {"t-0": 1}, [[9, 13]]),
}
# group-clean: at-least-once re-reads across generations (a rewind to the acknowledged commit,
# a member re-reading its own records in a later generation) are no anomaly.
CLEAN = ("clean", "edges", "group-clean")
# Fixtures whose one fault shows as several anomalies: every count, and examples.
SEVERAL = {
    # docs/history-truncation-skip.md: two records read, then replaced, and read past
    "truncation-skip": {"lost-write": (2, [[2, 3], [4, 5]]),
                        "inconsistent-offset": (2, [[3, 9], [5, 11]]),
                        "uncommitted-read": (2, [[7], [7]]),
                        "truncation-skip": (2, [[7, 15], [7, 15]])},
}


@pytest.fixture(scope="module")
def checked(spark, tmp_path_factory):
    """Every fixture checked in ONE check_runs call (as a nightly summary does)."""
    from harness.checker.check import check_runs

    root = tmp_path_factory.mktemp("runs")
    names = [*SINGLE, *CLEAN, *SEVERAL, "malformed"]
    for name in names:
        (root / name).mkdir()
        shutil.copy(FIXTURES / name / "history.jsonl", root / name / "history.jsonl")
    results = check_runs([root / n for n in names], spark=spark)
    return {n: r for n, r in zip(names, results, strict=True)}


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_each_fixture_triggers_its_anomaly_and_no_other(checked, name) -> None:
    anomaly, count, by_partition, examples = SINGLE[name]
    res = checked[name].results
    assert res is not None, checked[name].error
    got = res["anomalies"][anomaly]
    assert (got["count"], got["by_partition"], got["examples"]) == (count, by_partition, examples)
    others = {a: res["anomalies"][a]["count"] for a in ANOMALIES if a != anomaly}
    assert others == dict.fromkeys(others, 0)
    assert res["valid"] is (anomaly == "unseen-info")


@pytest.mark.parametrize("name", sorted(SEVERAL))
def test_fixture_with_several_anomalies(checked, name) -> None:
    res = checked[name].results
    got = {a: (v["count"], v["examples"]) for a, v in res["anomalies"].items() if v["count"]}
    assert got == SEVERAL[name]


@pytest.mark.parametrize("name", CLEAN)
def test_clean_histories_are_valid(checked, name) -> None:
    res = checked[name].results
    assert res["valid"] is True and res["verdict"] == "as-expected"
    assert {a: v["count"] for a, v in res["anomalies"].items()} == dict.fromkeys(ANOMALIES, 0)


def test_edge_case_stats(checked) -> None:
    # acks=0 ok without offset, info + fail sends that never happened, a crashed process's
    # invoke without completion, empty polls, nemesis ops between invoke and completion.
    stats = checked["edges"].results["stats"]
    assert stats == {
        "sends": 7,
        "acked": 4,
        "failed": 1,
        "info": 1,
        "polls": 6,
        "lost_by_acks": {"all": 0, "1": 0, "0": 0},
    }


def test_lost_by_acks(checked) -> None:
    assert checked["lost-write"].results["stats"]["lost_by_acks"] == {"all": 0, "1": 1, "0": 1}


def test_results_json_shape_on_disk(checked) -> None:
    path = checked["lost-write"].run_dir / "results.json"
    res = json.loads(path.read_text())
    assert list(res) == ["valid", "anomalies", "stats", "expected", "verdict"]
    assert list(res["anomalies"]) == list(ANOMALIES)
    for a in res["anomalies"].values():
        assert set(a) == {"count", "by_partition", "examples"}
        assert len(a["examples"]) <= 10
        assert all(isinstance(i, int) for ex in a["examples"] for i in ex)
    assert set(res["stats"]) == {"sends", "acked", "failed", "info", "polls", "lost_by_acks"}
    assert res["expected"] == {} and res["verdict"] == "unexpected" and res["valid"] is False


def test_malformed_history_is_an_error_with_file_and_line(checked) -> None:
    r = checked["malformed"]
    assert r.results is None and r.verdict == "error"
    assert "malformed/history.jsonl:2: partition" in r.error
    assert not (r.run_dir / "results.json").exists()


@pytest.mark.parametrize("sidecars", [True, False])
def test_index_repeated_by_another_process_with_one_missing(spark, tmp_path, copy_fixture,
                                                            sidecars) -> None:
    """A repeated index and a missing one leave the count and the span as they should be: only
    a per-index count sees it, whichever processes (nemesis included) hold the two lines."""
    from harness.checker.check import check_runs

    runs = {}
    for name, old, new in (("nemesis-dup", '"index":1,', '"index":0,'),  # nemesis vs process 0
                           ("client-dup", '"index":6,', '"index":4,')):  # process 1 vs 0
        run = copy_fixture("clean", tmp_path / name)
        history = run / "history.jsonl"
        history.write_text(history.read_text().replace(old, new, 1))
        runs[name] = run
    found = check_runs(list(runs.values()), spark=spark, sidecars=sidecars)
    for (name, run), r in zip(runs.items(), found, strict=True):
        assert r.results is None and "index" in r.error, (name, r.error)
        assert not (run / "results.json").exists()


def test_examples_capped_at_ten_and_earliest_first(spark, tmp_path) -> None:
    from harness.checker.check import check_runs
    from harness.store.history import HistoryWriter

    run = tmp_path / "many"
    run.mkdir()
    with HistoryWriter(run / "history.jsonl") as w:
        for v in range(25):
            w.complete(
                w.invoke(0, "send", topic="t", partition=v % 2, value=v, acks="all"),
                "ok",
                offset=v // 2,
            )
        final = [
            {"topic": "t", "partition": 0, "offset": 0, "value": 0},
            {"topic": "t", "partition": 1, "offset": 0, "value": 1},
        ]
        w.complete(w.invoke(1, "poll", final=True), "ok", records=final)
    (r,) = check_runs([run], spark=spark)
    lost = r.results["anomalies"]["lost-write"]
    assert lost["count"] == 23 and lost["by_partition"] == {"t-0": 12, "t-1": 11}
    assert lost["examples"] == [[2 * v, 2 * v + 1] for v in range(2, 12)]
    assert r.results["stats"]["lost_by_acks"]["all"] == 23


def test_expected_from_plan_and_override(spark, tmp_path, copy_fixture) -> None:
    from harness.checker.check import check_runs

    run = copy_fixture("lost-write")
    (run / "plan.yaml").write_text("name: legacy\nexpected:\n  lost-write: '> 0'\n")
    (r,) = check_runs([run], spark=spark)
    assert r.results["expected"] == {"lost-write": "> 0"}
    assert r.results["verdict"] == "as-expected" and r.results["valid"] is False
    # What `highwater run` does: the in-memory plan's expectations win over plan.yaml (the
    # mapping form, --expected, is covered by test_cli).
    from harness.checker.expectations import Expectation

    (r,) = check_runs([run], spark=spark, expectations=[Expectation("lost-write", "==", 0)])
    assert r.results["verdict"] == "unexpected"
    assert json.loads((run / "results.json").read_text())["expected"] == {"lost-write": "== 0"}


def test_bad_plan_expectation_is_an_error(spark, tmp_path, copy_fixture) -> None:
    from harness.checker.check import check_runs

    run = copy_fixture("clean")
    (run / "plan.yaml").write_text("expected:\n  lost-writes: '> 0'\n")
    (r,) = check_runs([run], spark=spark)
    assert r.results is None and "plan.yaml: expected: unknown anomaly 'lost-writes'" in r.error


def test_empty_history_and_missing_dir(spark, tmp_path) -> None:
    from harness.checker.check import check_runs

    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "history.jsonl").write_text("")
    r_empty, r_missing = check_runs([empty, tmp_path / "nope"], spark=spark)
    assert r_empty.results["valid"] is True and r_empty.results["stats"]["sends"] == 0
    assert r_missing.results is None and "not a directory" in r_missing.error


def test_same_run_given_twice_is_read_once(spark, copy_fixture) -> None:
    from harness.checker.check import check_runs

    run = copy_fixture("lost-write")
    first, second = check_runs([run, run.parent / ".." / run.parent.name / run.name], spark=spark)
    # Read twice, every send value would repeat and the history would be called malformed.
    assert (
        first.results == second.results and first.results["anomalies"]["lost-write"]["count"] == 2
    )


def test_java_options_small_and_large_inputs(monkeypatch) -> None:
    """The small-job JIT for small or unknown inputs, the JVM's defaults for large ones, and the
    environment variable over both."""
    from harness.checker.check import SMALL_INPUT_BYTES, SMALL_JOB_JAVA_OPTIONS, java_options

    monkeypatch.delenv("HIGHWATER_SPARK_JAVA_OPTIONS", raising=False)
    assert java_options(None) == SMALL_JOB_JAVA_OPTIONS
    assert java_options(SMALL_INPUT_BYTES - 1) == SMALL_JOB_JAVA_OPTIONS
    assert java_options(SMALL_INPUT_BYTES) == ""
    monkeypatch.setenv("HIGHWATER_SPARK_JAVA_OPTIONS", "-XX:+UseSerialGC")
    assert java_options(10) == "-XX:+UseSerialGC"
