"""Cluster metadata shared by the controller and the brokers: records and the MetadataImage.

The controller appends metadata records to `__cluster_metadata-0`; brokers fetch that log and
apply the same records to their own MetadataImage, so both sides compute state in one place.
"""

from .image import (
    BrokerRegistration,
    LocalReplicaChanges,
    MetadataDelta,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from .loader import MetadataLoader
from .records import (
    METADATA_PARTITION,
    METADATA_TOPIC,
    METADATA_TOPIC_ID,
    NO_LEADER,
    FenceBroker,
    MetadataRecord,
    MetadataRecordError,
    PartitionChange,
    PartitionRecord,
    RegisterBroker,
    TopicConfig,
    TopicRecord,
    UnfenceBroker,
    decode_record,
    encode_record,
)

__all__ = [
    "METADATA_PARTITION",
    "METADATA_TOPIC",
    "METADATA_TOPIC_ID",
    "NO_LEADER",
    "BrokerRegistration",
    "FenceBroker",
    "LocalReplicaChanges",
    "MetadataDelta",
    "MetadataImage",
    "MetadataLoader",
    "MetadataRecord",
    "MetadataRecordError",
    "PartitionChange",
    "PartitionRecord",
    "PartitionRegistration",
    "RegisterBroker",
    "TopicConfig",
    "TopicImage",
    "TopicRecord",
    "UnfenceBroker",
    "decode_record",
    "encode_record",
]
