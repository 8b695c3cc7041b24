"""Request decoding and response encoding with kio, sans-I/O.

decode_request(frame, apis=SUPPORTED_APIS) -> Request: reads api key/version/correlation id,
rejects what the given API table (the broker's apis.py by default; the controller passes its own)
does not advertise (UnsupportedRequest), except ApiVersions at an unknown version, which comes
back as Request(body=None, unsupported_api_versions=True) so the handler can answer in the v0
format (KIP-511: clients then retry with a version from the returned ranges). The request header
is v2 (flexible, with tagged fields) when the api version is flexible, else v1. The body is
pre-scanned (protocol/prescan.py: every length checked against the frame, unknown tagged fields
in header and body skipped as KIP-482 says) before kio decodes it.

encode_response(request, body) -> size-prefixed bytes. Response header v1 for flexible versions,
v0 otherwise, and ALWAYS v0 for ApiVersions (clients parse it before knowing our versions).
"""

from __future__ import annotations

import io
import logging
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.request_header.v1 import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2 import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader, entity_writer

from . import prescan
from .apis import SUPPORTED_APIS, ApiKey, VersionRange
from .errors import MalformedRequest, UnsupportedRequest

log = logging.getLogger(__name__)

_PREFIX = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")


@dataclass(slots=True)
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any  # the kio request entity, None only for an unsupported ApiVersions version
    unsupported_api_versions: bool = False


@cache
def request_class(api_key: int, api_version: int) -> type:
    return load_request_schema(api_key, api_version)


@cache
def response_class(api_key: int, api_version: int) -> type:
    return load_response_schema(api_key, api_version)


@cache
def _reader(cls: type) -> Any:
    return entity_reader(cls)


@cache
def _writer(cls: type) -> Any:
    return entity_writer(cls)


