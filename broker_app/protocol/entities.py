"""Build kio entities of any version from plain Python values.

Handlers describe a response once, as nested dicts/lists holding plain ints, strings and bytes
(error codes as int, durations and timestamps as int milliseconds, -1 = none), a superset of
the fields of every version;
`build(ResponseClass, data)` keeps the fields the chosen version has, fills the rest from
their defaults and converts to the kio field types. This keeps one handler per API instead of
one per version. A missing field without a default is a programming error (TypeError naming it).
"""

from __future__ import annotations

import datetime
from dataclasses import MISSING, fields
from functools import cache
from typing import Any

from kio.schema.errors import ErrorCode
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    classify_field,
)

_PRIMITIVE, _ENTITY, _ENTITY_TUPLE = 0, 1, 2


@cache
def _plan(cls: type) -> tuple[tuple[str, int, Any, str | None, bool], ...]:
    plan = []
    for f in fields(cls):
        kind = classify_field(f)
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        if isinstance(kind, EntityTupleField):
            plan.append((f.name, _ENTITY_TUPLE, kind.type_, None, has_default))
        elif isinstance(kind, EntityField):
            plan.append((f.name, _ENTITY, kind.type_, None, has_default))
        else:
            plan.append((f.name, _PRIMITIVE, None, f.metadata.get("kafka_type"), has_default))
    return tuple(plan)


def _convert(kafka_type: str | None, value: Any) -> Any:
    if value is None:
        return None
    if kafka_type == "error_code":
        return value if isinstance(value, ErrorCode) else ErrorCode(int(value))
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        if isinstance(value, datetime.timedelta):
            return value
        return datetime.timedelta(milliseconds=value)
    if kafka_type == "datetime_i64" and isinstance(value, int):
        # -1 means "no timestamp" on the wire; kio writes None as -1.
        return None if value < 0 else datetime.datetime.fromtimestamp(value / 1000, datetime.UTC)
    return value


def build(cls: type, data: dict[str, Any]) -> Any:
    kwargs: dict[str, Any] = {}
    for name, kind, sub, kafka_type, has_default in _plan(cls):
        if name not in data:
            if not has_default:
                raise TypeError(f"{cls.__module__}.{cls.__qualname__}: missing field {name!r}")
            continue
        value = data[name]
        if kind == _PRIMITIVE:
            if isinstance(value, list):
                value = tuple(value)
            kwargs[name] = _convert(kafka_type, value)
        elif kind == _ENTITY:
            kwargs[name] = None if value is None else build(sub, value)
        else:
            kwargs[name] = None if value is None else tuple(build(sub, v) for v in value)
    return cls(**kwargs)
