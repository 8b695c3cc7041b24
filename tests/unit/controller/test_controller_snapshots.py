"""KIP-630 metadata snapshots of a Raft quorum of controllers, as exact interleavings on the
seeded in-test network (tests/unit/raft/net.py): controllers snapshot their committed image
and the log starts after it; a restarted controller, a lagging voter (FetchSnapshot) and a
broker behind the log start all rebuild the same image from the snapshot plus the log."""

from __future__ import annotations

import heapq
import os
import random
import uuid

import pytest

from broker_app.metadata import MetadataImage, MetadataLoader, MetadataRecordError
from broker_app.metadata.image import BrokerRegistration, PartitionRegistration, TopicImage
from broker_app.metadata.snapshot import decode_snapshot, encode_snapshot
from broker_app.raft.messages import Errors, FetchSnapshotRequest, FetchSnapshotResponse
from broker_app.storage.errors import OffsetOutOfRangeError
from tests.unit.raft.controller_net import ControllerNet, create, setup_topic


def sample_image() -> MetadataImage:
    brokers = {
        1: BrokerRegistration(1, 7, "inc-a", "h1", 9092, "rack-a", fenced=False),
        2: BrokerRegistration(2, 9, "inc-b", "h2", 9093, None, fenced=True),
        3: BrokerRegistration(3, 11, "inc-c", "h3", 9094, None, fenced=True,
                              in_controlled_shutdown=True),
    }
    t = TopicImage("t", uuid.UUID(int=5), {"min.insync.replicas": "2"}, {
        0: PartitionRegistration((1, 2, 3), (1,), 1, leader_epoch=4, partition_epoch=9,
                                 elr=(2,), last_known_elr=(3,)),
        1: PartitionRegistration((2, 3, 1), (2, 3), 2, 1, 2, adding_replicas=(1,),
                                 removing_replicas=(3,)),
    })
    u = TopicImage("u", uuid.UUID(int=6), {}, {0: PartitionRegistration((1,), (1,), 1)})
    return MetadataImage(brokers, {"t": t, "u": u}, offset=41)


def test_a_snapshot_rebuilds_the_image_it_was_written_from() -> None:
    image = sample_image()
    loaded = decode_snapshot(encode_snapshot(image), end_offset=50)
    assert loaded.offset == 49  # the last offset the snapshot contains (Kafka's provenance)
    assert loaded.brokers == image.brokers and loaded.topics == image.topics
    assert decode_snapshot(encode_snapshot(MetadataImage()), 0) == MetadataImage()


def test_a_corrupt_snapshot_is_refused_naming_it() -> None:
    payload = bytearray(encode_snapshot(sample_image()))
    payload[-3] ^= 0xFF  # the batch CRC no longer matches
    with pytest.raises(MetadataRecordError, match="snapshot at 50"):
        decode_snapshot(bytes(payload), 50, "snapshot at 50")
    with pytest.raises(MetadataRecordError, match="snapshot at 50"):
        decode_snapshot(encode_snapshot(sample_image())[:40], 50, "snapshot at 50")


def snapshotting_net(seed: int) -> ControllerNet:
    # Every committed metadata record triggers a snapshot: the log start moves all the time.
    return ControllerNet(seed=seed, snapshot_max_new_record_bytes=1)


def same_state(a: MetadataImage, b: MetadataImage) -> bool:
    return a.brokers == b.brokers and a.topics == b.topics


def test_every_controller_snapshots_its_committed_image_and_the_log_starts_after_it() -> None:
    net = snapshotting_net(seed=11)
    active = setup_topic(net)
    net.run_for(500)
    for c in net.controllers.values():
        snap = c.client.log.latest_snapshot()
        assert snap is not None and c.snapshots_created >= 1
        assert c.metadata_log.log_start_offset == snap.snapshot_id.offset > 0
        assert same_state(c.committed_image, active.committed_image)
        assert same_state(decode_snapshot(snap.payload, snap.snapshot_id.offset),
                          c.committed_image)  # no records after it: the snapshot is all
        with pytest.raises(OffsetOutOfRangeError):
            c.metadata_log.read(0, 1 << 20)  # a broker at 0 is sent to the snapshot


