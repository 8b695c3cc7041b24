"""Vote rules (KIP-595), each driven by hand against one voter: no network."""

import random

import pytest

from broker_app.raft import (
    ElectionState,
    KafkaRaftClient,
    MemoryQuorumStateStore,
    MemoryReplicatedLog,
    RaftConfig,
)
from broker_app.raft.messages import (
    BeginQuorumEpochRequest,
    Envelope,
    FetchRequest,
    FetchResponse,
    VoteRequest,
    VoteResponse,
)
from broker_app.raft.quorum_state import CandidateState

VOTERS = frozenset({1, 2, 3})


def voter(epoch: int = 3, log_epochs: tuple[int, ...] = (1, 2), store=None, **config):
    """Voter 1 at `epoch`, its log holding one record per entry of log_epochs."""
    log = MemoryReplicatedLog()
    for e in log_epochs:
        log.append_as_leader([b"r"], e)
    log.flush()
    if store is None:
        store = MemoryQuorumStateStore()
        store.write(ElectionState(epoch))
    cfg = RaftConfig(node_id=1, voters=VOTERS, **config)
    return KafkaRaftClient(cfg, log, store, random.Random(1), now_ms=0), store


def ask(client, candidate: int, epoch: int, last_epoch: int, last_offset: int,
        pre_vote: bool = False, now: int = 10) -> VoteResponse:
    env = Envelope(candidate, 1, 7, VoteRequest(epoch, candidate, last_epoch, last_offset,
                                                pre_vote))
    replies = [e for e in client.handle(env, now) if isinstance(e.body, VoteResponse)]
    assert len(replies) == 1 and replies[0].dst == candidate and replies[0].correlation_id == 7
    return replies[0].body


def test_grants_an_up_to_date_candidate_and_persists_the_vote_first():
    client, store = voter()
    resp = ask(client, 2, epoch=4, last_epoch=2, last_offset=2)
    assert resp.vote_granted and resp.leader_epoch == 4
    assert store.state == ElectionState(4, None, 2)


def test_at_most_one_vote_per_epoch_and_the_answer_repeats():
    client, _ = voter()
    assert ask(client, 2, 4, 2, 2).vote_granted
    assert not ask(client, 3, 4, 2, 9).vote_granted  # better log, but the epoch's vote is cast
    assert ask(client, 2, 4, 2, 2).vote_granted  # the same candidate asks again: same answer


def test_refuses_an_older_epoch_and_tells_the_candidate_the_current_one():
    client, store = voter(epoch=5)
    resp = ask(client, 2, epoch=4, last_epoch=2, last_offset=9)
    assert not resp.vote_granted and resp.leader_epoch == 5
    assert store.state == ElectionState(5)  # nothing recorded


@pytest.mark.parametrize("last_epoch,last_offset,granted", [
    (1, 50, False),  # longer, but an older last epoch
    (2, 1, False),  # same last epoch, shorter
    (2, 2, True),  # same last epoch, same length
    (3, 0, True),  # newer last epoch wins even if shorter
])
def test_grants_only_to_a_log_at_least_as_up_to_date(last_epoch, last_offset, granted):
    client, _ = voter()
    resp = ask(client, 2, 4, last_epoch, last_offset)
    assert resp.vote_granted is granted
    # A refusal moved us to the new epoch anyway (Unattached): a later, better candidate wins.
    if not granted:
        assert client.epoch == 4 and ask(client, 3, 4, 2, 2).vote_granted


def test_legacy_switch_grants_without_the_log_check():
    client, _ = voter(raft_vote_log_check=False)
    assert ask(client, 2, 4, 0, 0).vote_granted  # an empty log wins the vote


def test_a_restarted_voter_remembers_its_vote():
    client, store = voter()
    assert ask(client, 2, 4, 2, 2).vote_granted
    again, _ = voter(store=store)
    assert again.epoch == 4
    assert not ask(again, 3, 4, 2, 2).vote_granted
    assert ask(again, 2, 4, 2, 2).vote_granted


