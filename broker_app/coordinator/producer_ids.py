"""ProducerIdManager: hands out producer ids for InitProducerId, never reusing one.

Like Kafka's block allocation: the end of the current block is persisted *before* any id from
it is used, so after a crash or restart allocation resumes at the next block and an id given
to a producer before the crash is never given to another one.

Unique across the cluster too: every broker allocates from its own range, starting at
node_id << 32 (a broker hands out at most 2**32 ids). Deviation from Kafka: Kafka's brokers ask
the controller for blocks (KIP-730's AllocateProducerIds, a ProducerIdsRecord in the metadata
log; before 3.0 ZooKeeper held the next block), which gives one dense range for the cluster;
the ranges here are disjoint by construction instead. Either way no two producers share an id.
Before this, every broker counted from 0: two idempotent producers initialised on different
brokers got the same id, and a broker could answer a batch of one as a duplicate of the
other's (acknowledged, never written) or refuse it with OUT_OF_ORDER_SEQUENCE_NUMBER.
"""

from __future__ import annotations

from pathlib import Path

from broker_app.server.jsonstate import read_json, write_json_atomic

FILE_NAME = "highwater-producer-ids.json"
BLOCK_SIZE = 1000
NODE_RANGE_BITS = 32


class ProducerIdManager:
    def __init__(self, data_dir: Path, node_id: int = 0, block_size: int = BLOCK_SIZE) -> None:
        self.path = data_dir / FILE_NAME
        self.block_size = block_size
        base = node_id << NODE_RANGE_BITS
        stored = int(read_json(self.path, {"next_block_start": 0})["next_block_start"])
        self._next = max(stored, base)  # a file from before the ranges counted from 0
        self._block_end = self._next  # nothing reserved yet in this process

    def generate(self) -> int:
        if self._next >= self._block_end:
            self._block_end = self._next + self.block_size
            write_json_atomic(self.path, {"next_block_start": self._block_end})
        pid = self._next
        self._next += 1
        return pid
