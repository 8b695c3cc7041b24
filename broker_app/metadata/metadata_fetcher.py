"""MetadataFetcher: a broker's copy of `__cluster_metadata`, sans I/O — what to ask the controller
next and what its answer changes.

Both runtimes drive this one object: server/cluster_link.py over a socket, sim/broker.py over
the simulated network. So they fetch, load snapshots and back off the same way.
- `next_request()`: the kio request to send now. Normally a long-poll Fetch v12 of
  `__cluster_metadata-0` from the loader's next offset. After an answer naming a SnapshotId
  (our offset is below a quorum controller's log start, KIP-630), a FetchSnapshot of that
  snapshot instead.
- `on_response(entity)`: feeds the answer to the MetadataLoader and returns the MetadataDelta
  to apply to the ReplicaManager (None when nothing changed). A malformed record or snapshot
  is logged and the image kept (the broker serves the image it has). An error answer raises
  MetadataFetchError naming it; the edge then waits `backoff_ms()` and may try another
  controller.
- `on_failure()`: the request failed (an error answer, a timeout, a lost connection). The
  backoff doubles from replica.fetch.backoff.ms up to 2 s, and a successful answer resets it.
"""

from __future__ import annotations

import logging
from typing import Any

from kio.index import load_request_schema

from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors
from broker_app.raft.kio_codec import from_kio, to_kio
from broker_app.raft.log import OffsetAndEpoch
from broker_app.raft.messages import FetchSnapshotRequest, FetchSnapshotResponse

from . import METADATA_PARTITION, METADATA_TOPIC
from .image import MetadataDelta
from .loader import MetadataLoader
from .records import MetadataRecordError

log = logging.getLogger(__name__)

MAX_BACKOFF_MS = 2000


class MetadataFetchError(Exception):
    """The controller's answer was an error (or not the answer asked for)."""


def build_metadata_fetch(fetch_offset: int, max_wait_ms: int = 500) -> Any:
    """The broker's long-poll Fetch v12 of `__cluster_metadata-0` from `fetch_offset`."""
    return build(
        load_request_schema(1, 12),
        {
            "replica_id": -1, "max_wait": max_wait_ms, "min_bytes": 1, "max_bytes": 8 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": METADATA_TOPIC, "partitions": [
                {"partition": METADATA_PARTITION, "fetch_offset": fetch_offset,
                 "partition_max_bytes": 8 << 20}]}],
            "forgotten_topics_data": [], "rack_id": "",
        },
    )  # fmt: skip


class MetadataFetcher:
    def __init__(self, node_id: int, cluster_id: str, loader: MetadataLoader,
                 backoff_ms: int) -> None:  # fmt: skip
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.loader = loader
        self.base_backoff_ms = backoff_ms
        self.attempt = 0  # failures since the last good answer
        self._snapshot: OffsetAndEpoch | None = None  # to FetchSnapshot next

    def next_request(self) -> Any:
        if self._snapshot is not None:
            return to_kio(FetchSnapshotRequest(self.node_id, -1, self._snapshot), self.cluster_id)
        return build_metadata_fetch(self.loader.next_offset)

    def on_response(self, entity: Any) -> MetadataDelta | None:
        if self._snapshot is not None:
            return self._on_snapshot(entity)
        try:
            part = entity.responses[0].partitions[0]
        except (AttributeError, IndexError):
            raise MetadataFetchError("not a metadata Fetch answer") from None
        if part.error_code.value != Errors.NONE:
            raise MetadataFetchError(f"metadata fetch error {part.error_code}")
        self.attempt = 0
        if part.snapshot_id.end_offset >= 0:
            self._snapshot = OffsetAndEpoch(int(part.snapshot_id.end_offset),
                                            int(part.snapshot_id.epoch))  # fmt: skip
            return None
        if not part.records:
            return None
        return self._load(lambda: self.loader.apply_fetched(bytes(part.records)))

    def _on_snapshot(self, entity: Any) -> MetadataDelta | None:
        wanted, self._snapshot = self._snapshot, None  # asked again only if the Fetch says so
        assert wanted is not None
        try:
            body = from_kio(entity)
        except ValueError as e:  # e.g. a chunked answer, which we do not assemble
            raise MetadataFetchError(f"FetchSnapshot {wanted}: {e}") from e
        if not isinstance(body, FetchSnapshotResponse) or body.snapshot is None \
                or body.snapshot.snapshot_id != wanted:
            error = getattr(body, "error", None)
            raise MetadataFetchError(f"FetchSnapshot {wanted} failed: {error}")
        self.attempt = 0
        payload = body.snapshot.payload
        log.info("broker %d: loading the metadata snapshot at offset %d (%d bytes)",
                 self.node_id, wanted.offset, len(payload))  # fmt: skip
        return self._load(lambda: self.loader.load_snapshot(payload, wanted.offset))

    def _load(self, load: Any) -> MetadataDelta | None:
        try:
            return load()
        except MetadataRecordError as e:
            log.error("broker %d: metadata not applied, keeping image at offset %d: %s",
                      self.node_id, self.loader.image.offset, e)  # fmt: skip
            return None

    def on_failure(self) -> None:
        self.attempt += 1

    def backoff_ms(self) -> int:
        """How long to wait before the next request after `attempt` failures in a row."""
        if self.attempt == 0:
            return 0
        return min(self.base_backoff_ms * 2 ** min(self.attempt - 1, 5), MAX_BACKOFF_MS)
