"""L1, L2 of SCENARIOS.md and KIP-279's fast double failover, replayed message by message.

Broker ids: A = 1, B = 2. Each test drives the same interleaving under several truncation
switches and asserts what each one keeps.
"""

from __future__ import annotations

import pytest
from replication_sim import Cluster, values

from broker_app.replication.errors import Errors

A, B = 1, 2


def _l1(cluster: Cluster) -> tuple[list[str], bool]:
    """SCENARIOS.md L1. Returns (A's log once A leads, whether m2 had been acknowledged)."""
    cluster.elect(B, isr=[A, B])
    cluster.produce(["m1"])
    cluster.replicate(A, rounds=3)  # A has m1, both HWs are 1
    assert cluster.brokers[A].log.high_watermark == 1
    cluster.produce(["m2"])
    cluster.fetch_round(A)  # A fetches m2
    cluster.fetch_round(A)  # A's next fetch tells B it has m2: B's HW passes m2
    assert cluster.leader.high_watermark == 2
    acked = cluster.leader.check_enough_replicas_reach_offset(2)[0]
    # The response that would move A's HW carried the HW from before this fetch.
    assert cluster.brokers[A].log.high_watermark == 1
    assert values(cluster.brokers[A].log) == ["m1", "m2"]
    # A restarts and rejoins as follower of B; truncation happens per the switch.
    cluster.crash(A)
    cluster.restart(A)
    cluster.make_follower(A)
    fetcher = cluster.brokers[A].fetcher
    assert fetcher is not None
    if fetcher.state == "truncating":
        cluster.truncation_round(A)  # the OffsetForLeaderEpoch answer arrives...
    cluster.crash(B)  # ...and B dies before A fetches again
    cluster.elect(A, isr=[A])
    return values(cluster.brokers[A].log), acked


def test_l1_high_watermark_truncation_loses_acknowledged_m2(make_cluster) -> None:
    log, acked = _l1(make_cluster([A, B], truncation="high-watermark"))
    assert acked
    assert log == ["m1"]  # m2 was acknowledged and is gone for good


@pytest.mark.parametrize("truncation", ["diverging-epoch", "kip-101", "kip-279"])
def test_l1_epoch_based_truncation_keeps_acknowledged_m2(make_cluster, truncation) -> None:
    log, acked = _l1(make_cluster([A, B], truncation=truncation))
    assert acked
    assert log == ["m1", "m2"]


def _l2(cluster: Cluster) -> tuple[list[str], list[str]]:
    """SCENARIOS.md L2. Returns (A's log, B's log) after A rejoined as B's follower."""
    cluster.elect(A, isr=[A, B])
    cluster.produce(["m1"])  # one batch per message: truncation removes whole batches
    cluster.produce(["m2"])
    cluster.replicate(B, rounds=3)
    assert cluster.brokers[A].log.high_watermark == 2
    # Power loss: B's copy of m2 was still in the page cache; A had flushed.
    cluster.crash(A)
    cluster.crash_losing_tail(B, keep_until=1)
    cluster.restart(B)
    cluster.elect(B, isr=[B])  # B comes back first and leads
    cluster.produce(["m3"])
    assert values(cluster.brokers[B].log) == ["m1", "m3"]
    cluster.restart(A)
    cluster.make_follower(A)
    cluster.replicate(A, rounds=3)
    return values(cluster.brokers[A].log), values(cluster.brokers[B].log)


@pytest.mark.parametrize("truncation", ["high-watermark", "diverging-epoch"])
def test_l2_with_a_real_power_loss_on_memory_logs(make_cluster, truncation) -> None:
    """L2 again, but the lost tail comes from the page-cache model, not an explicit cut:
    A flushed everything, B only m1; both lose power."""
    cluster = make_cluster([A, B], memory=True, truncation=truncation)
    cluster.elect(A, isr=[A, B])
    cluster.produce(["m1"])
    cluster.replicate(B, rounds=3)
    cluster.brokers[B].log.flush()
    cluster.produce(["m2"])
    cluster.replicate(B, rounds=3)
    cluster.brokers[A].log.flush()
    assert cluster.brokers[A].log.high_watermark == 2  # m2 acknowledged
    assert cluster.power_loss(A) == 0 and cluster.power_loss(B) == 1
    cluster.restart(B)
    cluster.elect(B, isr=[B])
    cluster.produce(["m3"])
    cluster.restart(A)
    cluster.make_follower(A)
    cluster.replicate(A, rounds=3)
    a_log, b_log = values(cluster.brokers[A].log), values(cluster.brokers[B].log)
    assert b_log == ["m1", "m3"]
    if truncation == "high-watermark":
        assert a_log == ["m1", "m2"]  # diverged: offset 1 is m2 on A, m3 on B
    else:
        assert a_log == b_log  # the fix: A truncates m2 and follows B