def peek_header(frame: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id); MalformedRequest when the frame is too short."""
    if len(frame) < _PREFIX.size:
        raise MalformedRequest(
            f"request of {len(frame)} bytes is shorter than the 8-byte header prefix"
        )
    return _PREFIX.unpack_from(frame, 0)


def decode_request(frame: bytes, apis: Mapping[int, VersionRange] = SUPPORTED_APIS) -> Request:
    """Decode one frame, accepting only the (api, version) ranges in `apis`."""
    api_key, api_version, correlation_id = peek_header(frame)
    vr = apis.get(api_key)
    if vr is None or api_version not in vr:
        if api_key == ApiKey.API_VERSIONS:
            return Request(api_key, api_version, correlation_id, None, None, True)
        raise UnsupportedRequest(api_key, api_version, correlation_id)
    cls = request_class(api_key, api_version)
    where = f"api_key={api_key} api_version={api_version} correlation_id={correlation_id}"
    client_id, offset = _read_header_rest(frame, cls.__flexible__, where)
    try:
        # Bounds and nullability first: kio trusts declared lengths (a huge array count
        # aborts the process) and raises on unknown tagged fields, which KIP-482 says to skip.
        stop, unknown_tags = prescan.scan(cls, frame, offset)
        if unknown_tags:
            log.debug("%s (%s): %d unknown tagged fields skipped", cls.__name__, where,
                      unknown_tags)  # fmt: skip
            body_bytes = prescan.strip(cls, frame, offset)
            body, _ = _reader(cls)(body_bytes, 0)
            size = stop - offset
        else:
            body, size = _reader(cls)(frame, offset)
    except Exception as e:
        raise MalformedRequest(
            f"bad {cls.__name__} body at byte {offset} ({where}): {type(e).__name__}: {e}"
        ) from e
    if offset + size != len(frame):
        # Kafka ignores bytes after the body too, and librdkafka 2.16 sends some (3 extra bytes
        # on an all-topics Metadata v12), so rejecting them would lock real clients out.
        log.debug(
            "%s (%s) has %d trailing bytes, ignored",
            cls.__name__,
            where,
            len(frame) - offset - size,
        )
    return Request(api_key, api_version, correlation_id, client_id, body)


def _read_header_rest(frame: bytes, flexible: bool, where: str) -> tuple[str | None, int]:
    """client_id (a legacy nullable string even in header v2) and, in v2, the header's tagged
    fields, all skipped (KIP-482; no header tag is used by this broker). Returns
    (client_id, offset of the body)."""
    pos = _PREFIX.size
    if len(frame) < pos + 2:
        raise MalformedRequest(f"bad request header ({where}): no client_id length")
    (n,) = _INT16.unpack_from(frame, pos)
    pos += 2
    client_id = None
    if n >= 0:
        if pos + n > len(frame):
            raise MalformedRequest(
                f"bad request header ({where}): client_id of {n} bytes at byte {pos}, "
                f"only {len(frame) - pos} left"
            )
        try:
            client_id = frame[pos : pos + n].decode()
        except UnicodeDecodeError as e:
            raise MalformedRequest(f"bad request header ({where}): client_id: {e}") from e
        pos += n
    elif n != -1:
        raise MalformedRequest(f"bad request header ({where}): client_id length {n}")
    if flexible:
        try:
            pos, _ = prescan.skip_tagged_fields(frame, pos, len(frame), "RequestHeader")
        except prescan.PrescanError as e:
            raise MalformedRequest(f"bad request header ({where}): {e}") from e
    return client_id, pos


def response_header_flexible(api_key: int, response_cls: type) -> bool:
    return response_cls.__flexible__ and api_key != ApiKey.API_VERSIONS


def encode_response(correlation_id: int, api_key: int, body: Any) -> bytes:
    """Size prefix + response header + body, as one bytes object ready to write."""
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    buf.write(_INT32.pack(correlation_id))
    if response_header_flexible(api_key, type(body)):
        buf.write(b"\0")  # empty tagged fields
    _writer(type(body))(buf, body)
    out = buf.getbuffer()
    _INT32.pack_into(out, 0, len(out) - 4)
    del out
    return buf.getvalue()


def encode_request(header_client_id: str | None, correlation_id: int, body: Any) -> bytes:
    """Size-prefixed request, for tests and the benchmark's raw clients."""
    cls = type(body)
    buf = io.BytesIO()
    header_cls = RequestHeaderV2 if cls.__flexible__ else RequestHeaderV1
    header = header_cls(
        request_api_key=cls.__api_key__,
        request_api_version=cls.__version__,
        correlation_id=correlation_id,
        client_id=header_client_id,
    )
    _writer(header_cls)(buf, header)
    _writer(cls)(buf, body)
    payload = buf.getvalue()
    return _INT32.pack(len(payload)) + payload


def decode_response(api_key: int, api_version: int, payload: bytes) -> tuple[int, Any]:
    """(correlation_id, body) of a response without its size prefix (tests, and the broker's
    clients of the controller and of other brokers). The same pre-scan as requests: lengths
    bounded by the payload, unknown tagged fields (header and body) skipped. ValueError
    (PrescanError) when the payload does not fit the schema."""
    cls = response_class(api_key, api_version)
    if len(payload) < 4:
        raise prescan.PrescanError(f"response of {len(payload)} bytes has no correlation id")
    (correlation_id,) = _INT32.unpack_from(payload, 0)
    offset = 4
    if response_header_flexible(api_key, cls):
        offset, _ = prescan.skip_tagged_fields(payload, offset, len(payload), "ResponseHeader")
    _stop, unknown_tags = prescan.scan(cls, payload, offset)
    try:
        if unknown_tags:
            body, _ = _reader(cls)(prescan.strip(cls, payload, offset), 0)
        else:
            body, _ = _reader(cls)(payload, offset)
    except Exception as e:  # kio's own errors (bad UTF-8, enum values ...)
        raise prescan.PrescanError(f"bad {cls.__name__}: {type(e).__name__}: {e}") from e
    return correlation_id, body
