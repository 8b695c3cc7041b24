"""Elections, replication, commit, reconciliation and snapshots over the seeded in-test
network (tests/unit/raft/net.py); the network's safety checker runs after every event."""

from broker_app.raft.messages import FetchResponse, FetchSnapshotResponse
from broker_app.raft.quorum_state import CandidateState, ResignedState

from .net import SimNetwork


def records(node) -> list[bytes]:
    return [rec for _off, rec in node.applied]


def log_values(node) -> list[bytes]:
    return [r for b in node.log.read(node.log.start_offset, 1 << 20) if not b.control
            for r in b.records]


def test_three_voters_elect_one_leader_and_replicate():
    net = SimNetwork(3, seed=1)
    leader = net.elect()
    assert sum(n.client.is_leader for n in net.nodes.values()) == 1
    net.append(b"a", b"b")
    net.append(b"c")
    net.run_for(200)
    assert all(records(n) == [b"a", b"b", b"c"] for n in net.nodes.values())
    assert {n.client.leader_id for n in net.nodes.values()} == {leader.node_id}


def test_a_split_vote_is_resolved_by_randomized_timeouts_and_backoff():
    # Without pre-vote: two prospectives can also both pass their pre-votes, but then the
    # first real Vote usually wins the other over; this scripts the candidates' race itself.
    net = SimNetwork(4, seed=7, pre_vote=False)
    deadlines = {1: 1000, 2: 1000, 3: 60_000, 4: 60_000}
    for i, t in deadlines.items():
        net.nodes[i].client.quorum.state.election_deadline_ms = t
    net.blocked = {(1, 4), (2, 3)}  # 3 hears only 1, 4 hears only 2: two votes each
    net.run_for(1100)
    cands = [net.nodes[i].client.quorum.state for i in (1, 2)]
    assert all(isinstance(c, CandidateState) and c.epoch == 1 and len(c.granted) == 2
               for c in cands)
    assert net.leader() is None  # 2 of 4 is no majority
    net.heal()
    leader = net.elect(10_000)
    assert leader.client.epoch >= 2
    assert net.leaders.get(1) is None  # epoch 1 never had a leader


def test_commit_needs_a_majority_of_voters():
    net = SimNetwork(5, seed=2)
    leader = net.elect()
    followers = [i for i in net.nodes if i != leader.node_id]
    for i in followers[:3]:
        net.crash(i)
    _, off = net.append(b"x")
    net.run_for(500)  # leader + 1 follower = 2 of 5
    assert leader.client.high_watermark <= off
    net.restart(followers[0])
    assert net.run_until(lambda: leader.client.high_watermark > off, 5000)
    assert records(leader) == [b"x"]


def test_the_leader_counts_its_own_log_only_once_flushed():
    net = SimNetwork(3, seed=4)
    leader = net.elect()
    follower = next(i for i in net.nodes if i != leader.node_id)
    net.crash(next(i for i in net.nodes if i not in (leader.node_id, follower)))
    leader.log.flush = lambda: None  # a slow disk: nothing of ours becomes durable
    _, off = net.append(b"x")
    net.run_for(300)
    assert net.nodes[follower].log.flushed_end_offset > off  # the follower has it durably
    assert leader.client.high_watermark <= off  # 1 durable copy of 2 needed
    del leader.log.flush  # the disk catches up; the edge polls the client when it has
    net.send(leader.client.poll(net.now))
    assert leader.client.high_watermark > off