def test_l2_high_watermark_truncation_diverges(make_cluster) -> None:
    a_log, b_log = _l2(make_cluster([A, B], truncation="high-watermark"))
    assert a_log == ["m1", "m2"]
    assert b_log == ["m1", "m3"]  # offset 1 holds m2 on A and m3 on B


@pytest.mark.parametrize("truncation", ["diverging-epoch", "kip-101", "kip-279"])
def test_l2_epoch_based_truncation_converges(make_cluster, truncation) -> None:
    cluster = make_cluster([A, B], truncation=truncation)
    a_log, b_log = _l2(cluster)
    assert a_log == b_log == ["m1", "m3"]
    assert cluster.brokers[A].fetcher.truncations == [1]


def _kip279(cluster: Cluster) -> tuple[list[str], list[str]]:
    """Fast double failover: B leads briefly (epoch 1) and writes x1, then A (which never saw
    epoch 1) leads again at epoch 2. Returns (A's log, B's log) after B rejoined."""
    cluster.elect(A, isr=[A, B])  # epoch 0
    cluster.produce(["m0"])
    cluster.replicate(B, rounds=3)
    cluster.produce(["m1"])  # B has not fetched m1, m2
    cluster.produce(["m2"])
    cluster.crash(A)
    cluster.elect(B, isr=[B])  # epoch 1
    cluster.produce(["x1"])  # offset 1 in epoch 1
    cluster.crash(B)  # B fails fast, before anything else happens
    cluster.restart(A)
    cluster.elect(A, isr=[A], followers=[])  # epoch 2 (unclean: the controller's last resort)
    cluster.produce(["y3"])  # offset 3 in epoch 2
    cluster.restart(B)
    cluster.make_follower(B)
    cluster.replicate(B, rounds=3)
    return values(cluster.brokers[A].log), values(cluster.brokers[B].log)


def test_kip279_case_kip101_alone_still_diverges(make_cluster) -> None:
    # A's answer for epoch 1 is only "offset 3" (where epoch 2 starts); B's LEO is 2, so B
    # truncates nothing and keeps x1 where A has m1.
    a_log, b_log = _kip279(make_cluster([A, B], truncation="kip-101"))
    assert a_log == ["m0", "m1", "m2", "y3"]
    assert b_log == ["m0", "x1", "m2", "y3"]


@pytest.mark.parametrize("truncation", ["kip-279", "diverging-epoch"])
def test_kip279_case_fixed_by_epoch_lineage(make_cluster, truncation) -> None:
    cluster = make_cluster([A, B], truncation=truncation)
    a_log, b_log = _kip279(cluster)
    assert a_log == b_log == ["m0", "m1", "m2", "y3"]
    assert cluster.brokers[B].fetcher.truncations == [1]


def test_kip279_iterates_when_follower_lacks_leaders_epoch(make_cluster) -> None:
    """Three fast failovers: the follower's answer epoch is one it never had, so it needs a
    second OffsetForLeaderEpoch round (KIP-279's scenario 3)."""
    C = 3
    cluster = make_cluster([A, B, C], truncation="kip-279")
    cluster.elect(A, isr=[A, B, C])  # epoch 0
    cluster.produce(["m0"])
    cluster.replicate(B, C, rounds=3)
    cluster.crash(A)
    cluster.crash(C)
    cluster.elect(B, isr=[B], followers=[])  # epoch 1: B writes b1
    cluster.produce(["b1"])
    cluster.crash(B)
    cluster.restart(C)
    cluster.elect(C, isr=[C], followers=[])  # epoch 2: C writes c1, c2
    cluster.produce(["c1", "c2"])
    cluster.crash(C)
    cluster.restart(B)
    cluster.elect(B, isr=[B], followers=[])  # epoch 3: B (epochs 0, 1, 3) writes b2, b3
    cluster.produce(["b2", "b3"])
    # B's log: m0 | b1 | b2 b3 ; epochs {0:0, 1:1, 3:2}
    cluster.crash(B)
    cluster.restart(C)
    cluster.elect(C, isr=[C], followers=[])  # epoch 4: C (epochs 0, 2, 4)
    cluster.produce(["c3"])
    cluster.restart(B)
    cluster.make_follower(B)
    fetcher = cluster.brokers[B].fetcher
    rounds = 0
    while fetcher.state == "truncating":
        cluster.truncation_round(B)
        rounds += 1
    # B asks about 3 -> C answers epoch 2 (unknown to B): cut to where B's epoch 1 ends (2)
    # and ask about 1 -> C answers epoch 0 ending at 1: cut to 1.
    assert rounds == 2
    assert fetcher.truncations == [2, 1]
    cluster.replicate(B, rounds=2)
    assert values(cluster.brokers[B].log) == values(cluster.brokers[C].log)
    assert values(cluster.brokers[C].log) == ["m0", "c1", "c2", "c3"]


