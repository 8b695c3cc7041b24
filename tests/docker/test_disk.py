"""Disk faults from the FUSE layer under the broker's data dir (harness.cluster.diskfs): a stall
delays acknowledgements and ends cleanly; SIGKILL loses writes that were never fsynced, and
keeps them when they were written out first. One single-broker cluster for the module."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from hw_docker_util import consume, produce, produce_ok, producer

from harness.cluster import Cluster, ClusterError

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def cluster(cluster_images: dict[str, str], run_id_factory) -> Iterator[Cluster]:
    with Cluster(run_id_factory("disk"), brokers=1, images=cluster_images,
                 disk_faults=True) as c:
        yield c


def test_the_data_dir_is_the_fuse_layer(cluster: Cluster) -> None:
    produce_ok(cluster.bootstrap, "layer", [b"a"])
    st = cluster.disk_status("broker-1")
    assert st["dirty_files"] >= 1  # the append sits in the layer's page cache, unsynced


def test_stall_holds_acks_all_until_it_ends(cluster: Cluster) -> None:
    """Ordering, not timing: while the layer holds the append's write, the acks=all send has
    no delivery report; once the stall ends it is delivered and readable."""
    p = producer(cluster.bootstrap, acks="all", **{"message.timeout.ms": 60_000})
    assert produce(p, "stall", [b"warm"], 30) == [None]
    before = cluster.disk_status("broker-1")["stalled_calls"]
    cluster.disk_stall("broker-1", 60.0, ops="all")  # ended by disk_unstall below
    reports: list[object] = []
    p.produce("stall", b"slow", on_delivery=lambda err, _msg: reports.append(err))
    deadline = time.monotonic() + 30
    while cluster.disk_status("broker-1")["stalled_calls"] == before:
        assert time.monotonic() < deadline, "no write reached the stalled layer"
        p.poll(0.1)
    p.poll(0.5)
    assert reports == []  # the broker cannot acknowledge what it has not written
    cluster.disk_unstall("broker-1")
    assert p.flush(30) == 0 and reports == [None]
    assert cluster.disk_status("broker-1")["stalled"] == []
    assert consume(cluster.bootstrap, "stall", 2) == [b"warm", b"slow"]


def test_kill_loses_unsynced_writes(cluster: Cluster) -> None:
    produce_ok(cluster.bootstrap, "lossy", [b"x%d" % i for i in range(5)])
    cluster.kill("broker-1", lose_unsynced=True)
    cluster.start("broker-1")
    assert consume(cluster.bootstrap, "lossy", 5, timeout_s=8) == []


def test_kill_keeps_writes_that_were_written_out(cluster: Cluster) -> None:
    produce_ok(cluster.bootstrap, "kept", [b"y%d" % i for i in range(5)])
    cluster.kill("broker-1", lose_unsynced=False)
    cluster.start("broker-1")
    assert consume(cluster.bootstrap, "kept", 5) == [b"y%d" % i for i in range(5)]


def test_clean_stop_writes_everything_out(cluster: Cluster) -> None:
    produce_ok(cluster.bootstrap, "stopped", [b"z"])
    cluster.stop("broker-1")
    cluster.start("broker-1")
    assert consume(cluster.bootstrap, "stopped", 1) == [b"z"]


def test_disk_faults_need_the_layer(cluster_images, run_id_factory) -> None:
    c = Cluster(run_id_factory("nodisk"), brokers=1, images=cluster_images)
    with pytest.raises(ClusterError, match="disk_faults=True"):
        c.disk_stall("broker-1", 1.0)
