"""The kafka_version table: presets, explicit overrides, refusals, and the doc page."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from broker_app.kafka_versions import (
    BOOL,
    DEFAULT_VERSION,
    KNOWN_VERSIONS,
    SWITCH_NAMES,
    SWITCHES,
    VERSIONS,
    KafkaVersionError,
    preset,
    render_markdown,
    resolve,
)
from broker_app.replication.behaviour import ReplicationBehaviour

ROOT = Path(__file__).resolve().parents[2]
BEGIN = "<!-- BEGIN kafka-versions table (generated from broker_app/kafka_versions.py) -->\n"
END = "<!-- END kafka-versions table -->"


def test_every_row_sets_every_switch_and_cites_its_change():
    for v in VERSIONS:
        assert tuple(v.switches) == SWITCH_NAMES, v.version
        assert ("KIP-" in v.changes or "KAFKA-" in v.changes or "L10" in v.changes), v.version
    for required in ("0.8", "0.11", "2.0", "2.1", "2.7", "3.3", "3.9", "4.1"):
        assert required in KNOWN_VERSIONS


def test_milestones():
    assert preset("0.8")["truncation"] == "high-watermark"
    assert preset("0.8")["unclean-leader-election"] == "true"
    assert preset("0.11")["unclean-leader-election"] == "false"  # KIP-106
    assert preset("2.7")["isr-update"] == "maximal"  # KIP-497
    assert preset("3.3")["strict-min-isr"] == "false"
    assert preset("3.9")["strict-min-isr"] == "true"
    assert preset("3.9")["eligible-leader-replicas"] == "false"
    assert preset("4.1")["eligible-leader-replicas"] == "true"
    assert resolve(None) == preset(DEFAULT_VERSION) == preset("4.1")


def test_defaults_are_the_latest_row():
    b = ReplicationBehaviour()
    latest = preset(DEFAULT_VERSION)
    assert b.truncation == latest["truncation"] and b.isr_update == latest["isr-update"]
    assert b.strict_min_isr and b.eligible_leader_replicas


def test_explicit_switch_replaces_one_field():
    out = resolve("3.9", {"truncation": "kip-101", "isr-update": None})
    assert out == {**preset("3.9"), "truncation": "kip-101"}


def test_refusals_name_the_problem():
    with pytest.raises(KafkaVersionError, match=r"unknown Kafka version '3.10' \(known: 0.8"):
        resolve("3.10")
    with pytest.raises(KafkaVersionError, match="is not one of"):
        resolve("4.1", {"strict-min-isr": "maybe"})
    with pytest.raises(KafkaVersionError, match="needs strict-min-isr=true"):
        resolve("4.1", {"strict-min-isr": "false"})
    assert resolve("3.3", {"strict-min-isr": "false"})["strict-min-isr"] == "false"


def test_doc_page_is_the_rendered_table():
    text = (ROOT / "docs" / "kafka-versions.md").read_text(encoding="utf-8")
    assert BEGIN in text and END in text
    embedded = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert embedded == render_markdown(), "regenerate with python -m broker_app.kafka_versions"


def test_broker_and_controller_refuse_an_unknown_version(tmp_path):
    for cmd in (["broker", "--node-id", "1", "--port", "0"], ["controller", "--port", "0"]):
        p = subprocess.run(
            [sys.executable, "-m", "harness.cli", *cmd, "--data-dir", str(tmp_path),
             "--kafka-version", "5.0"],
            capture_output=True, text=True, timeout=60, cwd=ROOT,
        )  # fmt: skip
        assert p.returncode == 2
        assert "unknown Kafka version '5.0' (known: 0.8, 0.11" in p.stderr


def _broker_config(*argv: str):
    import argparse

    from broker_app.server.main import add_arguments, config_from_args

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return config_from_args(parser.parse_args(
        ["--node-id", "1", "--port", "0", "--data-dir", "/tmp/unused", *argv]))


def test_broker_flags_resolve_through_the_preset():
    b = _broker_config("--kafka-version", "0.11").behaviour
    assert (b.truncation, b.isr_update, b.strict_min_isr, b.eligible_leader_replicas) == (
        "kip-101", "eager", False, False)
    b = _broker_config("--kafka-version", "3.3", "--truncation", "high-watermark").behaviour
    assert b.truncation == "high-watermark" and b.isr_update == "maximal"
    assert _broker_config().behaviour == ReplicationBehaviour()
    with pytest.raises(ValueError, match="needs strict-min-isr"):
        _broker_config("--no-strict-min-isr")


@pytest.mark.parametrize("switch", SWITCHES, ids=lambda s: s.name)
def test_each_switch_flag_reaches_its_field_in_every_process_that_takes_it(switch):
    """The flags come from SWITCHES (add_switch_arguments): each value given on the command
    line, preset or not, ends up in the process's config field of the same name."""
    import argparse

    from broker_app.controller.main import add_arguments, config_from_args

    field = switch.name.replace("-", "_")
    for value in switch.choices:
        flag = ([f"--{switch.name}"] if value == "true" else [f"--no-{switch.name}"]
                if value == "false" else [f"--{switch.name}", value])  # fmt: skip
        # Kafka 3.9: the one preset where every value here is allowed (ELR off, strict on).
        expected = (value == "true") if switch.choices == BOOL else value
        if "broker" in switch.processes:
            got = getattr(_broker_config("--kafka-version", "3.9", *flag).behaviour, field)
            assert got == expected, (switch.name, value)
        if "controller" in switch.processes:
            parser = argparse.ArgumentParser()
            add_arguments(parser)
            args = parser.parse_args(["--node-id", "9", "--port", "0", "--data-dir",
                                      "/tmp/unused", "--kafka-version", "3.9", *flag])
            assert getattr(config_from_args(args), field) == expected, (switch.name, value)