def test_stale_epoch_at_the_log_end_is_dropped_and_the_next_fetch_progresses(
        make_cluster) -> None:  # fmt: skip
    """KAFKA-10706, as found by `highwater sim` seed 301840 (issue 24): B leads epoch 1 and
    writes nothing in it, so its epoch cache ends with (1, LEO) that the next leader A lacks.
    As A's follower B fetches with LastFetchedEpoch 1; A answers DivergingEpoch (0, end 1),
    B's log end. Nothing is cut, but the (1, 1) entry must go: the next fetch then carries
    epoch 0 and replicates, instead of the same DivergingEpoch answer forever."""
    cluster = make_cluster([A, B], truncation="diverging-epoch")
    cluster.elect(A, isr=[A, B])  # epoch 0
    cluster.produce(["m0"])
    cluster.replicate(B, rounds=3)
    cluster.elect(B, isr=[A, B])  # epoch 1: B stamps (1, 1) and writes nothing
    assert cluster.brokers[B].log.epoch_entries == [(0, 0), (1, 1)]
    cluster.elect(A, isr=[A, B])  # epoch 2: A's cache is (0, 0), (2, 1)
    cluster.produce(["m1"])
    b = cluster.brokers[B]
    assert b.fetcher.build_fetch().last_fetched_epoch == 1
    first = cluster.fetch_round(B)  # DivergingEpoch (0, 1): at B's log end
    assert first.truncated_to is None  # no offset cut...
    assert b.log.epoch_entries == [(0, 0)]  # ...but the stale entry went
    assert b.fetcher.build_fetch().last_fetched_epoch == 0
    cluster.fetch_round(B)
    assert values(b.log) == ["m0", "m1"]
    cluster.fetch_round(B)
    assert cluster.leader.high_watermark == 2  # B's fetch at 2 lets A commit m1


def _f_misses_epoch_1(cluster: Cluster) -> None:
    """A leads (epoch 0) and F alone gets m2; A hands over to B (epoch 1) and truncates m2 as
    B's follower while B writes m3 at that offset; F never learns of epoch 1."""
    A, B, F = 1, 2, 3
    cluster.elect(A, isr=[A, B, F])
    cluster.produce(["m0", "m1"])
    cluster.replicate(B, F, rounds=2)
    cluster.produce(["m2"])
    cluster.replicate(F, rounds=2)  # B never fetches it
    cluster.elect(B, isr=[A, B], followers=[A])  # F misses this epoch
    cluster.replicate(A, rounds=1)
    assert values(cluster.brokers[A].log) == ["m0", "m1"]
    cluster.produce(["m3"])
    cluster.replicate(A, rounds=2)


def _kafka_7164(cluster: Cluster) -> list[str]:
    """KAFKA-7164's interleaving: _f_misses_epoch_1, then F sees A lead again at epoch 2.
    Returns F's log after it fetched."""
    A, B, F = 1, 2, 3
    _f_misses_epoch_1(cluster)
    cluster.elect(A, isr=[A, B, F], followers=[B, F])
    cluster.produce(["m4"])
    cluster.replicate(F, rounds=2)
    return values(cluster.brokers[F].log)


