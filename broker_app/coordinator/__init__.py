"""Coordinators: consumer groups (GroupCoordinator) and producer-id allocation.

The group coordinator is Kafka's classic one: a group belongs to the leader of its
`__consumer_offsets` partition, and offsets and group metadata are records in that replicated
topic (records.py for the formats, group_metadata.py for a group's states, group_coordinator.py
for the protocol; server/group_apis.py is the broker edge). Producer ids come in persisted blocks.
"""
