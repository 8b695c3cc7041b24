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


def started_cluster(plan_text: str, seed: int = 7, overrides: dict[str, str] | None = None):
    """The plan's cluster on the simulator, started, with a topic t (1 partition, RF 3,
    min.insync 2) created and led; no workload runs (the test drives it)."""
    from broker_app.controller.messages import NewTopic
    from broker_app.sim.cluster import SimCluster
    from harness.plan.loader import parse_plan
    from harness.sim.config import broker_configs, controller_config

    plan = parse_plan(plan_text, "plan.yaml", overrides)
    ctl_config, tick_ms = controller_config(plan.cluster)
    cluster = SimCluster(seed, broker_configs(plan.cluster), ctl_config, tick_interval_ms=tick_ms)
    cluster.start()
    cluster.loop.run_until(3_000)
    cluster.controller.create_topics([NewTopic("t", 1, 3, None, {"min.insync.replicas": "2"})])
    cluster.loop.run_until(6_000)
    return cluster
