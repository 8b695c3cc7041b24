"""Bounded pre-scan of a request body before kio decodes it, sans-I/O.

kio's native decoder trusts declared lengths: an array count of 2^31-1 in a 20-byte request
makes it reserve tens of GB and the process aborts ("memory allocation of ... bytes failed"),
and it raises on tagged-field tags its schema does not know. This module walks the same
schema (the kio entity classes' fields) in Python first and

- checks every length and count against the bytes left in the frame before anything is
  allocated (an array of n elements needs at least n * min_size(element) bytes, as Kafka's
  generated readers check `arrayLength > readable.remaining()`);
- refuses null for fields the schema says are not nullable (Kafka: "non-nullable field X was
  serialized as null");
- refuses unsigned varints longer than 5 bytes (Kafka's ByteUtils.readUnsignedVarint);
- finds tagged fields the schema does not know. KIP-482: a receiver skips unknown tags. kio
  raises on them, so `strip_unknown_tags` rewrites the frame without them (the tag-count is
  rewritten too) and kio then decodes what it knows. Known tags are walked like any field,
  within the size their header declares.

`scan(cls, buf, pos)` returns (end position, found_unknown_tags); `strip(cls, buf, pos)` returns
the bytes of the entity without unknown tags. Both raise PrescanError naming the field path
and byte offset.
"""

from __future__ import annotations

from dataclasses import fields
from functools import cache
from typing import Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    is_optional,
)

_FIXED = {
    "bool": 1, "int8": 1, "int16": 2, "uint16": 2, "error_code": 2, "int32": 4,
    "timedelta_i32": 4, "int64": 8, "float64": 8, "timedelta_i64": 8, "datetime_i64": 8,
    "uuid": 16,
}  # fmt: skip
_VARLEN = ("string", "bytes", "records")

# A field plan: (name, kind, kafka_type or element entity class, nullable, tag or None)
_P, _PT, _E, _ET = range(4)


class PrescanError(ValueError):
    """The body does not fit its schema: what, which field, at which byte."""


@cache
def _plan(cls: type) -> tuple[tuple[str, int, Any, bool, int | None], ...]:
    out = []
    for f in fields(cls):
        kind = classify_field(f)
        tag = f.metadata.get("tag")
        nullable = is_optional(f)
        if isinstance(kind, EntityTupleField):
            out.append((f.name, _ET, kind.type_, nullable, tag))
        elif isinstance(kind, EntityField):
            out.append((f.name, _E, kind.type_, nullable, tag))
        elif isinstance(kind, PrimitiveTupleField):
            out.append((f.name, _PT, f.metadata["kafka_type"], nullable, tag))
        else:
            out.append((f.name, _P, f.metadata["kafka_type"], nullable, tag))
    return tuple(out)


@cache
def _known_tags(cls: type) -> dict[int, tuple[str, int, Any, bool, int | None]]:
    return {p[4]: p for p in _plan(cls) if p[4] is not None}


def _prim_min(kafka_type: str, flexible: bool) -> int:
    if kafka_type in _FIXED:
        return _FIXED[kafka_type]
    if flexible:
        return 1
    return 2 if kafka_type == "string" else 4


@cache
def min_size(cls: type) -> int:
    """Fewest bytes one encoded instance of `cls` can take (tagged fields may be absent)."""
    flexible = cls.__flexible__
    total = 1 if flexible else 0  # the tagged-field count
    for _name, kind, sub, nullable, tag in _plan(cls):
        if tag is not None:
            continue
        if kind == _P:
            total += _prim_min(sub, flexible)
        elif kind == _E:
            total += 1 if nullable else min_size(sub)  # a nullable struct: 1 presence byte
        else:
            total += 1 if flexible else 4  # an empty or null array
    return total


def read_uvarint(buf: bytes | memoryview, pos: int, end: int, what: str) -> tuple[int, int]:
    """Unsigned varint of at most 5 bytes (Kafka's int32 varints); (value, new position)."""
    value = 0
    for i in range(5):
        if pos >= end:
            raise PrescanError(f"{what}: varint runs past the end of the frame at byte {pos}")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            return value, pos
    raise PrescanError(f"{what}: varint longer than 5 bytes ending at byte {pos}")


def _int(buf: bytes | memoryview, pos: int, size: int) -> int:
    return int.from_bytes(buf[pos : pos + size], "big", signed=True)


