"""KRaft quorum core (KIP-595 Raft, KIP-630 snapshots, KIP-996 pre-vote), sans-I/O.

The state machine (KafkaRaftClient) takes `now_ms` and inbound messages and returns outbound
messages plus its next timer deadline: no sockets, threads or sleeps. Messages are plain
dataclasses (messages.py); kio_codec.py maps them to kio's Vote/BeginQuorumEpoch/
EndQuorumEpoch/Fetch/FetchSnapshot entities for the network edge. Logs: MemoryReplicatedLog
(the Raft unit tests) and FileReplicatedLog (storage.Log in `__cluster_metadata-0/`, with
FileQuorumStateStore for the durable vote), which every controller runs: on the machine's
file system, or in the simulator on the voter's simulated disk (storage/fs.py).

Status (issue 13, step 1): the core is complete and unit-tested (tests/unit/raft/, with a
seeded in-test network and a Raft safety checker; long runs: `python -m
tests.unit.raft.chaos`). Step 2: `highwater controller --controller-quorum-voters ...` runs
it (broker_app/controller/raft_controller.py, raft_manager.py); without that flag the
controller is a one-voter quorum of its own (issue 26: Raft always). Controllers snapshot their
committed metadata image through create_snapshot (broker_app/metadata/snapshot.py is the
payload: the records that rebuild the image).
"""

from .config import RaftConfig, parse_quorum_voters
from .log import Batch, MemoryReplicatedLog, OffsetAndEpoch, ReplicatedLog, Snapshot
from .quorum_state import ElectionState, MemoryQuorumStateStore, QuorumStateStore
from .raft_client import KafkaRaftClient, NotLeaderError, RaftFatalError

__all__ = [
    "Batch",
    "ElectionState",
    "KafkaRaftClient",
    "MemoryQuorumStateStore",
    "MemoryReplicatedLog",
    "NotLeaderError",
    "RaftFatalError",
    "OffsetAndEpoch",
    "QuorumStateStore",
    "RaftConfig",
    "ReplicatedLog",
    "Snapshot",
    "parse_quorum_voters",
]
