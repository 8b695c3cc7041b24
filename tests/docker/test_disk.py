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


def test_stall_delays_acks_all_and_ends_cleanly(cluster: Cluster) -> None:
    p = producer(cluster.bootstrap, acks="all")
    assert produce(p, "stall", [b"warm"], 30) == [None]
    cluster.disk_stall("broker-1", 3.0, ops="all")
    started = time.monotonic()
    assert produce(p, "stall", [b"slow"], 60) == [None]
    assert time.monotonic() - started >= 2.0
    st = cluster.disk_status("broker-1")
    assert st["stalled_calls"] >= 1 and st["stalled"] == []
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