def test_a_follower_refuses_votes_in_its_leaders_epoch_but_a_newer_epoch_detaches_it():
    client, _ = voter()
    out = client.handle(Envelope(2, 1, 1, BeginQuorumEpochRequest(4, 2)), 5)
    assert client.leader_id == 2
    assert any(isinstance(e.body, FetchRequest) for e in out)  # the fetch loop started
    assert not ask(client, 3, 4, 2, 2).vote_granted
    resp = ask(client, 3, 5, 2, 2)
    assert resp.vote_granted and client.leader_id is None and client.epoch == 5


def test_a_newer_epoch_deposes_the_leader_and_answers_its_parked_fetches():
    client, _ = voter(epoch=0, log_epochs=(), pre_vote=False)
    client.handle(Envelope(2, 1, 1, VoteRequest(1, 2, 0, 0)), 0)  # voted for 2 in epoch 1
    client.poll(10_000)  # election timer: candidate in epoch 2
    client.handle(Envelope(2, 1, 2, VoteResponse(2, None, True)), 10_001)
    assert client.is_leader and client.epoch == 2
    client.poll(10_002)  # flush the LeaderChange record
    # follower 3's first fetch commits the LeaderChange (2 of 3) and is answered at once
    fetch = FetchRequest(3, 2, client.log.end_offset, 2, None)
    [first] = client.handle(Envelope(3, 1, 8, fetch), 10_003)
    assert first.body.high_watermark == 1
    # up to date and empty-handed: the next fetch is parked (long poll)
    fetch = FetchRequest(3, 2, client.log.end_offset, 2, 1)
    assert client.handle(Envelope(3, 1, 9, fetch), 10_003) == []
    out = client.handle(Envelope(2, 1, 3, VoteRequest(3, 2, 2, 1)), 10_004)
    assert not client.is_leader and client.epoch == 3
    answered = [e for e in out if e.correlation_id == 9]
    assert answered and isinstance(answered[0].body, FetchResponse)
    assert answered[0].body.leader_epoch == 3
    assert any(isinstance(e.body, VoteResponse) for e in out)
    with pytest.raises(Exception, match="not the leader"):
        client.append([b"late"])


def test_an_observer_never_votes_and_never_stands():
    store = MemoryQuorumStateStore()
    cfg = RaftConfig(node_id=9, voters=VOTERS)
    client = KafkaRaftClient(cfg, MemoryReplicatedLog(), store, random.Random(1), now_ms=0)
    out = client.poll(0)  # no leader known: probe a voter with a Fetch
    assert [type(e.body) for e in out] == [FetchRequest] and out[0].dst in VOTERS
    env = Envelope(2, 9, 7, VoteRequest(4, 2, 0, 0))
    [reply] = [e for e in client.handle(env, 10) if isinstance(e.body, VoteResponse)]
    assert not reply.body.vote_granted and store.state.voted_id is None
    client.poll(100_000)
    assert not isinstance(client.quorum.state, CandidateState)


def test_a_pre_vote_changes_nothing_and_follows_the_log_rule():
    client, store = voter()
    writes = store.writes
    assert ask(client, 2, 4, 2, 2, pre_vote=True).vote_granted
    assert not ask(client, 3, 4, 1, 9, pre_vote=True).vote_granted  # older last epoch
    assert client.epoch == 3 and store.writes == writes  # no epoch bump, nothing persisted
    assert ask(client, 3, 4, 2, 2).vote_granted  # the real vote is still free


def test_a_follower_that_hears_its_leader_refuses_pre_votes():
    client, _ = voter()
    client.handle(Envelope(2, 1, 1, BeginQuorumEpochRequest(4, 2)), 100)  # leader 2 of epoch 4
    assert not ask(client, 3, 5, 2, 9, pre_vote=True, now=500).vote_granted
    assert client.leader_id == 2 and client.epoch == 4  # undisturbed
    timeout = client.config.fetch_timeout_ms
    assert ask(client, 3, 5, 2, 9, pre_vote=True, now=100 + timeout).vote_granted
