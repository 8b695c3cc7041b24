"""The Raft vote switch on a quorum of three controllers (the real RaftQuorumController on the
seeded in-test network), and the committed-log comparison that catches it.

Exact interleaving (Kafka 3.x elections, no pre-vote): voter C is cut off and its failed
elections raise its epoch; the active controller commits a CreateTopics with B (the client is
answered: committed); the active controller is cut from B and C and dies, and B restarts, so
it holds the record without knowing it is committed (a voter's high watermark is not persisted;
one that knows refuses a truncation below it, as Kafka's KafkaRaftClient does); B and C meet.
raft-vote-log-check=strict (Raft, KIP-595): B refuses C's shorter log and B leads with the
record, 10 seeds of 10. =none (hypothetical bug switch, no Kafka
release): B votes for C, C leads and B truncates the committed record away, the restarted old
leader follows, 10 seeds of 10.
`committed_log_divergence` over what each voter's state machine applied in the whole run
finds it; the final logs alone agree.
"""

from __future__ import annotations

import pytest

from harness.checker.metadata_check import committed_log_divergence, committed_records
from tests.unit.raft.controller_net import ControllerNet, create, setup_topic


class RecordingNet(ControllerNet):
    """Every incarnation's applied committed records, per voter (what the run would keep)."""

    def __init__(self, *args, **kwargs) -> None:
        self.applied: dict[str, list[tuple[int, bytes]]] = {}
        super().__init__(*args, **kwargs)

    def _controller(self, node):
        ctl = super()._controller(node)
        mine = self.applied.setdefault(f"controller-{node.node_id}", [])
        ctl.commit_listener = mine.extend
        return ctl

    def check_committed(self):
        final = {f"controller-{i}": committed_records(n.log, n.client.high_watermark)
                 for i, n in self.nodes.items()}
        return committed_log_divergence(self.applied, final), final


def lose_a_committed_topic(seed: int, vote_log_check: bool):
    net = RecordingNet(seed, raft={"pre_vote": False, "raft_vote_log_check": vote_log_check})
    net.check_safety = False  # let the violation happen, to see what the check reports
    ctl = setup_topic(net, "t")
    leader = ctl.config.node_id
    b, c = (i for i in sorted(net.nodes) if i != leader)
    net.isolate(c)
    net.run_for(5000)  # C's elections fail: its epoch climbs, its log stays behind
    assert net.nodes[c].client.epoch > ctl.client.epoch
    x = create(ctl, "x")
    assert net.run_until(lambda: x.done) and x.error is None  # answered: committed
    net.old_leader = leader
    net.partition({leader}, {b, c})
    net.crash(leader)
    net.crash(b)
    net.restart(b)
    assert net.nodes[b].client.high_watermark is None
    new = net.active()
    net.heal()
    net.restart(leader)
    net.run_for(3000)
    return net, new, net.active()


@pytest.mark.parametrize("seed", range(10))
def test_strict_vote_keeps_the_committed_topic_and_the_check_finds_nothing(seed):
    net, _new, active = lose_a_committed_topic(seed, vote_log_check=True)
    assert "x" in active.committed_image.topics
    result, _final = net.check_committed()
    assert result["count"] == 0 and result["unknown"] == []


@pytest.mark.parametrize("seed", range(10))
def test_legacy_vote_loses_the_committed_topic_and_the_check_reports_it(seed):
    net, new, active = lose_a_committed_topic(seed, vote_log_check=False)
    assert "x" not in active.committed_image.topics
    result, final = net.check_committed()
    old = f"controller-{net.old_leader}"
    # The old leader applied what is gone (and in some seeds B had applied some of it too).
    assert result["count"] >= 1 and old in [n for n, _off in result["examples"]]
    assert result["by_partition"]["__cluster_metadata-0"] >= 1
    # The final committed logs agree: only the applied history shows the loss.
    assert len({tuple(sorted(v.items())) for v in final.values()}) == 1


def test_committed_log_divergence_shapes():
    final = {"c1": {0: None, 1: b"a", 2: None, 3: b"c"}, "c2": {0: None, 1: b"a"}, "c3": {}}
    same = committed_log_divergence({"c1": [(1, b"a"), (3, b"c")], "c2": [(1, b"a")]}, final)
    assert same["count"] == 0 and same["unknown"] == ["c3"] and same["by_partition"] == {}
    assert same["reference"]["node"] == "c1"
    # c2 once applied X at 2, where the final committed log holds a control record: lost.
    lost = committed_log_divergence({"c1": [(1, b"a"), (3, b"c")],
                                     "c2": [(1, b"a"), (2, b"X")]}, final)
    assert lost["count"] == 1 and lost["examples"] == [["c2", 2]]
    # two final logs that differ below both high watermarks
    split = committed_log_divergence({}, {"c1": {1: b"a", 2: b"b"}, "c2": {1: b"a", 2: b"Y"}})
    assert split["count"] == 1 and split["examples"] == [["c2", 2]]
    assert committed_log_divergence({}, {})["count"] == 0
