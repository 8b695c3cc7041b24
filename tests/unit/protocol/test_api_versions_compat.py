"""ApiVersions follows Kafka 4.x: Produce listed from v0 (KAFKA-18659) but v0-v2 requests are
rejected; Metadata's controller id in cluster mode is a random alive broker (KRaft)."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest

from broker_app.protocol.apis import ADVERTISED_APIS, SUPPORTED_APIS, ApiKey
from broker_app.protocol.codec import decode_request
from broker_app.protocol.errors import UnsupportedRequest


def test_produce_advertised_from_v0_like_kafka_4() -> None:
    assert ADVERTISED_APIS[ApiKey.PRODUCE].min_version == 0
    assert ADVERTISED_APIS[ApiKey.PRODUCE].max_version == SUPPORTED_APIS[ApiKey.PRODUCE].max_version
    others = {k: v for k, v in ADVERTISED_APIS.items() if k != ApiKey.PRODUCE}
    assert others == {k: v for k, v in SUPPORTED_APIS.items() if k != ApiKey.PRODUCE}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_v0_to_v2_requests_are_rejected(version: int) -> None:
    # header v1: api_key, api_version, correlation_id, client_id; then acks, timeout, no topics
    frame = struct.pack(">hhih", 0, version, 7, 1) + b"c" + struct.pack(">hii", 1, 1000, 0)
    with pytest.raises(UnsupportedRequest) as e:
        decode_request(frame)
    assert e.value.api_version == version and e.value.correlation_id == 7


def _handle(broker, api_key: int, version: int, data: dict):
    return broker.call(api_key, version, data)


def test_api_versions_response_lists_produce_from_v0(broker) -> None:
    resp = _handle(broker, ApiKey.API_VERSIONS, 3,
                   {"client_software_name": "t", "client_software_version": "1"})  # fmt: skip
    produce = next(a for a in resp.api_keys if a.api_key == ApiKey.PRODUCE)
    assert (produce.min_version, produce.max_version) == (0, SUPPORTED_APIS[ApiKey.PRODUCE][1])


class _Image:
    def __init__(self, live: list[int]) -> None:
        self.topics: dict = {}
        self.brokers = {b: SimpleNamespace(host="h", port=9000 + b, rack=None) for b in live}
        self._live = live

    def live_brokers(self) -> list[int]:
        return list(self._live)


@pytest.mark.parametrize("live,allowed", [([1, 2, 3], {1, 2, 3}), ([], {-1})])
def test_cluster_metadata_controller_id_is_an_alive_broker(broker, live, allowed) -> None:
    broker.apis.context.cluster = SimpleNamespace(image=_Image(live))
    seen = set()
    for _ in range(30):
        resp = _handle(broker, ApiKey.METADATA, 12, {
            "topics": [], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        })  # fmt: skip
        seen.add(resp.controller_id)
    assert seen <= allowed and seen