def test_a_stale_leader_in_a_minority_cannot_commit_and_the_majority_elects_a_new_one():
    net = SimNetwork(5, seed=3)
    old = net.elect()
    net.append(b"before")
    net.run_for(200)
    buddy = next(i for i in net.nodes if i != old.node_id)
    minority = {old.node_id, buddy}
    net.partition(minority, set(net.nodes) - minority)
    stale_off = old.client.append([b"stale"])
    old_epoch = old.client.epoch

    def new_leader_committed() -> bool:
        assert (old.client.high_watermark or 0) <= stale_off, "a minority committed"
        new = net.leader()
        return new is not None and new.node_id not in minority and \
            new.client.high_watermark is not None
    assert net.run_until(new_leader_committed, 10_000)
    new = net.leader()
    assert new.client.epoch > old_epoch
    net.append(b"fresh")
    # the old leader gives up by check quorum (1.5 x fetch timeout without a majority)
    assert net.run_until(lambda: isinstance(old.client.quorum.state, ResignedState)
                         or old.client.epoch > old_epoch, 5000)
    assert not (old.client.is_leader and old.client.epoch == old_epoch)
    net.heal()
    assert net.run_until(lambda: all(records(n) == [b"before", b"fresh"]
                                     for n in net.nodes.values()), 10_000)
    assert all(b"stale" not in log_values(n) for n in net.nodes.values())


def test_a_follower_truncates_its_divergent_uncommitted_tail():
    net = SimNetwork(3, seed=5)
    old = net.elect()
    net.isolate(old.node_id)
    old.client.append([b"x1"])
    old.client.append([b"x2"])
    net.run_for(50)
    assert log_values(old)[-2:] == [b"x1", b"x2"]
    assert net.run_until(lambda: (ld := net.leader()) is not None and ld is not old
                         and ld.client.high_watermark is not None, 10_000)
    net.append(b"y")
    net.run_for(300)
    net.heal()
    assert net.run_until(lambda: log_values(old) == [b"y"] and records(old) == [b"y"], 10_000)
    diverging = [env for _t, env in net.delivered if env.dst == old.node_id
                 and isinstance(env.body, FetchResponse) and env.body.diverging_epoch]
    assert diverging, "the reconciliation went through DivergingEpoch"
    new = net.leader()
    assert net.entries(old.log) == net.entries(new.log)


def test_a_lagging_follower_catches_up_from_a_snapshot():
    net = SimNetwork(3, seed=6)
    leader = net.elect()
    lagger = next(i for i in net.nodes if i != leader.node_id)
    net.crash(lagger)
    for i in range(10):
        net.append(f"r{i}".encode())
    net.run_for(300)
    for n in net.nodes.values():
        if n.alive:
            net.snapshot(n.node_id)
    snapshot = leader.log.latest_snapshot()
    assert leader.log.start_offset == snapshot.snapshot_id.offset > 10
    net.append(b"after")
    net.run_for(100)
    net.restart(lagger)
    lag = net.nodes[lagger]
    assert net.run_until(lambda: lag.client.high_watermark == leader.log.end_offset, 10_000)
    assert lag.log.latest_snapshot().snapshot_id == snapshot.snapshot_id
    assert lag.log.start_offset == snapshot.snapshot_id.offset
    assert records(lag) == records(leader) == [f"r{i}".encode() for i in range(10)] + [b"after"]
    assert any(env.dst == lagger and isinstance(env.body, FetchSnapshotResponse)
               for _t, env in net.delivered)


def test_graceful_resign_hands_over_faster_than_a_fetch_timeout():
    net = SimNetwork(3, seed=8)
    old = net.elect()
    net.append(b"a")
    net.run_for(200)
    t0 = net.now
    net.send(old.client.resign(net.now))
    assert net.run_until(lambda: (ld := net.leader()) is not None and ld is not old, 5000)
    assert net.now - t0 < old.config.fetch_timeout_ms // 4
    net.append(b"b")
    net.run_for(300)
    assert all(records(n) == [b"a", b"b"] for n in net.nodes.values())


def test_a_crashed_leader_is_replaced_after_the_fetch_timeout_and_returns_as_follower():
    net = SimNetwork(3, seed=9)
    old = net.elect()
    old_epoch = old.client.epoch
    net.append(b"a")
    net.run_for(200)
    net.crash(old.node_id)
    t0 = net.now
    assert net.run_until(lambda: net.leader() is not None
                         and net.leader().client.high_watermark is not None, 10_000)
    took = net.now - t0
    cfg = old.config  # the followers' last fetch came back at most fetch_max_wait before t0
    assert cfg.fetch_timeout_ms - cfg.fetch_max_wait_ms <= took <= cfg.fetch_timeout_ms + 4000
    net.restart(old.node_id)
    assert isinstance(old.client.quorum.state, ResignedState)  # never leads its old epoch again
    assert old.client.epoch == old_epoch
    net.append(b"b")
    assert net.run_until(lambda: records(old) == [b"a", b"b"], 10_000)
    assert not old.client.is_leader


