"""History: what a user's own Kafka clients sent and read, as a HISTORY.md history.

Contract: a History writes `history.jsonl` in its directory with the harness's HistoryWriter,
so the checker (`HighwaterCluster.check`) judges it exactly as it judges a `highwater run`.
Values are integers (HISTORY.md): `encode(v)` is the message value to produce, `decode` reads
one back. A send is recorded by `send(topic, partition, value, acks)`, which writes the invoke
and returns the callback to give librdkafka (confluent-kafka's `on_delivery`): it writes `ok`
with the offset, or the error as `fail` only when the message was certainly not written (a
local error before sending, harness/client.py's classification) and `info` otherwise. Reads
of the user's consumers may be recorded with `poll`; the final reads that the checker
compares everything with come from `HighwaterCluster.read_back`. Thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from harness.client import classify, decode_value, encode_value, error_name
from harness.store.history import HISTORY_FILE, HistoryWriter

ACKS = ("0", "1", "all")


class History:
    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.writer = HistoryWriter(directory / HISTORY_FILE)
        self._next_process = 0
        self._idle: list[int] = []
        self._lock = threading.Lock()
        self._lock_new = threading.Lock()

    @property
    def path(self) -> Path:
        return self.writer.path

    def new_process(self) -> int:
        """A fresh process number (a consumer of the test's own, or a send in flight)."""
        with self._lock_new:
            p, self._next_process = self._next_process, self._next_process + 1
            return p

    @staticmethod
    def encode(value: int) -> bytes:
        return encode_value(value)

    @staticmethod
    def decode(raw: bytes | None) -> int | None:
        return decode_value(raw)

    def send(self, topic: str, partition: int, value: int, acks: str = "all"
             ) -> Callable[[Any, Any], None]:  # fmt: skip
        """Record the invoke of producing `value`; returns the on_delivery callback that
        records its outcome. HISTORY.md allows one op in flight per process, and a producer
        has many: each send in flight gets a process number of its own (reused once done)."""
        if acks not in ACKS:
            raise ValueError(f"acks must be one of {ACKS}, got {acks!r}")
        with self._lock:
            process = self._idle.pop() if self._idle else self.new_process()
        invoke = self.writer.invoke(process, "send", topic=topic, partition=partition,
                                    value=value, acks=acks)  # fmt: skip

        def on_delivery(err: Any, msg: Any) -> None:
            try:
                record(err, msg)
            except BaseException:  # noqa: BLE001 - librdkafka's callback must not raise
                import traceback

                traceback.print_exc()

        def record(err: Any, msg: Any) -> None:
            if err is None:
                self.writer.complete(invoke, "ok", offset=int(msg.offset()))
            else:
                name = error_name(err)
                # A user's producer may retry (idempotence, retries > 0): only errors raised
                # before anything was sent are definite.
                self.writer.complete(invoke, classify(name, single_attempt=False), error=name)
            with self._lock:
                self._idle.append(process)

        return on_delivery

    def poll(self, process: int, records: Iterable[tuple[str, int, int, int | None]],
             final: bool = False) -> None:  # fmt: skip
        """Record one successful poll of (topic, partition, offset, value) records."""
        invoke = self.writer.invoke(process, "poll", final=final)
        self.writer.complete(invoke, "ok", records=[
            {"topic": t, "partition": p, "offset": o, "value": v} for t, p, o, v in records])

    def close(self) -> None:
        self.writer.close()