class _Walker:
    """One pass over one frame. With `out` set, copies what it walks, minus unknown tags."""

    def __init__(self, buf: bytes | memoryview, out: bytearray | None) -> None:
        self.buf = buf
        self.out = out
        self.unknown_tags = 0

    def _need(self, pos: int, n: int, end: int, what: str) -> None:
        if n < 0 or pos + n > end:
            raise PrescanError(
                f"{what}: needs {n} bytes at byte {pos}, only {max(end - pos, 0)} left"
            )

    def _copy(self, start: int, stop: int) -> None:
        if self.out is not None:
            self.out += self.buf[start:stop]

    def _length(self, pos: int, end: int, flexible: bool, width: int, what: str) -> tuple[int, int]:
        """A length or count: compact (uvarint n+1, 0 = null -> -1) or legacy signed int."""
        if flexible:
            n, new = read_uvarint(self.buf, pos, end, what)
            return n - 1, new
        self._need(pos, width, end, what)
        return _int(self.buf, pos, width), pos + width

    def primitive(self, kafka_type: str, nullable: bool, pos: int, end: int, flexible: bool,
                  what: str) -> int:  # fmt: skip
        if kafka_type in _FIXED:
            self._need(pos, _FIXED[kafka_type], end, what)
            new = pos + _FIXED[kafka_type]
            self._copy(pos, new)
            return new
        width = 2 if kafka_type == "string" else 4
        n, data = self._length(pos, end, flexible, width, what)
        if n < 0:
            if n != -1 or not nullable:
                raise PrescanError(f"non-nullable field {what} was serialized as null "
                                   f"(length {n}) at byte {pos}")  # fmt: skip
            self._copy(pos, data)
            return data
        self._need(data, n, end, what)
        self._copy(pos, data + n)
        return data + n

    def array(self, kind: int, sub: Any, nullable: bool, pos: int, end: int, flexible: bool,
              what: str) -> int:  # fmt: skip
        n, new = self._length(pos, end, flexible, 4, what)
        if n < 0:
            if n != -1 or not nullable:
                raise PrescanError(f"non-nullable field {what} was serialized as null "
                                   f"(count {n}) at byte {pos}")  # fmt: skip
            self._copy(pos, new)
            return new
        each = max(min_size(sub) if kind == _ET else _prim_min(sub, flexible), 1)
        if n * each > end - new:
            raise PrescanError(
                f"{what}: array of {n} elements (at least {n * each} bytes) at byte {pos}, "
                f"only {end - new} bytes left"
            )
        self._copy(pos, new)
        pos = new
        for i in range(n):
            if kind == _ET:
                pos = self.entity(sub, pos, end, f"{what}[{i}]")
            else:
                pos = self.primitive(sub, False, pos, end, flexible, f"{what}[{i}]")
        return pos

    def field(self, plan: tuple[str, int, Any, bool, int | None], pos: int, end: int,
              flexible: bool, where: str) -> int:  # fmt: skip
        name, kind, sub, nullable, _tag = plan
        what = f"{where}.{name}"
        if kind == _P:
            return self.primitive(sub, nullable, pos, end, flexible, what)
        if kind == _E:
            if nullable:
                # A nullable struct is preceded by a presence byte (-1 absent, 1 present).
                self._need(pos, 1, end, what)
                self._copy(pos, pos + 1)
                if _int(self.buf, pos, 1) < 0:
                    return pos + 1
                pos += 1
            return self.entity(sub, pos, end, what)
        return self.array(kind, sub, nullable, pos, end, flexible, what)

    def entity(self, cls: type, pos: int, end: int, where: str) -> int:
        flexible = cls.__flexible__
        for plan in _plan(cls):
            if plan[4] is None:
                pos = self.field(plan, pos, end, flexible, where)
        if flexible:
            pos = self.tagged_fields(cls, pos, end, where)
        return pos

    def tagged_fields(self, cls: type | None, pos: int, end: int, where: str) -> int:
        what = f"{where}.<tagged fields>"
        count, pos = read_uvarint(self.buf, pos, end, what)
        if count > end - pos:  # each tag takes at least 2 bytes
            raise PrescanError(f"{what}: {count} tagged fields at byte {pos}, "
                               f"only {end - pos} bytes left")  # fmt: skip
        known = _known_tags(cls) if cls is not None else {}
        kept: list[bytes] = []
        for _ in range(count):
            tag, pos = read_uvarint(self.buf, pos, end, what)
            size, pos = read_uvarint(self.buf, pos, end, f"{what} tag {tag} size")
            self._need(pos, size, end, f"{what} tag {tag}")
            plan = known.get(tag)
            if plan is None:
                self.unknown_tags += 1  # KIP-482: skip it
                pos += size
                continue
            saved, self.out = self.out, (bytearray() if self.out is not None else None)
            stop = self.field(plan, pos, pos + size, True, where)
            if stop != pos + size:
                raise PrescanError(f"{where}.{plan[0]} (tag {tag}) used {stop - pos} of its "
                                   f"{size} bytes at byte {pos}")  # fmt: skip
            if saved is not None and self.out is not None:
                value = bytes(self.out)
                kept.append(_uvarint(tag) + _uvarint(len(value)) + value)
            self.out = saved
            pos = stop
        if self.out is not None:
            self.out += _uvarint(len(kept))
            for k in kept:
                self.out += k
        return pos


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def scan(cls: type, buf: bytes | memoryview, pos: int, end: int | None = None) -> tuple[int, int]:
    """Walk one `cls` entity at `pos`: (end position, number of unknown tagged fields)."""
    w = _Walker(buf, None)
    stop = w.entity(cls, pos, len(buf) if end is None else end, cls.__name__)
    return stop, w.unknown_tags


def strip(cls: type, buf: bytes | memoryview, pos: int, end: int | None = None) -> bytes:
    """The bytes of the `cls` entity at `pos` with every unknown tagged field removed."""
    w = _Walker(buf, bytearray())
    w.entity(cls, pos, len(buf) if end is None else end, cls.__name__)
    assert w.out is not None
    return bytes(w.out)


def skip_tagged_fields(buf: bytes | memoryview, pos: int, end: int, where: str) -> tuple[int, int]:
    """Skip a whole tagged-field section nobody declares (the request header v2's):
    (end position, number of tags skipped)."""
    w = _Walker(buf, None)
    stop = w.tagged_fields(None, pos, end, where)
    return stop, w.unknown_tags
