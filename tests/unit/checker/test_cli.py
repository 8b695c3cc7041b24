"""`highwater check` exit codes and output (the checker's CLI module, on a shared Spark)."""

from __future__ import annotations

import argparse

import pytest

from harness.checker import cli

pytestmark = pytest.mark.spark


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args([str(a) for a in argv]))


def test_check_is_a_highwater_command() -> None:
    from harness.cli import COMMANDS

    assert COMMANDS["check"][0] == "harness.checker.cli"


def test_exit_0_when_all_as_expected(spark, copy_fixture, capsys) -> None:
    clean, edges = copy_fixture("clean"), copy_fixture("edges")
    assert _run(clean, edges) == 0
    out = capsys.readouterr().out
    assert out.count("as-expected") == 2 and (clean / "results.json").is_file()


def test_exit_1_when_any_unexpected(spark, copy_fixture, capsys) -> None:
    assert _run(copy_fixture("clean"), copy_fixture("lost-write")) == 1
    assert "lost-write=2" in capsys.readouterr().out


def test_expected_flag_turns_loss_into_as_expected(spark, copy_fixture) -> None:
    assert _run(copy_fixture("lost-write"), "--expected", '{"lost-write": "> 0"}') == 0


def test_exit_2_on_unreadable_input(spark, copy_fixture, tmp_path, capsys) -> None:
    assert _run(copy_fixture("malformed"), copy_fixture("lost-write")) == 2
    out = capsys.readouterr().out
    assert "malformed/history.jsonl:2: partition" in out and "lost-write=2" in out
    assert _run(tmp_path / "does-not-exist") == 2


@pytest.mark.parametrize(
    ("expected", "words"),
    [("{lost-write", "not valid JSON"), ('{"lost": "> 0"}', "unknown anomaly 'lost'")],
)
def test_exit_2_on_bad_expected(copy_fixture, capsys, expected, words) -> None:
    # Rejected before Spark starts.
    assert _run(copy_fixture("clean"), "--expected", expected) == 2
    assert words in capsys.readouterr().err


def test_recheck_keeps_the_metadata_check_of_run_json(spark, copy_fixture, capsys) -> None:
    import json

    run = copy_fixture("clean")
    metadata = {"count": 1, "by_partition": {}, "examples": [["broker-2", 7, "ab"]],
                "reference": {"node": "controller-1", "digest": "cd"}, "unknown": []}
    (run / "run.json").write_text(json.dumps({"metadata_divergence": metadata}))
    # A clean history, but a node's metadata image differed: the run is unexpected...
    assert _run(run) == 1
    assert "metadata-divergence=1" in capsys.readouterr().out
    stored = json.loads((run / "results.json").read_text())
    assert stored["metadata-divergence"] == metadata and stored["valid"] is True
    # ...unless the plan expects it.
    assert _run(run, "--expected", '{"metadata-divergence": "> 0"}') == 0
    assert json.loads((run / "results.json").read_text())["metadata-divergence"] == metadata
