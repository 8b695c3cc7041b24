"""KIP-630 snapshots of the single controller's FileMetadataLog (real files in tmp_path): the
image is written at the log end and the log restarts there; a restart rebuilds the image from
the snapshot and the records after it; a broker below the log start is told the SnapshotId
by Fetch and gets the snapshot by FetchSnapshot (through the codec, as on the wire)."""

from __future__ import annotations

from pathlib import Path

import pytest

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
from broker_app.metadata.metadata_fetcher import MetadataFetcher, MetadataFetchError
from broker_app.metadata.snapshot import encode_snapshot
from broker_app.protocol.codec import decode_response, encode_request, encode_response
from broker_app.raft.file_log import write_snapshot_file
from broker_app.raft.kio_codec import from_kio, to_kio
from broker_app.raft.log import OffsetAndEpoch, Snapshot
from broker_app.raft.messages import Errors, FetchSnapshotRequest

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
    """The broker's MetadataFetcher (both runtimes drive it) against the real ControllerApis,
    through the codec: Fetch names the SnapshotId, the fetcher asks FetchSnapshot next, loads
    it, and fetches the records after it."""
    log = FileMetadataLog(tmp_path)
    controller = QuorumController(ControllerConfig(), log)
    populate(controller, ("a", "b"))
    snap = log.create_snapshot(controller.image)
    controller.create_topics(CreateTopicsRequest([NewTopic("c", 1, 1)]), 0)
    apis = ControllerApis(controller, log, ("127.0.0.1", 9093))
    fetcher = MetadataFetcher(1, "highwater-cluster", MetadataLoader(), backoff_ms=100)

    def send() -> object:
        request = fetcher.next_request()
        api, version = request.__api_key__, request.__version__
        return fetcher.on_response(_roundtrip(apis, api, version, request))

    assert fetcher.next_request().__api_key__ == 1
    assert send() is None  # the answer names the snapshot, no records
    ask = fetcher.next_request()
    assert ask.__api_key__ == FETCH_SNAPSHOT
    delta = send()
    assert delta is not None and {"a", "b"} <= set(delta.new.topics)
    assert fetcher.loader.next_offset == snap.snapshot_id.offset
    delta = send()  # the records after the snapshot
    assert delta is not None and same_state(fetcher.loader.image, controller.image)
    assert {"a", "b", "c"} <= set(fetcher.loader.image.topics)

    stale = to_kio(FetchSnapshotRequest(1, -1, OffsetAndEpoch(1, 1)), "x")
    assert from_kio(_roundtrip(apis, FETCH_SNAPSHOT, 0, stale)).error is \
        Errors.SNAPSHOT_NOT_FOUND
    log.close()


def test_the_metadata_fetcher_backs_off_on_errors_and_resets_on_an_answer() -> None:
    from types import SimpleNamespace

    fetcher = MetadataFetcher(1, "c", MetadataLoader(), backoff_ms=100)
    error = SimpleNamespace(responses=[SimpleNamespace(partitions=[SimpleNamespace(
        error_code=SimpleNamespace(value=6))])])  # NOT_LEADER_OR_FOLLOWER
    for expected in (100, 200, 400, 800, 1600, 2000, 2000):
        with pytest.raises(MetadataFetchError, match="metadata fetch error"):
            fetcher.on_response(error)
        fetcher.on_failure()
        assert fetcher.backoff_ms() == expected
    empty = SimpleNamespace(responses=[SimpleNamespace(partitions=[SimpleNamespace(
        error_code=SimpleNamespace(value=0), snapshot_id=SimpleNamespace(end_offset=-1),
        records=None)])])
    assert fetcher.on_response(empty) is None and fetcher.backoff_ms() == 0
