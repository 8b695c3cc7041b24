"""Damage on disk in a live cluster (issue 17, the `corrupt-file` nemesis without containers):
a follower stopped cleanly gets a flipped bit in its active segment; when it starts it must
say so, cut the damaged batch, fetch it again from the leader and end with the leader's
bytes, and then lead with them."""

from __future__ import annotations

import signal

import pytest

from broker_app.storage.records import iter_batches

from .conftest import Cluster
from .helpers import consume_all, create_topic, produce, wait_until
from .test_failures import leader_of

pytestmark = pytest.mark.timeout(240)


def test_follower_with_flipped_bit_after_clean_stop_repairs_from_the_leader(
    cluster: Cluster,
) -> None:
    create_topic(cluster.bootstrap, "t", rf=3)
    values = [b"value-%03d" % i for i in range(60)]
    assert [e for e, _ in produce(cluster.bootstrap, "t", values)] == [None] * 60
    leader = leader_of(cluster)
    follower = next(i for i in cluster.brokers if i != leader)
    fb, lb = cluster.brokers[follower], cluster.brokers[leader]
    wait_until(lambda: fb.partition("t")["leo"] == 60, 30, "follower caught up")
    fb.stop()  # SIGTERM: a clean shutdown, the marker vouches for the files
    segment = sorted((fb.data_dir / "t-0").glob("*.log"))[-1]
    data = bytearray(segment.read_bytes())
    starts, pos = [], 0
    for h, _ in iter_batches(bytes(data), allow_partial_tail=False):
        starts.append((pos, h.base_offset))
        pos += h.size
    victim_pos, victim_offset = starts[len(starts) // 2]
    data[victim_pos + 70] ^= 0x10  # inside the records: the batch's CRC no longer matches
    segment.write_bytes(bytes(data))

    fb.start()
    assert f"{segment}: CRC32C mismatch in batch at baseOffset {victim_offset}" in fb.log()
    wait_until(lambda: fb.partition("t")["leo"] == 60, 30, "repaired follower caught up")
    wait_until(lambda: sorted(lb.partition("t")["isr"]) == [1, 2, 3], 30, "back in the ISR")
    leader_segment = sorted((lb.data_dir / "t-0").glob("*.log"))[-1]
    wait_until(lambda: segment.read_bytes() == leader_segment.read_bytes(), 10,
               "the follower's segment equals the leader's byte for byte")  # fmt: skip

    # The repaired replica leads: the other two go, it serves everything intact.
    for i in cluster.brokers:
        if i != follower:
            cluster.brokers[i].stop(signal.SIGKILL)
    wait_until(lambda: fb.partition("t")["role"] == "leader", 30, "repaired replica leads")
    assert consume_all(fb.bootstrap, "t", 60) == values
