"""Shared fixtures: one Spark session for the whole checker suite, fixture histories in tmp dirs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "histories"


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    from harness.checker.check import spark_session

    session = spark_session("local[2]", driver_memory="1g")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def copy_fixture(tmp_path: Path):
    """Factory: a fresh run dir holding fixture `name`'s history (fixtures stay untouched)."""

    def copy(name: str, dest: Path | None = None) -> Path:
        run_dir = (dest or tmp_path) / name
        run_dir.mkdir(parents=True)
        shutil.copy(FIXTURES / name / "history.jsonl", run_dir / "history.jsonl")
        return run_dir

    return copy