def test_a_controller_restarted_after_snapshot_and_truncation_rebuilds_its_image() -> None:
    net = snapshotting_net(seed=12)
    setup_topic(net)
    net.run_for(500)
    before = {i: c.committed_image for i, c in net.controllers.items()}
    for i in net.controllers:  # the whole quorum goes down and comes back
        net.crash(i)
    for i in net.controllers:
        net.restart(i)
    active = net.active()
    for i, c in net.controllers.items():
        assert c.snapshots_loaded == 1  # started from the snapshot, not from offset 0
        assert same_state(c.committed_image, before[i])
    assert active.active is not None and same_state(active.active.image, before[active.config
                                                                                  .node_id])
    more = create(active, "after-restart")
    assert net.run_until(lambda: more.done) and more.error is None
    net.run_for(500)
    for c in net.controllers.values():
        assert {"t", "after-restart"} <= set(c.committed_image.topics)


def test_a_lagging_voter_behind_the_log_start_catches_up_by_fetch_snapshot() -> None:
    net = ControllerNet(seed=13)  # snapshots only when the test says so
    active = setup_topic(net)
    lagging = next(c for c in net.controllers.values() if c is not active)
    net.isolate(lagging.config.node_id)
    created = [create(active, f"while-away-{n}") for n in range(3)]
    assert net.run_until(lambda: all(p.done for p in created))
    snap = active.create_snapshot(net.now)
    assert active.metadata_log.log_start_offset == snap.snapshot_id.offset
    assert lagging.client.log.end_offset < snap.snapshot_id.offset  # it is behind the start
    net.heal()
    assert net.run_until(lambda: lagging.snapshots_loaded == 1)
    assert net.run_until(lambda: same_state(lagging.committed_image, active.committed_image))
    assert lagging.metadata_log.log_start_offset == snap.snapshot_id.offset
    assert {f"while-away-{n}" for n in range(3)} <= set(lagging.committed_image.topics)
    fetched = [e.body for _t, e in net.delivered if e.dst == lagging.config.node_id]
    assert any(type(b).__name__ == "FetchSnapshotResponse" and b.snapshot == snap
               for b in fetched)


def test_a_new_active_controller_after_a_snapshot_keeps_the_metadata() -> None:
    net = snapshotting_net(seed=14)
    old = setup_topic(net)
    net.run_for(500)
    broker_epoch = old.committed_image.brokers[10].epoch
    net.crash(old.config.node_id)
    new = net.active()
    assert new is not old and new.active is not None
    assert new.active.image.brokers[10].epoch == broker_epoch and "t" in new.active.image.topics
    more = create(new, "u")
    assert net.run_until(lambda: more.done) and more.error is None


def test_the_interval_trigger_snapshots_with_few_new_records() -> None:
    off = ControllerNet(seed=15, snapshot_max_interval_ms=0)  # neither trigger can fire
    setup_topic(off)
    off.run_for(5000)
    assert all(c.snapshots_created == 0 for c in off.controllers.values())
    net = ControllerNet(seed=15, snapshot_max_interval_ms=1000)  # bytes: the 20 MiB default
    setup_topic(net)
    net.run_for(2000)
    for c in net.controllers.values():
        assert c.snapshots_created >= 1
    counts = {i: c.snapshots_created for i, c in net.controllers.items()}
    net.run_for(5000)  # nothing new was committed: no further snapshot
    assert {i: c.snapshots_created for i, c in net.controllers.items()} == counts


