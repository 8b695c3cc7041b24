"""FetchRound: one replica-fetcher round of a FetcherSession, sans I/O, for both runtimes.

A round is ListOffsets for the partitions out of range, then OffsetForLeaderEpoch for the
partitions truncating, then one Fetch for those fetching; each request is built after the
previous answer was applied (ReplicaFetcherThread.processFetchRequest's order). A driver
loops: `pending = round.next_request()`; sends `pending.body` to the leader; then
`round.answered(pending, response)` or, when the send failed, `round.failed()`; until
next_request() returns None. Then `round.outcome` is what FetchPacer paces on, and `fatal`,
when set, is why the broker must stop (LogTruncationNotAllowedError: a follower ahead of its
leader under the "stop" behaviour, KAFKA-3410, as Kafka <= 2.0 exits).

The driver: server/replica_fetcher.py's ReplicaFetcherThread, one task per leader on either
runtime (asyncio in production, the simulator's virtual time in SimBroker). A bug in applying an
answer ends the round as a failed request (logged), so it cannot stop replication for good.
"""

from __future__ import annotations

import logging
from typing import Any

from broker_app.replication.errors import LogTruncationNotAllowedError
from broker_app.replication.fetcher_pacing import RoundOutcome
from broker_app.replication.fetcher_session import FetcherSession, PendingRequest

log = logging.getLogger(__name__)


class FetchRound:
    def __init__(self, session: FetcherSession) -> None:
        self.session = session
        self.sent = 0
        self.errors = 0
        self.fatal: str | None = None
        self._queue: list[PendingRequest] | None = None  # ListOffsets, built on the first ask
        self._stage = 0  # 0: ListOffsets, 1: OffsetForLeaderEpoch, 2: Fetch, 3: done
        self._ended = False

    @property
    def outcome(self) -> RoundOutcome:
        return RoundOutcome(sent=self.sent, errors=self.errors)

    def next_request(self) -> PendingRequest | None:
        """The next request to send, or None when the round is over."""
        if self._ended:
            return None
        session = self.session
        try:
            if self._queue is None:
                self._queue = list(session.build_list_offsets())
            while not self._queue:
                self._stage += 1
                if self._stage == 1:
                    pending = session.build_offset_for_leader_epoch()
                elif self._stage == 2:
                    pending = session.build_fetch()
                else:
                    self._ended = True
                    return None
                if pending is not None:
                    self._queue = [pending]
        except Exception:  # a bug must not silently stop replication for good
            log.exception("replica fetcher for leader %d: building a request",
                          session.leader_id)  # fmt: skip
            self._end_failed()
            return None
        return self._queue.pop(0)

    def answered(self, pending: PendingRequest, response: Any) -> None:
        try:
            self.errors += self.session.apply(pending, response)
        except LogTruncationNotAllowedError as e:
            self.fatal = str(e)
            self._end_failed()
            return
        except Exception:  # a bug must not silently stop replication for good
            log.exception("replica fetcher for leader %d", self.session.leader_id)
            self._end_failed()
            return
        self.sent += 1

    def failed(self) -> None:
        """The request got no answer (connection error, timeout): the round ends."""
        self._end_failed()

    def _end_failed(self) -> None:
        self.sent += 1
        self.errors += 1
        self._ended = True
