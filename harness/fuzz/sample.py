"""Random but well-formed kio request entities of any (api, version), for round-trip tests and
the protocol fuzzer: every field filled from its kio schema with a plausible value (small
ints, short names, 0-2 array elements, tagged fields sometimes set, a valid record batch in
`records` fields). Deterministic for a given random.Random.
"""

from __future__ import annotations

import datetime
import random
import uuid
from dataclasses import fields
from typing import Any

from kio.schema.errors import ErrorCode
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    is_optional,
)

from broker_app.storage.records import build_batch

_NAMES = ("t", "fuzz-a", "fuzz-b", "__x", "", "g")


def sample_value(kafka_type: str, nullable: bool, rng: random.Random, topic: str) -> Any:
    if nullable and rng.random() < 0.15:
        return None
    if kafka_type == "bool":
        return rng.random() < 0.5
    if kafka_type == "uint16":
        return rng.choice((0, 1, 2, 3))
    if kafka_type in ("int8", "int16", "int32", "int64"):
        return rng.choice((0, 1, 2, -1, 3))
    if kafka_type == "float64":
        return 0.5
    if kafka_type == "error_code":
        return ErrorCode.none
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=rng.choice((0, 10, 100)))
    if kafka_type == "datetime_i64":
        return datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    if kafka_type == "uuid":
        return uuid.UUID(int=rng.getrandbits(128)) if rng.random() < 0.5 else uuid.UUID(int=0)
    if kafka_type == "string":
        return topic if rng.random() < 0.7 else rng.choice(_NAMES)
    if kafka_type == "bytes":
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 8)))
    if kafka_type == "records":
        n = rng.randint(1, 3)
        return build_batch([(None, b"v%d" % i) for i in range(n)])
    raise ValueError(f"no sample for kafka_type {kafka_type!r}")


def sample_entity(cls: type, rng: random.Random, topic: str = "fuzz-a", depth: int = 0) -> Any:
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        kind = classify_field(f)
        nullable = is_optional(f)
        tagged = f.metadata.get("tag") is not None
        if tagged and rng.random() < 0.5:
            continue  # leave the tagged field at its default
        if isinstance(kind, EntityTupleField):
            if nullable and rng.random() < 0.1:
                kwargs[f.name] = None
            else:
                n = rng.randint(0, 2) if depth < 3 else 0
                kwargs[f.name] = tuple(
                    sample_entity(kind.type_, rng, topic, depth + 1) for _ in range(n)
                )
        elif isinstance(kind, EntityField):
            kwargs[f.name] = (
                None if nullable and rng.random() < 0.2
                else sample_entity(kind.type_, rng, topic, depth + 1)
            )  # fmt: skip
        elif isinstance(kind, PrimitiveTupleField):
            kt = f.metadata["kafka_type"]
            if nullable and rng.random() < 0.1:
                kwargs[f.name] = None
            else:
                kwargs[f.name] = tuple(
                    sample_value(kt, False, rng, topic) for _ in range(rng.randint(0, 3))
                )
        else:
            kwargs[f.name] = sample_value(f.metadata["kafka_type"], nullable, rng, topic)
    return cls(**kwargs)
