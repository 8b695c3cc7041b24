"""`highwater plan validate/show`: OK or the one-line error, exit 0 or 2."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.plan import cli

from .conftest import BASE, EXAMPLE_PLANS, PLANS


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(list(argv)))


def test_validate_ok(capsys: pytest.CaptureFixture[str]) -> None:
    paths = [str(p) for p in EXAMPLE_PLANS]
    assert run("validate", *paths) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(paths) and all(line.startswith("OK ") for line in out)


def test_validate_bad_plan(write_plan: Callable[[str], Path],
                           capsys: pytest.CaptureFixture[str]) -> None:
    bad = write_plan(BASE.replace("acks: all", "acks: most"))
    assert run("validate", str(PLANS / "smoke.yaml"), str(bad)) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("OK ")
    assert out[1].startswith(f"{bad}:11: workload.producers.acks: acks must be")


def test_validate_with_set(write_plan: Callable[[str], Path],
                           capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_plan(BASE))
    assert run("validate", path, "--set", "workload.producers.acks=0") == 0
    assert run("validate", path, "--set", "workload.producers.ack=0") == 2
    assert "--set workload.producers.ack=0" in capsys.readouterr().out
    assert run("validate", path, "--set", "oops") == 2


def test_show_prints_the_random_schedule(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("show", str(PLANS / "random.yaml"), "--seed", "5") == 0
    first = capsys.readouterr().out
    assert "seed 5" in first and "random-1-" in first
    assert run("show", str(PLANS / "random.yaml"), "--seed", "5") == 0
    assert capsys.readouterr().out == first
