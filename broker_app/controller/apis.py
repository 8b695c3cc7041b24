"""The controller's API table and request decoding (the broker's table is protocol/apis.py).

Reuses the project codec (kio schemas, header handling, encode_response); only the table of
advertised (api, version) ranges differs, so decoding checks CONTROLLER_APIS instead of the
broker's SUPPORTED_APIS. Ranges: what kio ships and this controller handles; Fetch and Metadata
stop where the broker's do (topic ids from Fetch 13), AlterPartition starts at 2 (topic ids,
the only versions kio ships).
"""

from __future__ import annotations

import logging
from enum import IntEnum
from functools import cache
from typing import Any

from kio.schema.request_header.v1 import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2 import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader

from broker_app.protocol.apis import VersionRange
from broker_app.protocol.codec import Request, peek_header, request_class
from broker_app.protocol.errors import MalformedRequest, UnsupportedRequest

log = logging.getLogger(__name__)


class ControllerApiKey(IntEnum):
    FETCH = 1
    METADATA = 3
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    ELECT_LEADERS = 43
    ALTER_PARTITION_REASSIGNMENTS = 45
    ALTER_PARTITION = 56
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63


CONTROLLER_APIS: dict[int, VersionRange] = {
    ControllerApiKey.FETCH: VersionRange(4, 12),
    ControllerApiKey.METADATA: VersionRange(0, 12),
    ControllerApiKey.API_VERSIONS: VersionRange(0, 3),
    ControllerApiKey.CREATE_TOPICS: VersionRange(2, 7),
    ControllerApiKey.ELECT_LEADERS: VersionRange(0, 2),
    ControllerApiKey.ALTER_PARTITION_REASSIGNMENTS: VersionRange(0, 0),
    ControllerApiKey.ALTER_PARTITION: VersionRange(2, 3),
    ControllerApiKey.BROKER_REGISTRATION: VersionRange(0, 4),
    ControllerApiKey.BROKER_HEARTBEAT: VersionRange(0, 1),
}


@cache
def _reader(cls: type) -> Any:
    return entity_reader(cls)


def decode_controller_request(frame: bytes) -> Request:
    """Like codec.decode_request, against CONTROLLER_APIS. Raises ProtocolError subclasses."""
    api_key, api_version, correlation_id = peek_header(frame)
    vr = CONTROLLER_APIS.get(api_key)
    if vr is None or api_version not in vr:
        if api_key == ControllerApiKey.API_VERSIONS:
            return Request(api_key, api_version, correlation_id, None, None, True)
        raise UnsupportedRequest(api_key, api_version, correlation_id)
    cls = request_class(api_key, api_version)
    header_cls = RequestHeaderV2 if cls.__flexible__ else RequestHeaderV1
    where = f"api_key={api_key} api_version={api_version} correlation_id={correlation_id}"
    try:
        header, offset = _reader(header_cls)(frame, 0)
    except Exception as e:
        raise MalformedRequest(f"bad request header ({where}): {type(e).__name__}: {e}") from e
    try:
        body, _size = _reader(cls)(frame, offset)
    except Exception as e:
        raise MalformedRequest(
            f"bad {cls.__name__} body at byte {offset} ({where}): {type(e).__name__}: {e}"
        ) from e
    return Request(api_key, api_version, correlation_id, header.client_id, body)
