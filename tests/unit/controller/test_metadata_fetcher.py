"""The broker's MetadataFetcher (both runtimes drive it) against a lone controller (a one-voter
quorum), through the codec as on the wire: a broker below the log start is told the
SnapshotId by Fetch, gets the snapshot by FetchSnapshot and fetches the records after it; the
fetcher backs off on errors. The controller's own snapshots are test_controller_snapshots.py."""

from __future__ import annotations

import pytest

from broker_app.controller.apis import decode_controller_request
from broker_app.controller.config import ControllerConfig
from broker_app.controller.messages import CreateTopicsRequest, NewTopic
from broker_app.metadata import MetadataLoader
from broker_app.metadata.metadata_fetcher import MetadataFetcher, MetadataFetchError
from broker_app.protocol.codec import decode_response, encode_request, encode_response
from broker_app.raft.kio_codec import from_kio, to_kio
from broker_app.raft.log import OffsetAndEpoch
from broker_app.raft.messages import Errors, FetchSnapshotRequest
from tests.unit.controller.one_voter import OneVoter

FETCH_SNAPSHOT = 59


def same_state(a, b) -> bool:
    return a.brokers == b.brokers and a.topics == b.topics


def _roundtrip(voter: OneVoter, api: int, version: int, entity) -> object:
    request = decode_controller_request(encode_request("test", 7, entity)[4:])
    response = voter.handle(request)
    wire = encode_response(request.correlation_id, api, response)
    return decode_response(api, version, wire[4:])[1]


def test_a_broker_below_the_log_start_fetches_the_snapshot() -> None:
    # No size or time trigger: the test decides when the controller snapshots.
    voter = OneVoter(ControllerConfig(snapshot_max_new_record_bytes=1 << 62,
                                      snapshot_max_interval_ms=0))
    voter.start_brokers(1)
    voter.raft.create_topics(CreateTopicsRequest([NewTopic(t, 2, 1) for t in "ab"]), 0)
    voter.commit()
    snap = voter.raft.create_snapshot(voter.now)
    assert voter.raft.metadata_log.log_start_offset == snap.snapshot_id.offset > 0
    voter.raft.create_topics(CreateTopicsRequest([NewTopic("c", 1, 1)]), 0)
    voter.commit()
    fetcher = MetadataFetcher(1, "highwater-cluster", MetadataLoader(), backoff_ms=100)

    def send() -> object:
        request = fetcher.next_request()
        api, version = request.__api_key__, request.__version__
        return fetcher.on_response(_roundtrip(voter, api, version, request))

    assert fetcher.next_request().__api_key__ == 1
    assert send() is None  # the answer names the snapshot, no records
    ask = fetcher.next_request()
    assert ask.__api_key__ == FETCH_SNAPSHOT
    delta = send()
    assert delta is not None and {"a", "b"} <= set(delta.new.topics)
    assert fetcher.loader.next_offset == snap.snapshot_id.offset
    delta = send()  # the records after the snapshot
    assert delta is not None and same_state(fetcher.loader.image, voter.image)
    assert {"a", "b", "c"} <= set(fetcher.loader.image.topics)

    stale = to_kio(FetchSnapshotRequest(1, -1, OffsetAndEpoch(1, 1)), "x")
    assert from_kio(_roundtrip(voter, FETCH_SNAPSHOT, 0, stale)).error is \
        Errors.SNAPSHOT_NOT_FOUND


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
