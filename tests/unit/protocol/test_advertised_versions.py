"""KIP-320's client versions: what ApiVersions advertises with and without them."""

from __future__ import annotations

from broker_app.protocol.apis import ADVERTISED_APIS, ApiKey, advertised_apis


def test_kafka_20_versions_give_clients_no_leader_epochs() -> None:
    assert advertised_apis(True) == ADVERTISED_APIS
    old = advertised_apis(False)
    assert ApiKey.OFFSET_FOR_LEADER_EPOCH not in old
    maxima = {k: old[k].max_version for k in (ApiKey.METADATA, ApiKey.LIST_OFFSETS,
                                              ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH)}
    assert maxima == {ApiKey.METADATA: 6, ApiKey.LIST_OFFSETS: 3,
                      ApiKey.OFFSET_COMMIT: 5, ApiKey.OFFSET_FETCH: 4}
    # everything else, and every lower bound, as today's broker advertises it
    for k, r in old.items():
        assert r.min_version == ADVERTISED_APIS[k].min_version
        if k not in maxima:
            assert r == ADVERTISED_APIS[k]
