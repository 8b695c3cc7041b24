"""`highwater dump-log FILE... [--print-data]`: print segments like kafka-dump-log.sh.

Contract: for a `.log` segment, one line per batch in kafka-dump-log's format (without the
deleteHorizonMs field), and with --print-data one "| offset: ..." line per record. A torn or
unframeable tail is reported as "Found N invalid bytes at the end of NAME" and is not an
error; a batch whose CRC does not match is printed with "isvalid: false". For a `.index`
file, one "offset: O position: P" line per entry. Exit 0, or 2 if a file cannot be read.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from pathlib import Path

from .errors import CorruptRecordError
from .index import ENTRY, ENTRY_SIZE
from .records import (
    COMPRESSION_NAMES,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    BatchHeader,
    compute_crc,
    decode_records,
    parse_header,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, metavar="SEGMENT",
                        help="<baseOffset>.log or .index files")  # fmt: skip
    parser.add_argument("--print-data", action="store_true",
                        help="also print every record (decompressing if needed)")  # fmt: skip


def _b(v: bool) -> str:
    return "true" if v else "false"


def format_batch(h: BatchHeader, position: int, valid: bool) -> str:
    return (
        f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.records_count} "
        f"baseSequence: {h.base_sequence} lastSequence: {h.last_sequence} "
        f"producerId: {h.producer_id} producerEpoch: {h.producer_epoch} "
        f"partitionLeaderEpoch: {h.partition_leader_epoch} "
        f"isTransactional: {_b(h.is_transactional)} isControl: {_b(h.is_control)} "
        f"position: {position} {h.timestamp_type}: {h.max_timestamp} size: {h.size} "
        f"magic: {h.magic} compresscodec: {COMPRESSION_NAMES.get(h.compression, 'unknown')} "
        f"crc: {h.crc} isvalid: {_b(valid)}"
    )


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def dump_segment(path: Path, print_data: bool, out) -> None:
    data = path.read_bytes()
    print(f"Dumping {path}", file=out)
    try:
        print(f"Log starting offset: {int(path.stem)}", file=out)
    except ValueError:
        pass
    pos = 0
    while pos + RECORD_BATCH_OVERHEAD <= len(data):
        _, length = struct.unpack_from(">qi", data, pos)
        size = LOG_OVERHEAD + length
        if length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD or pos + size > len(data):
            break
        view = memoryview(data)[pos : pos + size]
        h = parse_header(view)
        valid = h.magic == 2 and compute_crc(view) == h.crc
        print(format_batch(h, pos, valid), file=out)
        if print_data and valid:
            try:
                records = decode_records(view)
            except CorruptRecordError as exc:
                print(f"| cannot decode records: {exc}", file=out)
                records = []
            for r in records:
                key_size = -1 if r.key is None else len(r.key)
                value_size = -1 if r.value is None else len(r.value)
                line = (
                    f"| offset: {r.offset} {h.timestamp_type}: {r.timestamp} "
                    f"keySize: {key_size} valueSize: {value_size} sequence: {r.sequence} "
                    f"headerKeys: [{','.join(k for k, _ in r.headers)}]"
                )
                if r.key is not None:
                    line += f" key: {_text(r.key)}"
                line += f" payload: {'' if r.value is None else _text(r.value)}"
                print(line, file=out)
        pos += size
    if pos < len(data):
        print(f"Found {len(data) - pos} invalid bytes at the end of {path.name}", file=out)


def dump_index(path: Path, out) -> None:
    data = path.read_bytes()
    print(f"Dumping {path}", file=out)
    base = int(path.stem) if path.stem.isdigit() else 0
    whole = len(data) - len(data) % ENTRY_SIZE
    for rel, position in ENTRY.iter_unpack(data[:whole]):
        print(f"offset: {base + rel} position: {position}", file=out)
    if whole != len(data):
        print(f"Found {len(data) - whole} invalid bytes at the end of {path.name}", file=out)


def run(args: argparse.Namespace) -> int:
    status = 0
    for path in args.files:
        try:
            if path.suffix == ".log":
                dump_segment(path, args.print_data, sys.stdout)
            elif path.suffix == ".index":
                dump_index(path, sys.stdout)
            else:
                print(f"dump-log: {path}: not a .log or .index file", file=sys.stderr)
                status = 2
        except BrokenPipeError:
            # `highwater dump-log ... | head`: the reader left; stop quietly like cat does.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        except OSError as exc:
            print(f"dump-log: {path}: {exc.strerror or exc}", file=sys.stderr)
            status = 2
    return status
