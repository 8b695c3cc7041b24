"""Shared fixtures for plan tests: a valid base plan written to a temp file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

BASE = """\
name: base
cluster:
  brokers: 3
  topics:
    - name: t
      partitions: 2
      replication_factor: 3
      min_insync_replicas: 2
workload:
  producers:
    acks: all
    values: 100
faults:
  - name: first
    at: 5
    action: kill
    target: {leader: t-0}
    duration: 3
"""


@pytest.fixture
def write_plan(tmp_path: Path) -> Callable[[str], Path]:
    def write(text: str, name: str = "plan.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


PLANS = Path(__file__).resolve().parents[3] / "chaos_plans"
# chaos_plans/nightly.yaml is the nightly suite (harness.nightly), not a fault plan.
SUITE_FILES = {"nightly.yaml"}
EXAMPLE_PLANS = sorted(p for p in PLANS.glob("*.yaml") if p.name not in SUITE_FILES)
