"""Coordinators: committed group offsets (GroupCoordinator) and producer-id allocation.

Single-node and simple for now: group offsets are kept in memory and in a JSON file under the
data dir (not Kafka's __consumer_offsets topic); there is no group membership protocol, only
what an assign()-mode consumer with a group.id needs (FindCoordinator, OffsetCommit, OffsetFetch).
"""
