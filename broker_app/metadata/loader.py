"""MetadataLoader: the broker side of metadata propagation, sans-I/O.

A broker fetches `__cluster_metadata-0` from the controller with ordinary Fetch requests,
starting at `loader.next_offset`, and hands each response's records bytes to
`apply_fetched(records)`. The loader frames whole batches (a partial tail batch, normal at the
end of a fetch response, is left for the next fetch), skips records below next_offset (a
re-fetch after a retry), decodes and applies the rest in one step, and returns the
MetadataDelta between the old and new image (delta.local_changes(node_id) says what to lead,
follow or delete). A malformed record raises MetadataRecordError naming its offset and leaves
the image unchanged; the broker logs it and keeps serving the image it has.

`load_snapshot(payload, end_offset)` replaces the image with a snapshot's (KIP-630: the broker's
fetch offset was below the controller's log start, the Fetch answer named a SnapshotId and the
broker fetched it with FetchSnapshot) and returns the delta from the old image, so replicas
the snapshot no longer lists are deleted and changed ones re-led as after any fetch. A
snapshot that ends at or below next_offset is ignored (an empty delta): it holds nothing new.

Deviation: the loader never unwinds what it applied. Kafka's brokers are Raft observers that
truncate their copy of the metadata log on a diverging epoch, but their listeners only ever see
committed records, which a correct quorum never truncates; here brokers fetch committed records
from the active controller, so the same holds. Only a legacy switch that breaks the quorum (L13's
legacy mode, where a committed ISR shrink is truncated away) can take back what a broker applied;
the broker then keeps the image it had, records that are no longer in the log included, which
shows in that scenario as a settle timeout, not as a wrong verdict.
"""

from __future__ import annotations

from broker_app.storage import iter_batches
from broker_app.storage.errors import CorruptRecordError
from broker_app.storage.records import decode_records

from .image import MetadataDelta, MetadataImage
from .records import MetadataRecord, MetadataRecordError, decode_record
from .snapshot import decode_snapshot


class MetadataLoader:
    def __init__(self, image: MetadataImage | None = None) -> None:
        self.image = image or MetadataImage()

    @property
    def next_offset(self) -> int:
        """The fetch offset to ask for, and what heartbeats report as metadata offset + 1."""
        return self.image.offset + 1

    def apply_fetched(self, records: bytes | memoryview) -> MetadataDelta:
        start = self.next_offset
        decoded: list[tuple[int, MetadataRecord]] = []
        try:
            for header, view in iter_batches(records, allow_partial_tail=True):
                if header.last_offset < start:
                    continue
                for rec in decode_records(view):
                    if rec.offset >= start:
                        decoded.append(
                            (rec.offset, decode_record(rec.value, f"offset {rec.offset}"))
                        )
        except CorruptRecordError as e:
            raise MetadataRecordError(f"metadata log batch from offset {start}: {e}") from e
        old = self.image
        self.image = old.apply_all(decoded)
        return MetadataDelta(old, self.image)

    def load_snapshot(self, payload: bytes | memoryview, end_offset: int) -> MetadataDelta:
        old = self.image
        if end_offset <= self.next_offset:
            return MetadataDelta(old, old)
        self.image = decode_snapshot(payload, end_offset, f"snapshot at offset {end_offset}")
        return MetadataDelta(old, self.image)
