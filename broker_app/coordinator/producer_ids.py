"""ProducerIdManager: hands out producer ids for InitProducerId, never reusing one.

Like Kafka's block allocation: the end of the current block is persisted *before* any id from
it is used, so after a crash or restart allocation resumes at the next block and an id given
to a producer before the crash is never given to another one.
"""

from __future__ import annotations

from pathlib import Path

from broker_app.server.jsonstate import read_json, write_json_atomic

FILE_NAME = "highwater-producer-ids.json"
BLOCK_SIZE = 1000


class ProducerIdManager:
    def __init__(self, data_dir: Path, block_size: int = BLOCK_SIZE) -> None:
        self.path = data_dir / FILE_NAME
        self.block_size = block_size
        self._next = int(read_json(self.path, {"next_block_start": 0})["next_block_start"])
        self._block_end = self._next  # nothing reserved yet in this process

    def generate(self) -> int:
        if self._next >= self._block_end:
            self._block_end = self._next + self.block_size
            write_json_atomic(self.path, {"next_block_start": self._block_end})
        pid = self._next
        self._next += 1
        return pid
