"""SimController: the real QuorumController behind the real ControllerApis, on virtual time.

The controller process of the simulator. Its state is the metadata log, the production Log on
the controller's simulated disk (storage/fs.py's MemoryFileSystem), flushed on every batch
(FileMetadataLog's own rule: durable before the response exists), so a crash loses nothing
and a restart replays it into a new QuorumController, exactly as `highwater controller` does
from its files. Requests arrive as kio entities (never encoded); a Fetch of
`__cluster_metadata-0` at the log end parks (DelayedMetadataFetch) until the log
grows or max_wait passes, as in controller/server.py. `tick` runs every tick_interval_ms.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker_app.controller.config import ControllerConfig
from broker_app.controller.controller_apis import ControllerApis, DelayedMetadataFetch
from broker_app.controller.metadata_log import FileMetadataLog
from broker_app.controller.quorum_controller import QuorumController
from broker_app.metadata.records import METADATA_PARTITION, METADATA_TOPIC
from broker_app.protocol.codec import Request
from broker_app.storage.fs import MemoryFileSystem
from broker_app.storage.log import Log, LogConfig

from .events import EventLoop, Process, Timer

CONTROLLER_ADDRESS = ("controller-1", 9093)


class ParkedMetadataFetches:
    """Broker metadata fetches parked at a simulated controller (DelayedMetadataFetch): each
    answers when `wake()` finds data for it, or with what it has once max_wait passes on the
    owning process's timer. One copy for SimController and SimQuorumController."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self._parked: list[tuple[DelayedMetadataFetch, Callable[[Any], None], Timer]] = []

    def __bool__(self) -> bool:
        return bool(self._parked)

    def clear(self) -> None:
        self._parked = []

    def park(self, delayed: DelayedMetadataFetch, reply: Callable[[Any], None]) -> None:
        entry: list[Any] = []

        def expire() -> None:
            if entry and entry[0] in self._parked:
                self._parked.remove(entry[0])
                reply(delayed.complete(True))

        timer = self.process.call_later(delayed.max_wait_ms, expire)
        entry.append((delayed, reply, timer))
        self._parked.append(entry[0])

    def wake(self) -> None:
        still = []
        for delayed, reply, timer in self._parked:
            response = delayed.complete(False)
            if response is None:
                still.append((delayed, reply, timer))
            else:
                timer.cancel()
                reply(response)
        self._parked = still


class SimMetadataLog(FileMetadataLog):
    """FileMetadataLog's contract on a simulated disk (fsync on every batch, so crash-proof).
    No snapshots (FileMetadataLog reads and writes those outside storage/fs.py)."""

    def __init__(self, fs: MemoryFileSystem, data_dir: Path) -> None:  # no super().__init__
        config = LogConfig(max_batch_bytes=8 * 1024 * 1024, flush_every_batch=True)
        self.dir = data_dir / f"{METADATA_TOPIC}-{METADATA_PARTITION}"
        self.log = Log.open(self.dir, config, recovery_point=0, fs=fs)
        self.epoch = (self.log.latest_epoch or 0) + 1
        self._snapshot = None  # the simulated controller never snapshots
        self.bytes_since_snapshot = 0


class SimController:
    def __init__(
        self,
        loop: EventLoop,
        config: ControllerConfig,
        tick_interval_ms: int = 100,
        name: str = "controller-1",
    ) -> None:
        self.loop = loop
        self.config = config
        self.name = name
        self.tick_interval_ms = tick_interval_ms
        self.process = Process(loop, name)
        self.fs = MemoryFileSystem()  # the controller's disk: outlives its processes
        self.data_dir = Path("/sim") / name / "data"
        self.controller: QuorumController | None = None
        self.apis: ControllerApis | None = None
        self._parked = ParkedMetadataFetches(self.process)

    def _new_topic_id(self) -> uuid.UUID:
        return uuid.UUID(int=self.loop.rng.getrandbits(128), version=4)

    def start(self) -> None:
        self.process.start()
        mlog = SimMetadataLog(self.fs, self.data_dir)
        self.metadata_log = mlog
        self.controller = QuorumController(self.config, mlog, new_topic_id=self._new_topic_id)
        self.apis = ControllerApis(self.controller, mlog, CONTROLLER_ADDRESS)
        self._parked.clear()
        self.process.every(self.tick_interval_ms, self._tick)

    def kill(self) -> None:
        self.process.kill()
        self.controller = self.apis = None
        self._parked.clear()

    def _tick(self) -> None:
        assert self.controller is not None
        before = self.metadata_log.end_offset
        self.controller.tick(self.loop.now_ms)
        self._wake_if_appended(before)

    def _wake_if_appended(self, before: int) -> None:
        if self.metadata_log.end_offset != before and self._parked:
            self._parked.wake()

    def handle(self, src: str, body: Any, reply: Callable[[Any], None]) -> None:
        """The network handler: one kio request entity in, its response out through reply."""
        assert self.apis is not None
        request = Request(body.__api_key__, body.__version__, 0, src, body)
        before = self.metadata_log.end_offset
        result = self.apis.handle(request, self.loop.now_ms)
        self._wake_if_appended(before)
        if isinstance(result, DelayedMetadataFetch):
            self._parked.park(result, reply)
            return
        reply(result)

    def create_topics(self, topics: list[Any]) -> Any:
        """Create topics as an admin client would (CreateTopics), returning the response."""
        from broker_app.controller.messages import CreateTopicsRequest

        assert self.controller is not None
        before = self.metadata_log.end_offset
        resp, _ = self.controller.create_topics(CreateTopicsRequest(topics), self.loop.now_ms)
        self._wake_if_appended(before)
        return resp