def test_an_observer_finds_the_leader_follows_failover_and_never_counts():
    net = SimNetwork(3, seed=13, observers=1)
    observer = net.nodes[4]
    leader = net.elect()
    net.append(b"a")
    assert net.run_until(lambda: records(observer) == [b"a"], 5000)
    assert observer.client.leader_id == leader.node_id
    # the observer does not count toward commit: leader + observer are 2 nodes, 1 voter
    for i in net.nodes:
        if i not in (leader.node_id, observer.node_id):
            net.crash(i)
    _, off = net.append(b"b")
    net.run_for(500)
    assert leader.client.high_watermark <= off
    for i in net.nodes:
        if not net.nodes[i].alive:
            net.restart(i)
    assert net.run_until(lambda: records(observer) == [b"a", b"b"], 10_000)
    net.crash(leader.node_id)  # failover: the observer follows the new leader
    assert net.run_until(lambda: (ld := net.leader()) is not None and ld is not leader
                         and ld.client.high_watermark is not None, 10_000)
    net.append(b"c")
    assert net.run_until(lambda: records(observer) == [b"a", b"b", b"c"], 10_000)
    assert observer.client.leader_id == net.leader().node_id
    assert observer.store.state.voted_id is None  # it never voted


def test_a_graceful_shutdown_hands_over_and_the_old_leader_never_stands_again():
    """Kafka's KafkaRaftClient.shutdown: the leader resigns (EndQuorumEpoch), then waits,
    answering the others, until one of them leads; it learns the new leader and is done."""
    net = SimNetwork(3, seed=8)
    old = net.elect()
    net.append(b"a")
    net.run_for(200)
    net.send(old.client.shutdown(net.now))
    assert not old.client.shutdown_complete
    assert net.run_until(lambda: old.client.shutdown_complete, 5000)
    new = net.leader()
    assert new is not None and new is not old and old.client.leader_id == new.node_id
    net.append(b"b")
    net.run_for(300)
    assert records(old) == [b"a", b"b"]  # it still follows while the caller winds down
    assert old.client.deadline_ms() > net.now  # no timer in the past: the driver can sleep


def test_a_voter_shutting_down_never_becomes_a_candidate():
    """A follower shutting down whose leader dies stays put (Kafka: it can stop at once);
    the others elect a leader without it standing."""
    net = SimNetwork(3, seed=9)
    leader = net.elect()
    net.append(b"a")
    net.run_for(200)
    quitting = next(n for n in net.nodes.values() if n is not leader)
    net.send(quitting.client.shutdown(net.now))
    assert quitting.client.shutdown_complete  # it follows a remote leader
    net.crash(leader.node_id)
    stood = []
    assert net.run_until(lambda: (stood.append(
        isinstance(quitting.client.quorum.state, CandidateState)) or net.leader()) is not None,
        10_000)
    assert not any(stood) and net.leader() is not quitting
    epoch = quitting.client.epoch
    net.isolate(quitting.node_id)  # now it hears nobody: still no election of its own
    net.run_for(10_000)
    assert not isinstance(quitting.client.quorum.state, CandidateState)
    assert quitting.client.epoch == epoch


def test_end_quorum_epoch_backoff_is_kafkas_strict_exponential_by_position():
    from broker_app.raft.raft_client import end_epoch_election_backoff_ms

    assert [end_epoch_election_backoff_ms((2, 3), v, 1000) for v in (2, 3, 4)] == [0, 500, 1000]
    assert [end_epoch_election_backoff_ms((5, 4, 3, 2), v, 1000)
            for v in (5, 4, 3, 2)] == [0, 125, 250, 500]
