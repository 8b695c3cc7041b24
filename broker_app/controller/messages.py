"""Plain request/response dataclasses of the QuorumController (no kio, no wire format).

controller_apis.py translates the Kafka wire requests into these and back, so the controller
logic can be driven directly by unit tests and, later, by a deterministic simulator.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from .errors import Errors


@dataclass(frozen=True)
class RegisterBrokerRequest:
    broker_id: int
    incarnation_id: str
    host: str
    port: int
    rack: str | None = None
    cluster_id: str | None = None  # None: not checked
    # KIP-966 (BrokerRegistration v3+): the broker epoch written in the clean-shutdown marker
    # by the previous process, -1 after an unclean shutdown (or on a first start).
    previous_broker_epoch: int = -1


@dataclass(frozen=True)
class RegisterBrokerResponse:
    error: Errors
    broker_epoch: int = -1
    message: str | None = None


@dataclass(frozen=True)
class HeartbeatRequest:
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool = False
    want_shutdown: bool = False


@dataclass(frozen=True)
class HeartbeatResponse:
    error: Errors
    is_caught_up: bool = False
    is_fenced: bool = True
    should_shutdown: bool = False
    message: str | None = None


@dataclass(frozen=True)
class NewTopic:
    name: str
    num_partitions: int = -1  # -1: the controller's num.partitions
    replication_factor: int = -1  # -1: default.replication.factor
    assignments: dict[int, tuple[int, ...]] | None = None  # manual placement
    configs: dict[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class CreateTopicsRequest:
    topics: list[NewTopic]
    validate_only: bool = False


@dataclass(frozen=True)
class CreateTopicResult:
    name: str
    error: Errors
    message: str | None = None
    topic_id: uuid.UUID | None = None
    num_partitions: int = -1
    replication_factor: int = -1
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CreateTopicsResponse:
    results: list[CreateTopicResult]


@dataclass(frozen=True)
class AlterPartitionItem:
    topic_id: uuid.UUID
    partition: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]
    # AlterPartition v3 (KIP-903): the broker epoch of each new ISR member, -1 = unknown.
    isr_broker_epochs: tuple[int, ...] | None = None


@dataclass(frozen=True)
class AlterPartitionRequest:
    broker_id: int
    broker_epoch: int
    partitions: list[AlterPartitionItem]


@dataclass(frozen=True)
class AlterPartitionResult:
    topic_id: uuid.UUID
    partition: int
    error: Errors
    message: str | None = None
    leader: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    partition_epoch: int = -1


@dataclass(frozen=True)
class AlterPartitionResponse:
    error: Errors
    message: str | None = None
    results: list[AlterPartitionResult] = field(default_factory=list)


@dataclass(frozen=True)
class ElectLeadersRequest:
    election_type: int  # ElectionType: 0 preferred, 1 unclean
    partitions: list[tuple[str, int]] | None  # None: every partition


@dataclass(frozen=True)
class PartitionResult:
    topic: str
    partition: int
    error: Errors
    message: str | None = None


@dataclass(frozen=True)
class ElectLeadersResponse:
    error: Errors
    results: list[PartitionResult] = field(default_factory=list)
    message: str | None = None


@dataclass(frozen=True)
class ReassignPartitionsRequest:
    # (topic, partition, target replicas); None cancels an ongoing reassignment
    partitions: list[tuple[str, int, tuple[int, ...] | None]]


@dataclass(frozen=True)
class ReassignPartitionsResponse:
    results: list[PartitionResult]


@dataclass(frozen=True)
class TopicResult:
    """One topic's outcome of DeleteTopics / CreatePartitions / AlterConfigs."""

    name: str | None
    error: Errors
    message: str | None = None
    topic_id: uuid.UUID | None = None


@dataclass(frozen=True)
class NewPartitions:
    name: str
    count: int
    assignments: list[tuple[int, ...]] | None = None  # replicas of each new partition
