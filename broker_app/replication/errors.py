"""Replication error codes and exceptions.

Contract: `Errors` holds Kafka's protocol numbering for the codes the replication core produces;
each exception carries `kafka_error_code` like the storage errors do, so the network edge maps
any of them to a response code without a table.
"""

from __future__ import annotations

from enum import IntEnum


class Errors(IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    UNKNOWN_TOPIC_OR_PARTITION = 3
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    OPERATION_NOT_ATTEMPTED = 55
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    STALE_BROKER_EPOCH = 77
    INVALID_UPDATE_VERSION = 95
    INELIGIBLE_REPLICA = 107


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
