"""The action catalogue: every fault a step may name, mapped onto the cluster primitives.

Each action says which target keys it takes, whether it may (or must) have a `duration`
(after which the run undoes it with `undo`), and its parameters with types and bounds. The
loader validates steps against this table; the run dispatches on `ActionSpec.name`.

Link actions (latency, bandwidth) act on bytes flowing from every `from` node to every `to`
node: one direction only. `partition` cuts both directions between `target` and `peers`
(default: every other broker and controller; clients still reach the target — that is what
lets a cut-off leader keep acknowledging acks=1 writes). `isolate` also cuts clients.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Param:
    type: str  # "int" | "float" | "bool" | "enum" | "partition" | "partitions" | "brokers"
    required: bool = False
    default: Any = None
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    help: str = ""


@dataclass(frozen=True)
class ActionSpec:
    name: str
    kind: str  # network | process | disk | leadership | heal
    help: str
    target: bool = False  # takes `target:` (required when True)
    peers: bool = False  # takes optional `peers:` (partition)
    link: bool = False  # takes required `from:` and `to:`
    duration: str = "none"  # none | optional | required
    undo: str | None = None  # what the run does when the duration ends
    params: dict[str, Param] = field(default_factory=dict)


_ACTIONS = [
    ActionSpec("partition", "network", "cut target from peers, both directions", target=True,
               peers=True, duration="optional", undo="heal those links"),
    ActionSpec("isolate", "network", "cut target from every node and the clients",
               target=True, duration="optional", undo="heal those links"),
    ActionSpec("latency", "network", "delay bytes from `from` to `to` (one direction)",
               link=True, duration="optional", undo="remove the toxic",
               params={"ms": Param("int", required=True, min=0, max=600_000),
                       "jitter_ms": Param("int", default=0, min=0, max=600_000)}),
    ActionSpec("bandwidth", "network", "limit bytes from `from` to `to` (one direction)",
               link=True, duration="optional", undo="remove the toxic",
               params={"kbps": Param("int", required=True, min=1)}),
    ActionSpec("heal", "heal", "remove every network fault"),
    ActionSpec("kill", "process", "SIGKILL the target", target=True, duration="optional",
               undo="start",
               params={"lose_unsynced": Param("bool", default=False,
                                              help="drop writes not yet fsynced")}),
    ActionSpec("stop", "process", "SIGTERM the target", target=True, duration="optional",
               undo="start"),
    ActionSpec("start", "process", "start the target", target=True),
    ActionSpec("restart", "process", "stop (TERM or KILL) then start the target", target=True,
               params={"signal": Param("enum", default="TERM", choices=("TERM", "KILL")),
                       "lose_unsynced": Param("bool", default=False)}),
    ActionSpec("pause", "process", "SIGSTOP the target", target=True, duration="optional",
               undo="resume"),
    ActionSpec("resume", "process", "SIGCONT the target", target=True),
    ActionSpec("disk-stall", "disk", "stall the target's disk writes/fsyncs", target=True,
               duration="required", undo="unstall",
               params={"ops": Param("enum", default="all", choices=("write", "fsync", "all"))}),
    ActionSpec("disk-sync", "disk", "write the target's unsynced pages out, as the kernel's "
               "periodic writeback does (what a later kill with lose_unsynced keeps)",
               target=True),
    ActionSpec("elect-preferred", "leadership", "preferred-leader election (ElectLeaders)",
               params={"partitions": Param("partitions", default=(),
                                           help="default: every partition")}),
    ActionSpec("reassign", "leadership", "reassign a partition to new replicas",
               params={"partition": Param("partition", required=True),
                       "replicas": Param("brokers", required=True)}),
    ActionSpec("heal-all", "heal", "heal the network, resume, start, unstall: everything"),
]

ACTIONS: dict[str, ActionSpec] = {a.name: a for a in _ACTIONS}
