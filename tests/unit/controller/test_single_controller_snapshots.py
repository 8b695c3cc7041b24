"""KIP-630 snapshots of the single controller's FileMetadataLog (real files in tmp_path): the
image is written at the log end and the log restarts there; a restart rebuilds the image from
the snapshot and the records after it; a broker below the log start is told the SnapshotId
by Fetch and gets the snapshot by FetchSnapshot (through the codec, as on the wire)."""

from __future__ import annotations

from pathlib import Path

from broker_app.controller.apis import decode_controller_request
from broker_app.controller.config import ControllerConfig
from broker_app.controller.controller_apis import ControllerApis
from broker_app.controller.messages import (
    CreateTopicsRequest,
    HeartbeatRequest,
    NewTopic,
    RegisterBrokerRequest,
)
from broker_app.controller.metadata_log import FileMetadataLog
from broker_app.controller.quorum_controller import QuorumController
from broker_app.metadata import MetadataLoader
from broker_app.metadata.snapshot import encode_snapshot
from broker_app.protocol.codec import decode_response, encode_request, encode_response
from broker_app.raft.file_log import write_snapshot_file
from broker_app.raft.kio_codec import from_kio, to_kio
from broker_app.raft.log import OffsetAndEpoch, Snapshot
from broker_app.raft.messages import Errors, FetchSnapshotRequest, FetchSnapshotResponse
from broker_app.server.cluster_link import build_metadata_fetch

FETCH_SNAPSHOT = 59


def populate(controller: QuorumController, topics: tuple[str, ...] = ("t",)) -> None:
    reg, _ = controller.register_broker(RegisterBrokerRequest(1, "inc", "127.0.0.1", 9092), 0)
    controller.heartbeat(HeartbeatRequest(1, reg.broker_epoch, reg.broker_epoch + 1), 0)
    controller.create_topics(CreateTopicsRequest([NewTopic(t, 2, 1) for t in topics]), 0)


def same_state(a, b) -> bool:
    return a.brokers == b.brokers and a.topics == b.topics


def test_a_snapshot_empties_the_log_and_a_restart_rebuilds_from_it(tmp_path: Path) -> None:
    log = FileMetadataLog(tmp_path)
    controller = QuorumController(ControllerConfig(), log)
    populate(controller)
    assert log.bytes_since_snapshot > 0
    end, epoch = log.end_offset, log.epoch
    snap = log.create_snapshot(controller.image)
    assert snap.snapshot_id.offset == end == log.log_start_offset == log.end_offset
    assert log.bytes_since_snapshot == 0 and list(log.replay()) == []
    controller.create_topics(CreateTopicsRequest([NewTopic("after", 1, 1)]), 0)
    image = controller.image
    log.close()

    again = FileMetadataLog(tmp_path)
    assert again.epoch > epoch  # a restart takes a new epoch, above the snapshot's
    restarted = QuorumController(ControllerConfig(), again)
    assert same_state(restarted.image, image) and restarted.image.offset == image.offset
    assert {"t", "after"} <= set(restarted.image.topics)
    again.close()


def test_a_crash_between_snapshot_and_truncation_truncates_on_open(tmp_path: Path) -> None:
    log = FileMetadataLog(tmp_path)
    controller = QuorumController(ControllerConfig(), log)
    populate(controller)
    image, end = controller.image, log.end_offset
    write_snapshot_file(log.dir, Snapshot(OffsetAndEpoch(end, log.epoch),
                                          encode_snapshot(image)))  # ... and crash
    log.close()
    again = FileMetadataLog(tmp_path)
    assert again.log_start_offset == end == again.end_offset
    assert same_state(QuorumController(ControllerConfig(), again).image, image)
    again.close()


def _roundtrip(apis: ControllerApis, api: int, version: int, entity) -> object:
    request = decode_controller_request(encode_request("test", 7, entity)[4:])
    response = apis.handle(request, 0)
    wire = encode_response(request.correlation_id, api, response)
    return decode_response(api, version, wire[4:])[1]


def test_a_broker_below_the_log_start_fetches_the_snapshot(tmp_path: Path) -> None:
    log = FileMetadataLog(tmp_path)
    controller = QuorumController(ControllerConfig(), log)
    populate(controller, ("a", "b"))
    snap = log.create_snapshot(controller.image)
    controller.create_topics(CreateTopicsRequest([NewTopic("c", 1, 1)]), 0)
    apis = ControllerApis(controller, log, ("127.0.0.1", 9093))
    broker = MetadataLoader()

    fetched = _roundtrip(apis, 1, 12, build_metadata_fetch(broker.next_offset, max_wait_ms=0))
    part = fetched.responses[0].partitions[0]
    assert (part.snapshot_id.end_offset, part.snapshot_id.epoch) == \
        (snap.snapshot_id.offset, snap.snapshot_id.epoch) and not part.records

    ask = to_kio(FetchSnapshotRequest(1, -1, snap.snapshot_id), "highwater-cluster")
    answer = from_kio(_roundtrip(apis, FETCH_SNAPSHOT, 0, ask))
    assert isinstance(answer, FetchSnapshotResponse) and answer.snapshot == snap
    broker.load_snapshot(answer.snapshot.payload, snap.snapshot_id.offset)

    fetched = _roundtrip(apis, 1, 12, build_metadata_fetch(broker.next_offset, max_wait_ms=0))
    broker.apply_fetched(bytes(fetched.responses[0].partitions[0].records))
    assert same_state(broker.image, controller.image) and {"a", "b", "c"} <= set(
        broker.image.topics)

    stale = to_kio(FetchSnapshotRequest(1, -1, OffsetAndEpoch(1, 1)), "x")
    assert from_kio(_roundtrip(apis, FETCH_SNAPSHOT, 0, stale)).error is \
        Errors.SNAPSHOT_NOT_FOUND
    log.close()