def test_kafka_7164_legacy_follower_keeps_the_tail_its_leader_truncated(make_cluster) -> None:
    """Kafka 2.0 (follower-restart leader-change): the same leader two epochs later is no
    change to F, so F never reconciles: it keeps m2 where A now has m3 (L16)."""
    cluster = make_cluster([1, 2, 3], truncation="kip-279", follower_restart="leader-change",
                           leader_epoch_fencing=False)
    assert _kafka_7164(cluster) == ["m0", "m1", "m2", "m4"]
    assert values(cluster.brokers[1].log) == ["m0", "m1", "m3", "m4"]


@pytest.mark.parametrize("truncation", ["kip-279", "diverging-epoch"])
def test_kafka_7164_fixed_follower_reconciles_on_every_new_epoch(make_cluster,
                                                                  truncation) -> None:  # fmt: skip
    cluster = make_cluster([1, 2, 3], truncation=truncation)
    assert _kafka_7164(cluster) == ["m0", "m1", "m3", "m4"]


def _kafka_13141(cluster: Cluster) -> tuple[int, list[str]]:
    """KAFKA-13141's interleaving: B leads (epoch 0) and appends m2, m3 that A never fetches;
    a preferred election gives A epoch 1 (ISR {A, B}), which takes m4, m5 at those offsets.
    B's first fetch as A's follower (offset 4, last fetched epoch 0) is answered with
    DivergingEpoch (epoch 0 ends at 2 here). Returns A's HW after that answer and B's log
    after it truncated."""
    A, B = 1, 2
    cluster.elect(B, isr=[A, B])
    cluster.produce(["m0", "m1"])
    cluster.replicate(A, rounds=3)  # the third brings A the HW 2
    cluster.produce(["m2", "m3"])  # A never fetches them
    cluster.elect(A, isr=[A, B])
    cluster.produce(["m4", "m5"])  # acks=all: acknowledged once the HW passes them
    outcome = cluster.fetch_round(B)
    assert outcome.truncated_to == 2 and outcome.appended_bytes == 0
    return cluster.leader.log.high_watermark, values(cluster.brokers[B].log)


def test_kafka_13141_legacy_leader_counts_a_diverged_fetch_offset(make_cluster) -> None:
    """Kafka 2.8.0 (diverging-fetch-state update): A records B's fetch offset 4 as its log end
    and its HW passes m4, m5, which B does not hold: A's death now loses both (L17)."""
    cluster = make_cluster([1, 2], min_isr=2, diverging_fetch_state="update")
    hw, b_log = _kafka_13141(cluster)
    assert hw == 4
    assert b_log == ["m0", "m1"]


def test_kafka_13141_fixed_leader_waits_for_the_truncated_follower(make_cluster) -> None:
    """Kafka 3.0 (and 2.8.1): the diverging fetch records nothing; the HW passes m4, m5 only
    once B fetched them from offset 2."""
    cluster = make_cluster([1, 2], min_isr=2)
    hw, b_log = _kafka_13141(cluster)
    assert hw == 2
    assert b_log == ["m0", "m1"]
    cluster.replicate(2, rounds=2)
    assert cluster.leader.log.high_watermark == 4
    assert values(cluster.brokers[2].log) == ["m0", "m1", "m4", "m5"]


def _kip_320_zombie(cluster: Cluster) -> list[str]:
    """KIP-320's zombie follower: _f_misses_epoch_1, then F fetches from A (leading again at
    epoch 2) while it still follows A at epoch 0, before it learns epoch 2. Returns F's log
    after it learned epoch 2 and fetched on."""
    A, B, F = 1, 2, 3
    _f_misses_epoch_1(cluster)
    cluster.elect(A, isr=[A, B], followers=[B])  # ... and, for now, epoch 2 as well
    cluster.produce(["m4"])
    cluster.replicate(B, rounds=2)
    cluster.fetch_round(F)  # the zombie's fetch, as the follower of epoch 0
    cluster.make_follower(F)
    cluster.replicate(F, rounds=2)
    return values(cluster.brokers[F].log)


def test_kip_320_legacy_zombie_fetch_hides_the_tail_from_reconciliation(make_cluster) -> None:
    """Kafka 2.0.1 (KAFKA-7164 fixed, no KIP-320): A serves the stale fetch, F appends m4
    (epoch 2) after m2; reconciling on epoch 2 then finds F's epoch 2 ending where A's does
    and truncates nothing: m2 stays where A has m3 (L18)."""
    cluster = make_cluster([1, 2, 3], truncation="kip-279", leader_epoch_fencing=False)
    assert _kip_320_zombie(cluster) == ["m0", "m1", "m2", "m4"]
    assert values(cluster.brokers[1].log) == ["m0", "m1", "m3", "m4"]


