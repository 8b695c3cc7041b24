"""The minimal schedules `highwater sim explore` found (chaos_plans/found/), replayed on the
simulator through their modes (issue 26): `found` (the legacy behaviour it was found with)
loses or diverges, `contrast` (that behaviour switched back, today's Kafka) does not. Seconds
per case; `highwater scenario run chaos_plans/found/<plan> --mode found|contrast` runs the
same files in containers, and with `--sim` through the same run pipeline on the simulator.

Minimal schedules are timing-exact, so they pin the simulator's interleaving at their seed: a
change that draws more from the loop's rng (or reorders events) can stop one reproducing; the
found-at seeds are in the files' descriptions, and `sim explore` finds such a schedule again.

Most were found with one controller, and say `cluster.controllers: 1` (plans default to a
3-voter quorum, whose commit round trip shifts the interleaving), as does
chaos_plans/random-targeted.yaml. The simulator ran that one controller without Raft until
2026-11-28; it is a one-voter quorum now that leads at once, as in containers, and L1-minimal
reproduces at seed 41 instead of 1, kip101 at 4 instead of 112 (the other seven at their
found-at seeds).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.run.simulated import AS_EXPECTED, simulate
from harness.scenario.catalog import find

FOUND = Path(__file__).resolve().parents[2] / "chaos_plans" / "found"

# file, the seed it reproduces at (where it was found, but for L1-minimal and kip101), what
# its `found` mode shows
CASES = [
    ("L1-minimal.yaml", 41, "lost-write"),
    ("random-0.8-minimal.yaml", 18, "lost-write"),
    ("random-eager-minimal.yaml", 34, "lost-write"),
    ("targeted-nostrict-minimal.yaml", 7, "uncommitted-read"),
    ("targeted-kip101-minimal.yaml", 4, "diverged-offsets"),
    ("targeted-hwtrunc-minimal.yaml", 9, "lost-write"),
    ("targeted-logend-minimal.yaml", 1, "uncommitted-read"),
    ("targeted-eagermin1-minimal.yaml", 208, "lost-write"),
    ("targeted-unclean-minimal.yaml", 13, "lost-write"),
]


def test_every_found_plan_is_a_scenario_with_found_and_contrast() -> None:
    assert sorted(p.name for p in FOUND.glob("*.yaml")) == sorted(c[0] for c in CASES)
    for name, _, _ in CASES:
        sc = find(str(FOUND / name))
        assert sc.modes == ("found", "contrast")


@pytest.mark.parametrize("name, seed, anomaly", CASES, ids=[c[0] for c in CASES])
def test_found_mode_reproduces_and_contrast_holds(tmp_path: Path, name: str, seed: int,
                                                  anomaly: str) -> None:
    """`highwater sim chaos_plans/found/<plan> --mode found|contrast` at the seed it was
    found at: the found mode's expectation (the loss) holds, and so does the contrast's."""
    sc = find(str(FOUND / name))
    found = sc.load("found")
    r = simulate(found, found.faults, seed, tmp_path / "found")
    assert r.verdict == AS_EXPECTED, r.results["anomalies"]
    if anomaly == "diverged-offsets":
        assert r.diverged, "the replicas did not diverge"
    else:
        assert r.results["anomalies"][anomaly]["count"] > 0
    contrast = sc.load("contrast")
    c = simulate(contrast, contrast.faults, seed, tmp_path / "contrast")
    assert c.verdict == AS_EXPECTED and not c.diverged, c.results["anomalies"]


def test_scenario_run_gives_both_verdicts_on_the_simulator(tmp_path: Path) -> None:
    """`highwater scenario run <found plan> --mode M --sim`: the run pipeline on the simulator,
    judged as a container run is (exit 0: the mode's expectation held; the summary records
    each run as simulated)."""
    plan = str(FOUND / "targeted-hwtrunc-minimal.yaml")
    for mode in ("found", "contrast"):
        code = main(["scenario", "run", plan, "--mode", mode, "--sim", "--seed", "9",
                     "--store", str(tmp_path), "--quiet"])
        assert code == 0, mode
        [summary] = (tmp_path / "scenarios").glob(f"*-{mode}-*.json")
        data = json.loads(summary.read_text())
        assert data["reproduced"] == 1 and data["runs"][0]["simulated"] is True
        run_dir = Path(data["runs"][0]["run"])
        assert (run_dir / "results.json").is_file() and (run_dir / "story.txt").is_file()
        lost = data["runs"][0]["anomalies"].get("lost-write", 0)
        assert (lost > 0) == (mode == "found"), (mode, lost)
