"""`highwater bench broker` runs end to end (1 s per target) and reports both brokers."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.bench import broker as bench


def test_bench_broker_reports_real_and_null(tmp_path: Path, capsys) -> None:
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    out = tmp_path / "bench.json"
    args = parser.parse_args(["--seconds", "1", "--json", str(out)])
    assert bench.run(args) == 0
    data = json.loads(out.read_text())
    targets = {r["target"]: r for r in data["results"]}
    assert set(targets) == {"broker", "null-broker"}
    for r in targets.values():
        assert r["records"] > 0 and r["errors"] == 0 and r["p99_ms"] >= r["p50_ms"]
    # The validation share is measured (replayed over what the broker stored), not left at 0.
    assert targets["broker"]["validation_cpu_s"] > 0 and targets["broker"]["validation_share"] > 0
    assert "real/null throughput ratio" in capsys.readouterr().out
