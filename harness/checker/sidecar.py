"""A Parquet sidecar of history.jsonl: the same lines, parsed once into columns, for the checker.

history.jsonl stays the contract (HISTORY.md); `history.parquet` beside it is a cache the checker
builds and trusts only while it provably matches the jsonl.

Contract:
- `sidecar_for(history)` returns the path of a sidecar that matches `history` byte for byte
  (format `VERSION`, the jsonl's size and SHA-256 recorded in the Parquet file's metadata and
  compared with the jsonl's now), building or rebuilding it when it is missing, stale, of
  another version or unreadable; None when the history cannot be turned into columns (a line
  that is not JSON, a field of another type than `history_schema()` says, a blank line...):
  the caller then reads the jsonl itself (the JSON path, which also reports what is wrong). A
  stale sidecar that cannot be rebuilt is deleted, never used.
- The sidecar holds exactly the columns of `history_schema()` but `_corrupt_record`, with the
  values Spark's JSON reader gives them for a well-formed line: `process` and `value` are text
  (the digits of a client's integer; "nemesis" and the value's compact JSON for a nemesis op),
  so the checker runs the same expressions on both (results.json is the same either way).
- Built in bounded memory: the jsonl is read in blocks of whole lines, each parsed by pyarrow's
  multithreaded C++ JSON reader and written as one row group; the file is written beside the
  history under a temporary name and renamed into place, so a reader never sees half a file.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

SIDECAR_FILE = "history.parquet"
VERSION = "1"
_META_VERSION = b"highwater.sidecar.version"
_META_SIZE = b"highwater.jsonl.size"
_META_SHA = b"highwater.jsonl.sha256"
_BLOCK = 32 << 20  # bytes of jsonl per pyarrow read (and per row group)


class NotColumnar(Exception):
    """The history has a line pyarrow cannot read with the checker's schema."""


def _schemas():
    """(client-line schema, nemesis-line schema, sidecar schema) as pyarrow schemas: the
    Spark history_schema() in Arrow terms; client lines carry integer process and value."""
    import pyarrow as pa

    record = pa.struct([
        ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
        ("value", pa.int64()), ("generation", pa.int32()), ("rebalance", pa.int32()),
    ])  # fmt: skip
    fields = [
        ("index", pa.int64()), ("time", pa.int64()), ("process", pa.string()),
        ("type", pa.string()), ("f", pa.string()), ("topic", pa.string()),
        ("partition", pa.int32()), ("value", pa.string()), ("acks", pa.string()),
        ("offset", pa.int64()), ("error", pa.string()), ("final", pa.bool_()),
        ("records", pa.list_(record)), ("phase", pa.string()), ("group", pa.string()),
        ("generation", pa.int32()), ("offsets", pa.list_(record)),
    ]  # fmt: skip
    out = pa.schema(fields)
    client = pa.schema(
        [(n, pa.int64() if n in ("process", "value") else t) for n, t in fields]
    )
    # Nemesis lines: `value` is any JSON (added from Python), `process` is the constant.
    nemesis = pa.schema([(n, t) for n, t in fields if n not in ("process", "value")])
    return client, nemesis, out


def _blocks(path: Path, digest) -> Iterator[bytes]:
    """The file in blocks of whole lines (the last may lack its newline), fed to `digest`."""
    rest = b""
    with open(path, "rb") as fh:
        while chunk := fh.read(_BLOCK):
            digest.update(chunk)
            chunk = rest + chunk
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:
                rest = chunk
                continue
            rest = chunk[cut:]
            yield chunk[:cut]
    if rest:
        yield rest + b"\n"


