"""Three voters on FileReplicatedLog + FileQuorumStateStore over the in-test network:
replication, snapshot catch-up, and a whole-quorum restart from disk."""

from .chaos import chaos
from .chaos import file_storage as on_disk
from .net import SimNetwork


def values(node) -> list[bytes]:
    return [r for _o, r in node.applied]


def test_file_backed_quorum_replicates_snapshots_and_restarts_from_disk(tmp_path):
    net = SimNetwork(3, seed=12, open_storage=on_disk(tmp_path))
    leader = net.elect()
    lagger = next(i for i in net.nodes if i != leader.node_id)
    net.crash(lagger)
    for i in range(6):
        net.append(f"r{i}".encode())
    net.run_for(300)
    for n in net.nodes.values():
        if n.alive:
            net.snapshot(n.node_id)
    net.append(b"after-snapshot")
    net.run_for(200)
    net.restart(lagger)
    assert net.run_until(lambda: values(net.nodes[lagger]) == values(leader)
                         and len(values(leader)) == 7, 10_000)
    assert net.nodes[lagger].log.start_offset == leader.log.latest_snapshot().snapshot_id.offset
    epoch = leader.client.epoch
    for i in net.nodes:  # everyone goes down, everyone comes back from disk
        net.crash(i)
    for i in net.nodes:
        net.restart(i)
    new = net.elect()
    assert new.client.epoch > epoch
    net.append(b"after-restart")
    expected = [f"r{i}".encode() for i in range(6)] + [b"after-snapshot", b"after-restart"]
    assert net.run_until(lambda: all(values(n) == expected for n in net.nodes.values()), 10_000)
    for n in net.nodes.values():
        n.log.close()


def test_file_backed_quorum_keeps_raft_safety_under_random_faults(tmp_path):
    """One short schedule (every flush is an fsync); long runs: `chaos 0 200 --file`."""
    net, converged = chaos(1, voters=3, steps=25, open_storage=on_disk(tmp_path))
    assert converged
    assert any(n.log.latest_snapshot() for n in net.nodes.values())  # snapshots were taken
    for n in net.nodes.values():
        n.log.close()
