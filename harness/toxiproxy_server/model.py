"""API objects of Toxiproxy 2.x: errors, toxic specs and request-body validation (no I/O).

Contract: `parse_*` functions take decoded JSON (whatever a client sent) and either return a
validated value or raise `ApiError` with Toxiproxy's status code and an `error` message that
names the offending field. `ApiError.body()` is Toxiproxy's error JSON:
{"error": ..., "status": ...}.
Where Toxiproxy silently accepts nonsense that would later crash or hang it (negative times, a
slicer with average_size 0), this server answers 400 instead.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from harness.toxiproxy_server.toxics import TOXIC_TYPES

STREAMS = ("upstream", "downstream")  # upstream = client -> server, downstream = server -> client


class ApiError(Exception):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.status = status

    def body(self) -> dict[str, Any]:
        return {"error": self.message, "status": self.status}


def bad_body(detail: str) -> ApiError:
    return ApiError(f"bad request body: {detail}", 400)


def missing_field(name: str) -> ApiError:
    return ApiError(f"missing required field: {name}", 400)


PROXY_NOT_FOUND = ("proxy not found", 404)
PROXY_EXISTS = ("proxy already exists", 409)
TOXIC_NOT_FOUND = ("toxic not found", 404)
TOXIC_EXISTS = ("toxic already exists", 409)
INVALID_STREAM = ("stream was invalid, can be either upstream or downstream", 400)
INVALID_TOXIC_TYPE = ("invalid toxic type", 400)


def error(pair: tuple[str, int]) -> ApiError:
    return ApiError(*pair)


def decode_json(body: bytes) -> Any:
    if not body.strip():
        raise bad_body("EOF (empty body, expected JSON)")
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad_body(f"invalid JSON: {exc}") from None


def expect_object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise bad_body(f"{where} must be a JSON object, got {type(value).__name__}")
    return value


def opt_str(obj: dict[str, Any], key: str, where: str = "") -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise bad_body(f"field {where}{key!r} must be a string, got {json.dumps(value)}")
    return value


def opt_bool(obj: dict[str, Any], key: str, where: str = "") -> bool | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise bad_body(f"field {where}{key!r} must be true or false, got {json.dumps(value)}")
    return value


def split_host_port(address: str, field_name: str) -> tuple[str, int]:
    """'host:port', '[v6]:port' or ':port' -> (host, port); 400 naming the field otherwise."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise bad_body(f"{field_name} {address!r} is not host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise bad_body(f"{field_name} {address!r}: an IPv6 host must be in brackets")
    return host, int(port_text)


@dataclass(slots=True)
class ToxicSpec:
    """One toxic as the API shows it; `direction` is the index into STREAMS."""

    name: str
    type: str
    stream: str
    toxicity: float
    attributes: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        toxicity: float | int = self.toxicity
        if float(toxicity).is_integer():
            toxicity = int(toxicity)  # Go prints float32 1 as `1`
        return {
            "attributes": dict(self.attributes),
            "name": self.name,
            "type": self.type,
            "stream": self.stream,
            "toxicity": toxicity,
        }


def _toxicity(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        got = json.dumps(value)
        raise bad_body(f"field 'toxicity' must be a number between 0 and 1, got {got}")
    if not 0.0 <= value <= 1.0:
        raise bad_body(f"field 'toxicity' must be between 0 and 1, got {value}")
    return float(value)


def _attributes(toxic_type: str, raw: Any, base: dict[str, int]) -> dict[str, int]:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise bad_body(f"field 'attributes' must be a JSON object, got {json.dumps(raw)}")
    result = dict(base)
    for key, _default in TOXIC_TYPES[toxic_type].attributes:
        if key not in raw:
            continue
        value = raw[key]
        is_int = isinstance(value, int) and not isinstance(value, bool)
        if isinstance(value, float) and value.is_integer():
            value, is_int = int(value), True
        if not is_int or value < 0:
            raise bad_body(
                f"attributes.{key} of a {toxic_type} toxic must be a non-negative integer, "
                f"got {json.dumps(value)}"
            )
        result[key] = value
    if toxic_type == "slicer" and result["average_size"] < 1:
        raise bad_body("attributes.average_size of a slicer toxic must be at least 1")
    return result


def parse_new_toxic(body: Any, existing_names: set[str]) -> ToxicSpec:
    obj = expect_object(body, "toxic")
    stream = obj.get("stream")
    stream = "downstream" if stream in (None, "") else stream
    if stream not in STREAMS:
        raise error(INVALID_STREAM)
    toxic_type = opt_str(obj, "type") or ""
    name = opt_str(obj, "name") or f"{toxic_type}_{stream}"
    if toxic_type not in TOXIC_TYPES:
        raise ApiError(f"invalid toxic type: {toxic_type!r}", 400)
    if name in existing_names:
        raise error(TOXIC_EXISTS)
    toxicity = _toxicity(obj["toxicity"]) if obj.get("toxicity") is not None else 1.0
    defaults = dict(TOXIC_TYPES[toxic_type].attributes)
    attributes = _attributes(toxic_type, obj.get("attributes"), defaults)
    return ToxicSpec(name, toxic_type, stream, toxicity, attributes)


def parse_toxic_update(body: Any, current: ToxicSpec) -> ToxicSpec:
    """Toxiproxy updates only `attributes` (merged over the current ones) and `toxicity`."""
    obj = expect_object(body, "toxic")
    toxicity = current.toxicity
    if obj.get("toxicity") is not None:
        toxicity = _toxicity(obj["toxicity"])
    attributes = _attributes(current.type, obj.get("attributes"), current.attributes)
    return ToxicSpec(current.name, current.type, current.stream, toxicity, attributes)


@dataclass(slots=True)
class ProxyInput:
    name: str | None
    listen: str | None
    upstream: str | None
    enabled: bool | None


def parse_proxy(body: Any, where: str = "") -> ProxyInput:
    obj = expect_object(body, f"proxy{where}")
    return ProxyInput(
        name=opt_str(obj, "name", where),
        listen=opt_str(obj, "listen", where),
        upstream=opt_str(obj, "upstream", where),
        enabled=opt_bool(obj, "enabled", where),
    )
