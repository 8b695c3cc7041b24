"""Replication error codes and exceptions.

Contract: `Errors` is broker_app.protocol.error_codes.Errors (one numbering for the broker);
each exception carries `kafka_error_code` like the storage errors do, so the network edge maps
any of them to a response code without a table.
"""

from __future__ import annotations

from broker_app.protocol.error_codes import Errors

__all__ = ["Errors"]  # re-exported: protocol/error_codes.py is the single source


class ReplicationError(Exception):
    """Base class; the subclass fixes the Kafka error code."""

    kafka_error_code: int = Errors.UNKNOWN_SERVER_ERROR

    @property
    def error(self) -> Errors:
        return Errors(self.kafka_error_code)


class NotLeaderOrFollowerError(ReplicationError):
    kafka_error_code = Errors.NOT_LEADER_OR_FOLLOWER


class NotEnoughReplicasError(ReplicationError):
    kafka_error_code = Errors.NOT_ENOUGH_REPLICAS


class FencedLeaderEpochError(ReplicationError):
    kafka_error_code = Errors.FENCED_LEADER_EPOCH


class UnknownLeaderEpochError(ReplicationError):
    kafka_error_code = Errors.UNKNOWN_LEADER_EPOCH


class OffsetOutOfRangeError(ReplicationError):
    kafka_error_code = Errors.OFFSET_OUT_OF_RANGE


class InvalidStateError(ReplicationError):
    """A call that the partition's current role or state does not allow (a caller bug)."""

    kafka_error_code = Errors.UNKNOWN_SERVER_ERROR


class LogTruncationNotAllowedError(ReplicationError):
    """A follower whose leader's log ends below its own, with follower_ahead "stop" and
    unclean election off for the topic (KAFKA-3410): the broker must stop itself. The
    fetcher's I/O edge turns it into a clean shutdown (Kafka 0.10.0.1-2.0's Exit.exit)."""

    kafka_error_code = Errors.OFFSET_OUT_OF_RANGE