def test_harness_sends_each_switch_to_the_processes_that_take_it():
    from harness.plan.flags import process_flags
    from harness.plan.model import ClusterSpec

    spec = ClusterSpec(switches={"truncation": "kip-101", "unclean-leader-election": "true",
                                 "eligible-leader-replicas": "false", "flush": "never"},
                       kafka_version="3.9")  # fmt: skip
    broker, controller = process_flags(spec)
    assert broker == ["--kafka-version", "3.9", "--no-eligible-leader-replicas", "--flush",
                      "never", "--truncation", "kip-101", "--unclean-leader-election"]
    assert controller == ["--kafka-version", "3.9", "--no-eligible-leader-replicas",
                          "--unclean-leader-election"]
    assert process_flags(ClusterSpec()) == ([], [])


def test_kip903_and_the_raft_vote_switch_reach_their_processes():
    """isr-broker-epochs (KIP-903, 3.5) goes to brokers and controllers and is off before
    3.5; raft-vote-log-check (a hypothetical bug switch, no release) only to controllers."""
    import argparse

    from broker_app.controller.main import add_arguments, config_from_args
    from harness.plan.flags import process_flags
    from harness.plan.model import ClusterSpec

    def controller(*flags: str):
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        return config_from_args(parser.parse_args(["--port", "0", "--data-dir", "/x", *flags]))

    spec = ClusterSpec(switches={"raft-vote-log-check": "none", "isr-broker-epochs": "false"})
    broker, ctl = process_flags(spec)
    assert broker == ["--no-isr-broker-epochs"]
    assert ctl == ["--no-isr-broker-epochs", "--raft-vote-log-check", "none"]
    assert not controller(*ctl).raft_vote_log_check and not controller(*ctl).isr_broker_epochs
    assert not _broker_config(*broker).behaviour.isr_broker_epochs
    assert controller().raft_vote_log_check and controller().isr_broker_epochs
    assert not controller("--kafka-version", "3.3").isr_broker_epochs
    assert controller("--kafka-version", "3.5").isr_broker_epochs
    on_election = ClusterSpec(switches={"controller-activation": "on-election"})
    assert process_flags(on_election) == ([], ["--controller-activation", "on-election"])
    assert not controller("--controller-activation", "on-election").activate_caught_up
    assert controller().activate_caught_up
    assert not _broker_config("--kafka-version", "3.3").behaviour.isr_broker_epochs
    assert _broker_config("--kafka-version", "3.5").behaviour.isr_broker_epochs
