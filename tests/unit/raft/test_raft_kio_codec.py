"""Raft messages through kio's Kafka entities and bytes and back, field for field."""

import io

import pytest
from kio.serial import entity_reader, entity_writer

from broker_app.raft.kio_codec import from_kio, to_kio
from broker_app.raft.log import Batch, OffsetAndEpoch, Snapshot
from broker_app.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Errors,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    VoteRequest,
    VoteResponse,
)

BATCHES = (Batch(7, 3, (b"leader change",), control=True), Batch(8, 3, (b"x", b"", b"yz")))

MESSAGES = [
    VoteRequest(5, 2, 4, 123),
    VoteRequest(6, 2, 4, 123, pre_vote=True),
    VoteResponse(5, None, True),
    VoteResponse(6, 3, False),
    BeginQuorumEpochRequest(5, 2),
    BeginQuorumEpochResponse(5, 2),
    BeginQuorumEpochResponse(7, None, Errors.FENCED_LEADER_EPOCH),
    EndQuorumEpochRequest(5, 2, (3, 1)),
    EndQuorumEpochResponse(5, 2, Errors.NONE),
    FetchRequest(3, 5, 10, 4, None),
    FetchRequest(3, 5, 10, 4, 9),
    FetchResponse(5, 2, high_watermark=8, log_start_offset=7, batches=BATCHES),
    FetchResponse(5, 2, high_watermark=None, diverging_epoch=OffsetAndEpoch(6, 2)),
    FetchResponse(5, 2, high_watermark=9, log_start_offset=9,
                  snapshot_id=OffsetAndEpoch(9, 4)),
    FetchResponse(6, None, Errors.NOT_LEADER_OR_FOLLOWER),
    FetchSnapshotRequest(3, 5, OffsetAndEpoch(9, 4)),
    FetchSnapshotResponse(5, 2, snapshot=Snapshot(OffsetAndEpoch(9, 4), b"image bytes")),
    FetchSnapshotResponse(5, 2, Errors.SNAPSHOT_NOT_FOUND),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_round_trip_through_kafka_bytes(message):
    entity = to_kio(message, cluster_id="c1")
    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    decoded, size = entity_reader(type(entity))(buf.getvalue(), 0)
    assert size == len(buf.getvalue())
    assert from_kio(decoded) == message


def test_fetch_goes_to_the_metadata_topic_id_and_other_partitions_are_refused():
    entity = to_kio(FetchRequest(3, 5, 10, 4, None))
    assert entity.topics[0].topic_id.int == 1  # Kafka's METADATA_TOPIC_ID
    two = type(entity.topics[0])(topic_id=entity.topics[0].topic_id,
                                 partitions=entity.topics[0].partitions * 2)
    with pytest.raises(ValueError, match="one Raft partition"):
        from_kio(type(entity)(**{**{f: getattr(entity, f) for f in (
            "cluster_id", "replica_state", "max_wait", "min_bytes", "max_bytes",
            "isolation_level", "session_id", "session_epoch", "forgotten_topics_data",
            "rack_id")}, "topics": (two,)}))
