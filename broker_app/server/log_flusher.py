"""LogFlusher: the broker's fsyncs, run in one worker thread so a slow disk cannot stall the loop.

Kafka does its background flushes off the request path: the log flusher thread
(log.flush.interval.ms), the scheduler's "flush-log" task after a segment roll, and the
"highwatermark-checkpoint" task. A disk stall then slows those, while heartbeats (their own
thread in Kafka) keep the broker in the cluster. Here the event loop is the one thread that
serves requests, heartbeats and fetchers, so every fsync that does not have to be inline runs
in this flusher's worker thread:
- `flush_logs(all_logs=...)`: the interval policy (all logs) and the deferred roll flushes
  (`Log.flush_wanted`, with LogConfig.defer_roll_flush);
- `checkpoint_high_watermarks()`: the snapshot is taken on the loop, the file is written
  (atomic rename + fsync) in the worker.

Ordering: one worker thread, so fsyncs and checkpoint writes happen in submission order; a
log's recovery point moves only in `Log.complete_flush` on the loop (see FlushJob), and a HW
checkpoint is published (checkpointed_high_watermarks) only after its file is durable. Two
flushes of the same log may be in flight; the later one never moves the recovery point back.

Still inline on the loop (each deliberate, and where we differ from Kafka): the fsync of every
batch under `--flush every-batch` (acknowledging must follow the fsync; Kafka does it on the
request handler thread), the leader-epoch checkpoint (rare: leadership changes; Kafka too
writes it inline), directory fsyncs when a segment or log is created, and the final flush at
shutdown. Writes themselves (pwrite) are inline too: a stall of writes, not fsyncs, still
pauses the loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from broker_app.storage.errors import StorageError
from broker_app.storage.replica_log import LogStore

log = logging.getLogger(__name__)


class LogFlusher:
    def __init__(self, store: LogStore, inline: bool = False) -> None:
        """inline: run the jobs in the caller instead (the simulator: virtual time has no
        worker thread to wait for; the same jobs in the same order)."""
        self.store = store
        self._executor = None if inline else ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="log-flusher")  # fmt: skip

    async def _in_worker(self, fn: Callable[[], object]) -> None:
        if self._executor is None:
            fn()
            return
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, fn)

    async def flush_logs(self, *, all_logs: bool) -> int:
        """Flush every log (all_logs) or only those owing a deferred roll flush; returns how
        many were flushed. A failing log is logged and taken offline by complete_flush."""
        flushed = 0
        for tp, lg in list(self.store.all_logs().items()):
            up_to = None if all_logs else lg.flush_wanted
            if up_to is not None and up_to <= lg.recovery_point:
                continue
            try:
                job = lg.begin_flush(up_to)
                if job is None:
                    continue
                await self._in_worker(job.run)
                lg.complete_flush(job)
                flushed += 1
            except StorageError as e:
                log.error("flush of %s failed: %s", tp, e)
        return flushed

    async def checkpoint_high_watermarks(self) -> None:
        hws = self.store.snapshot_high_watermarks()
        await self._in_worker(lambda: self.store.write_high_watermarks(hws))

    def close(self) -> None:
        """Wait for the job in progress (shutdown: the logs are flushed inline afterwards)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