@pytest.mark.parametrize("truncation", ["kip-279", "diverging-epoch"])
def test_kip_320_fixed_fences_the_zombie_fetch(make_cluster, truncation) -> None:
    cluster = make_cluster([1, 2, 3], truncation=truncation)
    assert _kip_320_zombie(cluster) == ["m0", "m1", "m3", "m4"]


def _kafka_3410(cluster: Cluster) -> None:
    """KAFKA-3410's interleaving: B holds m0-m3 from leader A; A loses all but m0 (power
    loss), is elected again (the last ISR member) and B, to which the leader did not change,
    fetches on from its own log end, past A's: OFFSET_OUT_OF_RANGE, then ListOffsets."""
    A, B = 1, 2
    cluster.elect(A, isr=[A, B])
    cluster.produce(["m0"])
    cluster.produce(["m1", "m2", "m3"])
    cluster.replicate(B, rounds=2)
    cluster.crash_losing_tail(A, keep_until=1)
    cluster.restart(A)
    cluster.elect(A, isr=[A], followers=[B])


def test_kafka_3410_legacy_follower_ahead_stops_its_broker(make_cluster) -> None:
    """Kafka 2.0 (follower-ahead stop, unclean election off): the fetcher raises, keeping
    B's tail; with the topic's unclean election on it truncates instead (L21)."""
    from broker_app.replication.errors import LogTruncationNotAllowedError

    cluster = make_cluster([1, 2], truncation="kip-279", follower_restart="leader-change",
                           leader_epoch_fencing=False, follower_ahead="stop")
    _kafka_3410(cluster)
    assert cluster.fetch_round(B).error == Errors.OFFSET_OUT_OF_RANGE
    with pytest.raises(LogTruncationNotAllowedError, match="latest offset 1 is less than"):
        cluster.fetch_round(B)  # its ListOffsets: A's log ends at 1
    fetcher = cluster.brokers[B].fetcher
    assert fetcher is not None and fetcher.state == "failed"
    assert values(cluster.brokers[B].log) == ["m0", "m1", "m2", "m3"]

    cluster = make_cluster([1, 2], truncation="kip-279", follower_restart="leader-change",
                           leader_epoch_fencing=False, follower_ahead="stop")
    _kafka_3410(cluster)
    fetcher = cluster.brokers[B].fetcher
    assert fetcher is not None
    fetcher.unclean_allowed = lambda: True
    cluster.fetch_round(B)
    cluster.fetch_round(B)
    assert values(cluster.brokers[B].log) == ["m0"]


def test_kafka_7414_follower_ahead_truncates(make_cluster) -> None:
    """Kafka 2.1 (follower-ahead truncate): the same interleaving truncates B to A's log."""
    cluster = make_cluster([1, 2], truncation="kip-279", follower_restart="leader-change",
                           leader_epoch_fencing=False, follower_ahead="truncate")
    _kafka_3410(cluster)
    cluster.produce(["n1"])
    cluster.fetch_round(B)  # out of range: truncated to A's log end (1)...
    cluster.fetch_round(B)  # ...and fetching from there
    assert values(cluster.brokers[B].log) == ["m0", "n1"]


def test_legacy_follower_ignores_a_change_to_no_leader(make_cluster) -> None:
    """ZooKeeper-era makeFollowers aborts when the new leader is unavailable: a Kafka <= 2.0
    follower keeps its leader, so that leader elected again is no change (no restart)."""
    A, B = 1, 2
    legacy = make_cluster([1, 2], follower_restart="leader-change")
    legacy.elect(A, isr=[A, B])
    part = legacy.brokers[B].partition
    assert not part.make_follower(-1, 1, [A], [A, B], 1, 0)
    assert part.leader_id == A and part.leader_epoch == 0
    assert not part.make_follower(A, 2, [A], [A, B], 2, 0)
    fixed = make_cluster([1, 2])
    fixed.elect(A, isr=[A, B])
    part = fixed.brokers[B].partition
    assert part.make_follower(-1, 1, [A], [A, B], 1, 0)
    assert part.make_follower(A, 2, [A], [A, B], 2, 0)
