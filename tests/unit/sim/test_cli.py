"""`highwater sim PLAN`: a run dir with history, results and run.json; exit 0 as expected."""

from __future__ import annotations

import json
from pathlib import Path

from harness.cli import main

from .plans import SMALL


def test_sim_writes_a_run_dir_and_exits_with_the_verdict(tmp_path: Path, capsys) -> None:
    plan = tmp_path / "small.yaml"
    plan.write_text(SMALL)
    rc = main(["sim", str(plan), "--seed", "2", "--store", str(tmp_path / "store")])
    out = capsys.readouterr().out
    runs = list((tmp_path / "store" / "sim" / "sim-small").iterdir())
    assert rc == 0, out
    assert len(runs) == 1
    results = json.loads((runs[0] / "results.json").read_text())
    meta = json.loads((runs[0] / "run.json").read_text())
    assert results["verdict"] == "as-expected" and results["stats"]["acked"] > 50
    assert meta["seed"] == 2 and meta["simulated"] is True
    assert (runs[0] / "history.jsonl").stat().st_size > 0
    assert "as-expected" in out and "kill leader of t-0" in out
    # an action the simulator does not model is refused before anything runs
    plan.write_text(SMALL.replace("action: kill", "action: disk-stall"))
    assert main(["sim", str(plan), "--store", str(tmp_path / "store")]) == 2