def _read(data: bytes, schema):
    import pyarrow as pa
    import pyarrow.json as pj

    try:
        return pj.read_json(
            io.BytesIO(data),
            read_options=pj.ReadOptions(block_size=4 << 20),
            parse_options=pj.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="ignore"
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise NotColumnar(str(e)) from e


def _table(block: bytes, schemas):
    """One block of lines as a table of the sidecar schema."""
    import pyarrow as pa
    import pyarrow.compute as pc

    client_schema, nemesis_schema, out_schema = schemas
    client, nemesis, nemesis_values = block, [], []
    # Few lines name the nemesis: parse those in Python, the rest in one C++ read. They are
    # found by searching the block, not by splitting it into lines (a Python loop over every
    # line was most of the sidecar's time on a large history).
    keep, cut, at = [], 0, block.find(b"nemesis")
    while at >= 0:
        start = block.rfind(b"\n", 0, at) + 1
        end = block.find(b"\n", at)
        end = len(block) if end < 0 else end + 1
        line = block[start:end]
        try:
            op = json.loads(line)
        except ValueError as e:
            raise NotColumnar(str(e)) from e
        if isinstance(op, dict) and op.get("process") == "nemesis":
            nemesis.append(line.rstrip(b"\n"))
            value = op.get("value")
            # Spark keeps a non-string JSON value as its compact text.
            nemesis_values.append(
                value if isinstance(value, str) or value is None
                else json.dumps(value, separators=(",", ":"))
            )
            keep.append(block[cut:start])
            cut = end
        at = block.find(b"nemesis", end)
    if nemesis:
        keep.append(block[cut:])
        client = b"".join(keep)
    parts = []
    if client.strip():
        t = _read(client, client_schema)
        cols = [
            pc.cast(t.column(n), pa.string()) if n in ("process", "value") else t.column(n)
            for n in out_schema.names
        ]
        parts.append(pa.Table.from_arrays(cols, schema=out_schema))
    if nemesis:
        t = _read(b"\n".join(nemesis) + b"\n", nemesis_schema)
        if t.num_rows != len(nemesis):
            raise NotColumnar("a nemesis line was not read as one row")
        extra = {
            "process": pa.array(["nemesis"] * t.num_rows, pa.string()),
            "value": pa.array(nemesis_values, pa.string()),
        }
        cols = [extra[n] if n in extra else t.column(n) for n in out_schema.names]
        parts.append(pa.Table.from_arrays(cols, schema=out_schema))
    return pa.concat_tables(parts) if parts else None


class _Digest:
    """SHA-256 and length of the bytes fed to it: what the sidecar records of its jsonl."""

    def __init__(self) -> None:
        self.sha, self.size = hashlib.sha256(), 0

    def update(self, data: bytes) -> None:
        self.sha.update(data)
        self.size += len(data)


def _fingerprint(history: Path) -> tuple[int, str]:
    digest = _Digest()
    with open(history, "rb") as fh:
        while chunk := fh.read(_BLOCK):
            digest.update(chunk)
    return digest.size, digest.sha.hexdigest()


def matches(sidecar: Path, history: Path) -> bool:
    """Does the sidecar record this version and the history's current size and SHA-256?"""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(sidecar).metadata or {}
    except (OSError, ValueError):  # missing, truncated, not Parquet
        return False
    if meta.get(_META_VERSION) != VERSION.encode():
        return False
    try:
        if int(meta.get(_META_SIZE, b"-1")) != history.stat().st_size:
            return False  # cheap first: most stale sidecars differ in size
    except ValueError:
        return False
    size, sha = _fingerprint(history)
    return meta.get(_META_SIZE) == str(size).encode() and meta.get(_META_SHA) == sha.encode()


def build(history: Path, sidecar: Path) -> None:
    """Write the sidecar of `history` (see the module docstring); NotColumnar if it cannot be."""
    import pyarrow.parquet as pq

    schemas = _schemas()
    digest = _Digest()
    tmp = sidecar.with_name(f".{sidecar.name}.{os.getpid()}.tmp")
    try:
        with pq.ParquetWriter(tmp, schemas[2], compression="snappy") as writer:
            for block in _blocks(history, digest):
                table = _table(block, schemas)
                if table is not None:
                    writer.write_table(table)
            writer.add_key_value_metadata({
                _META_VERSION: VERSION.encode(),
                _META_SIZE: str(digest.size).encode(),  # what was read and hashed
                _META_SHA: digest.sha.hexdigest().encode(),
            })  # fmt: skip
        os.replace(tmp, sidecar)
    finally:
        tmp.unlink(missing_ok=True)


def sidecar_for(history: Path) -> Path | None:
    """The matching sidecar of `history`, built when needed; None when it cannot be built."""
    history = Path(history)
    sidecar = history.with_name(SIDECAR_FILE)
    if sidecar.is_file() and matches(sidecar, history):
        return sidecar
    try:
        build(history, sidecar)
    except (NotColumnar, OSError, UnicodeDecodeError):
        try:
            sidecar.unlink(missing_ok=True)  # a stale sidecar is not left lying about
        except OSError:
            pass  # a read-only run dir: harmless, a sidecar is trusted only when it matches
        return None
    return sidecar
