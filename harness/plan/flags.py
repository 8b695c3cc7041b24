"""A plan's cluster switches as process flags: what `highwater run` passes to each broker and
controller container, and what the simulator parses into its process configurations
(harness/sim/config.py), so a switch means the same in both."""

from __future__ import annotations

from harness.plan.model import ClusterSpec

# Switches outside the version table that only controllers take (the Raft vote rule and the
# controller activation are hypothetical bug switches, not a Kafka release's behaviour).
# Every other switch goes to the brokers.
CONTROLLER_ONLY_SWITCHES: frozenset[str] = frozenset({"raft-vote-log-check",
                                                      "controller-activation"})


def switch_flags(switches: dict[str, str]) -> list[str]:
    """cluster.switches as flags: key -> --key value; true/false -> --key / --no-key."""
    out: list[str] = []
    for key, value in sorted(switches.items()):
        flag = "--" + key.replace("_", "-")
        v = str(value).strip()
        if v.lower() == "true":
            out.append(flag)
        elif v.lower() == "false":
            out.append("--no-" + flag[2:])
        else:
            out += [flag, v]
    return out


def process_flags(cluster: ClusterSpec) -> tuple[list[str], list[str]]:
    """(broker flags, controller flags) of a ClusterSpec: `--kafka-version V` to both, each
    version switch to the processes that take it (broker_app/kafka_versions.py), the
    CONTROLLER_ONLY_SWITCHES to the controllers, every other switch to the brokers."""
    from broker_app.kafka_versions import SWITCHES

    takes = {s.name: s.processes for s in SWITCHES}
    takes.update({name: ("controller",) for name in CONTROLLER_ONLY_SWITCHES})
    broker = {k: v for k, v in cluster.switches.items() if "broker" in takes.get(k, ("broker",))}
    controller = {k: v for k, v in cluster.switches.items() if "controller" in takes.get(k, ())}
    version = ["--kafka-version", cluster.kafka_version] if cluster.kafka_version else []
    return [*version, *switch_flags(broker)], [*version, *switch_flags(controller)]
