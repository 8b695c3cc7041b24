"""ControllerConfig: the settings of one controller process, with Kafka's names in comments."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ControllerConfig:
    node_id: int = 3000  # node.id (KRaft controllers conventionally use a separate id range)
    cluster_id: str = "highwater-cluster"  # must match the brokers' BrokerConfig.cluster_id
    session_timeout_ms: int = 9000  # broker.session.timeout.ms
    # unclean.leader.election.enable (cluster default; a topic config overrides it)
    unclean_leader_election: bool = False
    # KIP-966 eligible leader replicas (Kafka: feature eligible.leader.replicas.version=1,
    # opt-in in 4.0, on for new clusters from 4.1). The kafka_version preset sets it.
    eligible_leader_replicas: bool = True
    # KIP-841 (Kafka 3.3): AlterPartition may not add a fenced or shutting-down broker to an
    # ISR (INELIGIBLE_REPLICA). False: a fenced one may join, as before 3.3
    # (MetadataImage.may_join_isr).
    isr_eligibility: bool = True
    # KIP-903 (Kafka 3.5): AlterPartition v3's ISR member broker epochs are compared with the
    # registered ones (INELIGIBLE_REPLICA on a mismatch). False: ignored, as before 3.5.
    isr_broker_epochs: bool = True
    # Raft vote rule (KIP-595, Raft 5.4.1): grant a vote only to a candidate whose log is at
    # least as up to date. False ("none") is a hypothetical bug switch, in no Kafka release.
    raft_vote_log_check: bool = True
    # KIP-996 (Kafka 4.0): pre-vote before an election. False: Kafka 3.x elections.
    pre_vote: bool = True
    # When a Raft leader becomes the active controller. True ("caught-up"): once its own
    # LeaderChange record is committed, i.e. its state machine has applied every committed
    # record up to its epoch start (KafkaRaftClient fires handleLeaderChange to the
    # controller only then: KAFKA-10632's claim, KAFKA-15345, KAFKA-17333). False
    # ("on-election") is a hypothetical bug switch, in no Kafka release: active as soon as
    # it wins the vote, on the image it has applied so far; records of earlier epochs that
    # commit later never reach that image (an active controller does not replay the
    # committed log: it applied its own records when it wrote them).
    activate_caught_up: bool = True
    min_insync_replicas: int = 1  # min.insync.replicas (cluster default; a topic config wins)
    # auto.leader.rebalance.enable: on, as Kafka's default (every release); every
    # leader.imbalance.check.interval.seconds (300) a broker whose preferred leaderships are
    # led elsewhere beyond leader.imbalance.per.broker.percentage gets them back.
    auto_leader_rebalance: bool = True
    leader_imbalance_check_interval_ms: int = 300_000  # leader.imbalance.check.interval.seconds
    leader_imbalance_per_broker_percentage: int = 10  # leader.imbalance.per.broker.percentage
    num_partitions: int = 1  # num.partitions (CreateTopics with -1)
    # Partitions one CreateTopics may create (no Kafka setting: Kafka has quotas, KIP-599):
    # a hostile request cannot make the controller write millions of records.
    max_partitions_per_create_request: int = 10_000
    default_replication_factor: int = 1  # default.replication.factor (CreateTopics with -1)
    # KIP-630 metadata snapshots: a controller (single or quorum) snapshots its committed image once
    # this many bytes of metadata records were committed since its last snapshot
    # (metadata.log.max.record.bytes.between.snapshots, Kafka's default 20 MiB) ...
    snapshot_max_new_record_bytes: int = 20 * 1024 * 1024
    # ... or once this long has passed with any new record (metadata.log.max.snapshot.interval.ms,
    # KIP-876; Kafka's default 1 hour). 0 disables the time trigger.
    snapshot_max_interval_ms: int = 3_600_000
