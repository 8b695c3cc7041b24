"""KIP-966 with real broker and controller processes: ELR, clean-shutdown marker, unclean
registration, and the election order ISR -> ELR (default: Kafka 4.1)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from .conftest import REPO, Cluster
from .helpers import consume_all, create_topic, produce, wait_until

pytestmark = pytest.mark.timeout(240)


def _view(cluster: Cluster, node: int) -> dict:
    p = cluster.brokers[node].partition("t")
    assert p is not None
    return p


def test_elr_member_elected_over_the_uncleanly_restarted_last_isr_member(cluster) -> None:
    create_topic(cluster.bootstrap, "t", rf=3, config={"min.insync.replicas": "2"})
    wait_until(lambda: any(b.partition("t") and b.partition("t")["role"] == "leader"
                           for b in cluster.brokers.values()), 30, "a leader")  # fmt: skip
    leader = next(i for i, b in cluster.brokers.items() if b.partition("t")["role"] == "leader")
    f, g = [i for i in sorted(cluster.brokers) if i != leader]
    wait_until(lambda: sorted(_view(cluster, leader)["isr"]) == [1, 2, 3], 30, "full ISR")
    acked = [b"a", b"b", b"c"]
    assert [e for e, _ in produce(cluster.bootstrap, "t", acked)] == [None] * 3
    wait_until(lambda: _view(cluster, f)["leo"] == 3, 30, "f caught up")
    cluster.brokers[g].send_signal(signal.SIGSTOP)
    try:
        # g leaves while the ISR is still at min.insync: not eligible. Then f's leaving puts
        # the ISR below it: f joins the ELR (the metadata every broker applies says so).
        wait_until(lambda: sorted(_view(cluster, leader)["isr"]) == sorted([leader, f]), 30,
                   "g out of the ISR")
        cluster.brokers[f].send_signal(signal.SIGSTOP)
        wait_until(lambda: _view(cluster, leader)["isr"] == [leader], 30, "ISR = leader alone")
        wait_until(lambda: _view(cluster, leader)["elr"] == [f], 30, "f in the ELR")
        lb = cluster.brokers[leader]
        lb.stop(signal.SIGKILL)  # no clean-shutdown marker
        assert not (lb.data_dir / ".kafka_cleanshutdown").exists()
        lb.start()  # registers with previous broker epoch -1: out of ISR and ELR
    finally:
        cluster.brokers[f].send_signal(signal.SIGCONT)
        cluster.brokers[g].send_signal(signal.SIGCONT)
    wait_until(lambda: _view(cluster, f)["role"] == "leader", 60, "f (ELR) elected")
    assert _view(cluster, leader)["role"] != "leader"
    wait_until(lambda: len(_view(cluster, f)["isr"]) >= 2, 60, "ISR back to min.insync")
    wait_until(lambda: _view(cluster, f)["elr"] == [], 30, "ELR cleared")
    assert consume_all(cluster.bootstrap, "t", 3) == acked
    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", "topics", "describe",
         "--bootstrap", cluster.bootstrap, "--topic", "t"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0 and f"Leader: {f} " in out.stdout and "Elr: " in out.stdout


def test_clean_shutdown_marker_carries_the_broker_epoch(cluster) -> None:
    b = cluster.brokers[2]
    epoch = b.state()["broker_epoch"]
    assert epoch >= 0
    b.stop(signal.SIGTERM)
    marker = json.loads((b.data_dir / ".kafka_cleanshutdown").read_text())
    assert marker["broker_epoch"] == epoch
    b.start()
    wait_until(lambda: not b.state()["fenced"], 30, "re-registered and unfenced")
    assert b.state()["broker_epoch"] > epoch
    assert not (b.data_dir / ".kafka_cleanshutdown").exists()