def test_a_broker_behind_the_log_start_loads_the_snapshot_then_the_log() -> None:
    net = ControllerNet(seed=16)
    active = setup_topic(net)
    net.run_for(500)
    snap = active.create_snapshot(net.now)
    more = create(active, "v")  # after the snapshot: only in the log
    assert net.run_until(lambda: more.done) and more.error is None
    broker = MetadataLoader()  # a broker that starts late: fetch offset 0
    mlog = active.metadata_log
    assert mlog.latest_snapshot() == snap and broker.next_offset < mlog.log_start_offset
    delta = broker.load_snapshot(snap.payload, snap.snapshot_id.offset)
    assert broker.next_offset == snap.snapshot_id.offset
    assert delta.local_changes(10).leaders  # broker 10 must lead t-0 from the snapshot alone
    assert "v" not in broker.image.topics
    again = broker.load_snapshot(snap.payload, snap.snapshot_id.offset)
    assert not again.changed_partitions()  # a snapshot it already has changes nothing
    broker.apply_fetched(mlog.read(broker.next_offset, 1 << 20))
    assert same_state(broker.image, active.committed_image) and "v" in broker.image.topics


def test_a_fetch_snapshot_for_a_snapshot_replaced_meanwhile_is_retried_with_the_new_one() -> None:
    net = ControllerNet(seed=17)
    active = setup_topic(net)
    lag = next(i for i, c in net.controllers.items() if c is not active)
    net.isolate(lag)
    first = create(active, "first")
    assert net.run_until(lambda: first.done)
    old = active.create_snapshot(net.now)
    net.heal()

    def in_flight() -> list:
        return [q for q in net.queue if q[2].src == lag
                and isinstance(q[2].body, FetchSnapshotRequest)]
    assert net.run_until(lambda: bool(in_flight()))
    held = in_flight()  # the request for `old` waits while the leader moves on
    net.queue = [q for q in net.queue if q not in held]
    heapq.heapify(net.queue)
    second = create(active, "second")
    assert net.run_until(lambda: second.done)
    new = active.create_snapshot(net.now)
    assert new.snapshot_id.offset > old.snapshot_id.offset
    for _t, seq, env in held:
        heapq.heappush(net.queue, (net.now + 1, seq, env))
    lagging = net.controllers[lag]
    assert net.run_until(lambda: "second" in lagging.committed_image.topics)
    answers = [e.body for _t, e in net.delivered
               if e.dst == lag and isinstance(e.body, FetchSnapshotResponse)]
    assert [a.error for a in answers][:1] == [Errors.SNAPSHOT_NOT_FOUND]
    assert any(a.snapshot == new for a in answers) and lagging.snapshots_loaded == 1


@pytest.mark.parametrize("seed", range(int(os.environ.get("HW_SNAPSHOT_SEEDS", "5"))))
def test_random_crashes_cuts_and_drops_with_snapshots_end_in_one_image(seed: int) -> None:
    """Safety (tests/unit/raft/net.py checks it after every event) and convergence while
    snapshots move the log start constantly: 5% of messages dropped, a random voter crashed
    and restarted or cut off between rounds of topic creations. More seeds:
    HW_SNAPSHOT_SEEDS=200 .venv/bin/pytest tests/unit/controller/test_controller_snapshots.py"""
    net = ControllerNet(seed=100 + seed, drop_rate=0.05, snapshot_max_new_record_bytes=300)
    rng = random.Random(seed)
    created: list[str] = []
    setup_topic(net)
    for round_ in range(6):
        victim = rng.choice(sorted(net.controllers))
        if rng.random() < 0.5:
            net.crash(victim)
        else:
            net.isolate(victim)
        active = net.active()
        name = f"r{round_}"
        pending = create(active, name)
        if net.run_until(lambda p=pending: p.done, max_ms=5000) and pending.error is None:
            created.append(name)
        net.heal()
        if not net.nodes[victim].alive:
            net.restart(victim)
        net.run_for(rng.randint(0, 500))

    def converged() -> bool:
        images = [c.committed_image for c in net.controllers.values()]
        return all(same_state(i, images[0]) for i in images)
    # Each lost request costs a request timeout (1 s): give the drops time, within a bound.
    assert net.run_until(converged, max_ms=20_000)
    images = [c.committed_image for c in net.controllers.values()]
    assert set(created) <= set(images[0].topics) and len(created) >= 3
    assert sum(c.snapshots_created for c in net.controllers.values()) > 0
