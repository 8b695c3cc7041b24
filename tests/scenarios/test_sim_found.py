"""The minimal schedules `highwater sim explore` found (chaos_plans/found/), replayed on the
simulator: each loses or diverges under the legacy behaviour it was found with, and not with
that behaviour switched back (today's Kafka). Seconds per case; the same files are what
`highwater run` replays in containers.

They were found on the one-controller simulator (before it ran a Raft quorum), and minimal
schedules are timing-exact: the files say `cluster.controllers: 1` (plans now default to a
3-voter quorum, whose commit round trip shifts the interleaving; kip101 and hwtrunc then no
longer reproduce on seed 112 / 1), and so does chaos_plans/random-targeted.yaml, so
`sim explore` on it finds them again at the same seeds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.plan.loader import load_plan
from harness.sim.run import AS_EXPECTED, UNEXPECTED, simulate

FOUND = Path(__file__).resolve().parents[2] / "chaos_plans" / "found"

# file, seed it was found at, what the file's legacy setting shows, the fixed override
CASES = [
    ("random-eager-minimal.yaml", 34, "lost-write", {"cluster.switches.isr-update": "maximal"}),
    ("targeted-nostrict-minimal.yaml", 7, "uncommitted-read", {"cluster.kafka_version": "3.7"}),
    ("targeted-kip101-minimal.yaml", 112, "diverged-offsets",
     {"cluster.switches.truncation": "kip-279"}),
    ("targeted-hwtrunc-minimal.yaml", 9, "lost-write",
     {"cluster.switches.truncation": "kip-279"}),
    ("targeted-logend-minimal.yaml", 1, "uncommitted-read",
     {"cluster.switches.consumer-visibility": "high-watermark"}),
    ("targeted-eagermin1-minimal.yaml", 208, "lost-write",
     {"cluster.switches.isr-update": "maximal"}),
    ("targeted-unclean-minimal.yaml", 13, "lost-write",
     {"cluster.switches.unclean-leader-election": "false"}),
]


@pytest.mark.parametrize("name, seed, anomaly, fixed", CASES, ids=[c[0] for c in CASES])
def test_found_schedule_reproduces_and_the_fix_holds(tmp_path: Path, name: str, seed: int,
                                                     anomaly: str, fixed: dict[str, str]) -> None:
    path = FOUND / name
    legacy = load_plan(path)
    assert legacy.cluster.controllers == 1  # as found (see above)
    r = simulate(legacy, legacy.faults, seed, tmp_path / "legacy")
    if anomaly == "diverged-offsets":
        assert r.diverged, "the legacy replicas did not diverge"
    else:
        assert r.verdict == UNEXPECTED and r.results["anomalies"][anomaly]["count"] > 0
    plan = load_plan(path, fixed)
    f = simulate(plan, plan.faults, seed, tmp_path / "fixed")
    assert f.verdict == AS_EXPECTED and not f.diverged
