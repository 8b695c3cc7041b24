"""Request validation and JSON shapes of the Toxiproxy-compatible API (no sockets)."""

from __future__ import annotations

import pytest

from harness.toxiproxy_server.model import (
    ApiError,
    decode_json,
    parse_new_toxic,
    parse_proxy,
    parse_toxic_update,
    split_host_port,
)


def test_toxic_defaults_match_toxiproxy():
    spec = parse_new_toxic({"type": "latency", "attributes": {"latency": 5}}, set())
    assert spec.to_json() == {
        "attributes": {"latency": 5, "jitter": 0},
        "name": "latency_downstream",
        "type": "latency",
        "stream": "downstream",
        "toxicity": 1,
    }


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({"type": "latency", "stream": "sideways"}, 400, "stream was invalid"),
        ({"type": "teleport"}, 400, "invalid toxic type"),
        ({"type": "latency", "attributes": {"latency": "slow"}}, 400, "attributes.latency"),
        ({"type": "latency", "attributes": {"latency": -1}}, 400, "attributes.latency"),
        ({"type": "bandwidth", "attributes": {"rate": 1.5}}, 400, "attributes.rate"),
        ({"type": "slicer", "attributes": {"average_size": 0}}, 400, "average_size"),
        ({"type": "timeout", "toxicity": 2}, 400, "toxicity"),
        ({"type": "timeout", "toxicity": "all"}, 400, "toxicity"),
        ({"type": "timeout", "attributes": [1]}, 400, "attributes"),
        ({"type": "timeout", "name": "taken"}, 409, "toxic already exists"),
        ([], 400, "toxic must be a JSON object"),
    ],
)
def test_bad_toxics_are_rejected_naming_the_field(body, status, needle):
    with pytest.raises(ApiError) as info:
        parse_new_toxic(body, {"taken"})
    assert info.value.status == status
    assert needle in info.value.message


def test_update_merges_attributes_and_keeps_identity():
    current = parse_new_toxic({"type": "latency", "attributes": {"latency": 5, "jitter": 2}}, set())
    updated = parse_toxic_update({"attributes": {"latency": 9}, "toxicity": 0.5}, current)
    assert updated.attributes == {"latency": 9, "jitter": 2}
    assert updated.toxicity == 0.5
    assert (updated.name, updated.type, updated.stream) == (current.name, "latency", "downstream")


def test_proxy_body_types_are_checked():
    with pytest.raises(ApiError, match="'enabled'"):
        parse_proxy({"name": "a", "enabled": "yes"})
    with pytest.raises(ApiError, match="'upstream'"):
        parse_proxy({"name": "a", "upstream": 5})


def test_empty_and_garbage_bodies_are_400():
    for body in (b"", b"{nope", b"\xff\xfe"):
        with pytest.raises(ApiError) as info:
            decode_json(body)
        assert info.value.status == 400
        assert info.value.message.startswith("bad request body")


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("[::]:80", ("::", 80)),
        (":8474", ("", 8474)),
        ("broker-1:9092", ("broker-1", 9092)),
    ],
)
def test_host_port(address, expected):
    assert split_host_port(address, "listen") == expected


@pytest.mark.parametrize("address", ["nohost", "host:port", "h:70000", "::1:80"])
def test_bad_host_port_names_the_field(address):
    with pytest.raises(ApiError, match="upstream"):
        split_host_port(address, "upstream")
