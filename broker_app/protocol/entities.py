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
from collections.abc import Callable
from dataclasses import MISSING, fields
from functools import cache
from typing import Any

from kio.schema.errors import ErrorCode
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
)

Convert = Callable[[Any], Any]
# ErrorCode(int) goes through Enum's slow call path; responses carry an error code per
# partition, so the members are looked up in a plain dict first.
_ERROR_CODES: dict[int, ErrorCode] = {int(e.value): e for e in ErrorCode}


def _error_code(value: Any) -> Any:
    if value is None or isinstance(value, ErrorCode):
        return value
    code = _ERROR_CODES.get(value) if type(value) is int else None
    return code if code is not None else ErrorCode(int(value))


def _timedelta(value: Any) -> Any:
    if value is None or isinstance(value, datetime.timedelta):
        return value
    return datetime.timedelta(milliseconds=value)


def _datetime(value: Any) -> Any:
    if isinstance(value, int):
        # -1 means "no timestamp" on the wire; kio writes None as -1.
        return None if value < 0 else datetime.datetime.fromtimestamp(value / 1000, datetime.UTC)
    return value


def _tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


_CONVERTERS: dict[str, Convert] = {
    "error_code": _error_code,
    "timedelta_i32": _timedelta,
    "timedelta_i64": _timedelta,
    "datetime_i64": _datetime,
}


def _entity(cls: type) -> Convert:
    def convert(value: Any) -> Any:
        return None if value is None else build(cls, value)

    return convert


def _entity_tuple(cls: type) -> Convert:
    def convert(value: Any) -> Any:
        if value is None:
            return None
        make = _builder(cls)
        return tuple([make(v) for v in value])

    return convert


@cache
def _builder(cls: type) -> Callable[[dict[str, Any]], Any]:
    """build() for one class, its field plan worked out once: (name, converter or None for
    values taken as given, required)."""
    steps: list[tuple[str, Convert | None, bool]] = []
    for f in fields(cls):
        kind = classify_field(f)
        required = f.default is MISSING and f.default_factory is MISSING
        convert: Convert | None
        if isinstance(kind, EntityTupleField):
            convert = _entity_tuple(kind.type_)
        elif isinstance(kind, EntityField):
            convert = _entity(kind.type_)
        elif isinstance(kind, PrimitiveTupleField):
            convert = _tuple
        else:
            convert = _CONVERTERS.get(f.metadata.get("kafka_type") or "")
        steps.append((f.name, convert, required))
    where = f"{cls.__module__}.{cls.__qualname__}"

    def make(data: dict[str, Any]) -> Any:
        kwargs: dict[str, Any] = {}
        for name, convert, required in steps:
            if name in data:
                value = data[name]
                kwargs[name] = value if convert is None else convert(value)
            elif required:
                raise TypeError(f"{where}: missing field {name!r}")
        return cls(**kwargs)

    return make


def build(cls: type, data: dict[str, Any]) -> Any:
    return _builder(cls)(data)
