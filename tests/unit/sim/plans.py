"""Small plans the simulator tests share."""

SMALL = """
name: sim-small
description: one leader kill under acks=all, a few seconds
cluster:
  brokers: 3
  topics: [{name: t, partitions: 1, replication_factor: 3, min_insync_replicas: 2}]
workload:
  producers: {count: 2, acks: all, rate: 20, duration_s: 6}
  consumers: {count: 1, poll_interval_ms: 200}
faults:
  - {name: kill-leader, at: 1, action: kill, target: {leader: t-0}, duration: 2}
expected: {lost-write: "== 0", inconsistent-offset: "== 0"}
settle: {timeout_s: 30}
"""
