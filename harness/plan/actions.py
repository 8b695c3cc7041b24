"""The action catalogue: every fault a step may name, mapped onto the cluster primitives.

Each action says which target keys it takes, whether it may (or must) have a `duration`
(after which the run undoes it with `undo`), and its parameters with types and bounds. The
loader validates steps against this table; the run dispatches on `ActionSpec.name`.

Link actions act on bytes flowing from every `from` node to every `to` node: one direction
only, each as one Toxiproxy toxic on the proxies that carry those bytes (harness/net.py):
latency and bandwidth slow them; blackhole (`timeout`) drops them, and closes the
connections after `close_after_ms` when that is > 0; reset (`reset_peer`) resets every
connection `after_ms` after its next bytes; slice (`slicer`) cuts them into small pieces
(TCP reads see short reads); limit-data (`limit_data`) lets each connection carry `bytes`
bytes, then closes it. Toxiproxy acts per connection, so a client that reconnects during
a reset or limit-data window is hit again, and removing a blackhole closes the connections
it held. `partition` cuts both directions between `target` and `peers`
(default: every other broker and controller; clients still reach the target — that is what
lets a cut-off leader keep acknowledging acks=1 writes). `isolate` also cuts clients.

`clock` skews the target broker's own clock seam (broker_app/clock.py, through its admin
`POST /clock`), not the OS clock: `ms` ahead (behind when negative) for every time the broker
reads (record timestamps, retention, ISR lag, group session timeouts), alternating with 0
every `strobe_period_ms` when that is > 0. Without a duration it is a bump that stays until
heal-all.

`replace-member` and `hold-commits` act on the run's own clients (the subscribe workload's group
members, harness/workload.py), not on a node: replace-member is a crashed consumer replaced by a
new process (a rebalance on demand), hold-commits pauses the members' commits.
`replace-consumer` does the same for an assign-mode consumer: a new process reads from the
beginning again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Param:
    # "int" | "float" | "bool" | "enum" | "partition" | "partitions" | "brokers" | "topics"
    type: str
    required: bool = False
    default: Any = None
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    help: str = ""


@dataclass(frozen=True)
class ActionSpec:
    name: str
    kind: str  # network | process | disk | file | clock | leadership | group | consumer | heal
    help: str
    target: bool = False  # takes `target:` (required when True)
    peers: bool = False  # takes optional `peers:` (partition)
    link: bool = False  # takes required `from:` and `to:`
    duration: str = "none"  # none | optional | required
    undo: str | None = None  # what the run does when the duration ends
    params: dict[str, Param] = field(default_factory=dict)
    # The random nemesis may draw it (`nemesis.kinds`); random_params fill required params the
    # plan's nemesis.params does not give.
    random: bool = False
    random_params: dict[str, Any] = field(default_factory=dict)
    # The simulator (harness/cluster/simulated.py): why it cannot carry the action out (None:
    # it can), and the params it cannot honour when set (a run refuses such a step up front).
    not_simulated: str | None = None
    sim_unset: tuple[str, ...] = ()


MAX_CLOCK_SKEW_MS = 24 * 3600 * 1000  # a day either way; the broker refuses beyond ten years

_ACTIONS = [
    ActionSpec("partition", "network", "cut target from peers, both directions", target=True,
               peers=True, duration="optional", undo="heal those links", random=True),
    ActionSpec("isolate", "network", "cut target from every node and the clients",
               target=True, duration="optional", undo="heal those links", random=True),
    ActionSpec("latency", "network", "delay bytes from `from` to `to` (one direction)",
               link=True, duration="optional", undo="remove the toxic",
               params={"ms": Param("int", required=True, min=0, max=600_000),
                       "jitter_ms": Param("int", default=0, min=0, max=600_000)},
               random=True, random_params={"ms": 200, "jitter_ms": 50}),
    ActionSpec("bandwidth", "network", "limit bytes from `from` to `to` (one direction)",
               link=True, duration="optional", undo="remove the toxic",
               params={"kbps": Param("int", required=True, min=1)},
               random=True, random_params={"kbps": 64},
               not_simulated="the simulated network has no byte rates"),
    ActionSpec("blackhole", "network", "drop bytes from `from` to `to` (one direction); "
               "connections stay open unless close_after_ms > 0, and removing it closes them",
               link=True, duration="optional", undo="remove the toxic",
               params={"close_after_ms": Param("int", default=0, min=0, max=600_000,
                                               help="close each connection this long after "
                                                    "the fault began; 0: never")},
               random=True, sim_unset=("close_after_ms",)),
    ActionSpec("reset", "network", "reset (RST) every connection carrying bytes from `from` to "
               "`to`, after_ms after its next bytes", link=True, duration="optional",
               undo="remove the toxic",
               params={"after_ms": Param("int", default=0, min=0, max=600_000)}, random=True,
               not_simulated="the simulated network has no connections to reset"),
    ActionSpec("slice", "network", "cut bytes from `from` to `to` into pieces of about `bytes` "
               "bytes, one every delay_us", link=True, duration="optional",
               undo="remove the toxic",
               params={"bytes": Param("int", required=True, min=1, max=1 << 20),
                       "variation": Param("int", default=0, min=0, max=1 << 20,
                                          help="+- bytes around `bytes`"),
                       "delay_us": Param("int", default=0, min=0, max=1_000_000)},
               random=True, random_params={"bytes": 64, "delay_us": 10},
               not_simulated="the simulated network delivers whole messages"),
    ActionSpec("limit-data", "network", "close each connection carrying bytes from `from` to "
               "`to` once it has carried `bytes` bytes", link=True, duration="optional",
               undo="remove the toxic",
               params={"bytes": Param("int", required=True, min=0, max=1 << 40)},
               random=True, random_params={"bytes": 65536},
               not_simulated="the simulated network has no connections to close"),
    ActionSpec("heal", "heal", "remove every network fault"),
    ActionSpec("kill", "process", "SIGKILL the target", target=True, duration="optional",
               undo="start", random=True,
               params={"lose_unsynced": Param("bool", default=False,
                                              help="drop writes not yet fsynced")}),
    ActionSpec("stop", "process", "SIGTERM the target (a broker's controlled shutdown: its "
               "leaderships move before it exits)", target=True, duration="optional",
               undo="start", random=True),
    ActionSpec("start", "process", "start the target", target=True),
    ActionSpec("restart", "process", "stop (TERM or KILL) then start the target", target=True,
               random=True,
               params={"signal": Param("enum", default="TERM", choices=("TERM", "KILL")),
                       "lose_unsynced": Param("bool", default=False)}),
    ActionSpec("pause", "process", "SIGSTOP the target", target=True, duration="optional",
               undo="resume", random=True),
    ActionSpec("resume", "process", "SIGCONT the target", target=True),
    ActionSpec("disk-stall", "disk", "stall the target's disk writes/fsyncs", target=True,
               duration="required", undo="unstall", random=True,
               params={"ops": Param("enum", default="all", choices=("write", "fsync", "all"))},
               not_simulated="the simulated disk does not stall"),
    ActionSpec("disk-sync", "disk", "write the target's unsynced pages out, as the kernel's "
               "periodic writeback does (what a later kill with lose_unsynced keeps)",
               target=True),
    ActionSpec("corrupt-file", "file", "damage one file of the target's data dir while it is "
               "stopped: flip random bits in it or cut its tail (a segment, its index or a "
               "checkpoint); the broker must detect it when it starts, repair or refuse to "
               "start, and never serve the damage", target=True,
               params={"file": Param("enum", required=True, choices=(
                           "segment", "index", "leader-epoch-checkpoint",
                           "replication-offset-checkpoint"),
                           help="segment and index: the partition's newest"),
                       "partition": Param("partition", help="for all but "
                                          "replication-offset-checkpoint"),
                       "how": Param("enum", default="flip", choices=("flip", "truncate")),
                       "bytes": Param("int", default=1, min=1, max=1 << 20,
                                      help="flip: bytes with one flipped bit; truncate: bytes "
                                           "cut off the end")},
               not_simulated="the simulated disk is not damaged"),
    ActionSpec("clock", "clock", "skew the target broker's clock by `ms` (its own clock seam: "
               "timestamps, retention, ISR lag, session timeouts); strobe_period_ms > 0 "
               "alternates between `ms` and 0", target=True, duration="optional",
               undo="reset the clock",
               params={"ms": Param("int", required=True, min=-MAX_CLOCK_SKEW_MS,
                                   max=MAX_CLOCK_SKEW_MS, help="negative: behind"),
                       "strobe_period_ms": Param("int", default=0, min=0,
                                                 max=MAX_CLOCK_SKEW_MS)},
               not_simulated="the simulated brokers share the virtual clock"),
    ActionSpec("elect-preferred", "leadership", "preferred-leader election (ElectLeaders)",
               random=True,
               params={"partitions": Param("partitions", default=(),
                                           help="default: every partition")}),
    ActionSpec("reassign", "leadership", "reassign a partition to new replicas",
               params={"partition": Param("partition", required=True),
                       "replicas": Param("brokers", required=True)},
               not_simulated="the simulated clients send no AlterPartitionReassignments"),
    ActionSpec("rebalance", "leadership", "move every partition of the plan's topics (or "
               "`topics`) to the placement `kafka-reassign-partitions --generate` would propose "
               "over `brokers`, then execute it (AlterPartitionReassignments)",
               params={"brokers": Param("brokers", default=(),
                                        help="default: every broker of the plan"),
                       "topics": Param("topics", default=(),
                                       help="default: every topic of the plan")},
               not_simulated="the simulated clients send no AlterPartitionReassignments"),
    ActionSpec("replace-member", "group", "replace a member of the subscribe workload's group: "
               "its consumer leaves (LeaveGroup) without committing what it read since its "
               "last commit, and a new process joins in its slot: "
               "the group rebalances and the replacement resumes from the committed offsets",
               params={"member": Param("int", default=0, min=0,
                                       help="the member's slot, 0..consumers.count-1")},
               not_simulated="the simulator has no consumer groups"),
    ActionSpec("hold-commits", "group", "the group's members read but do not commit (an "
               "application that commits every few seconds): a commit the coordinator lost "
               "is not overwritten by a later one before a rebalance reads it",
               duration="required", undo="release commits",
               not_simulated="the simulator has no consumer groups"),
    ActionSpec("replace-consumer", "consumer", "replace an assign-mode consumer of the workload "
               "by a new process that reads its partitions from the beginning again (with "
               "consumers.racks, from the replica its rack picks now: e.g. a replica that "
               "rejoined the ISR)",
               params={"consumer": Param("int", default=0, min=0,
                                         help="the consumer's slot, 0..consumers.count-1")}),
    ActionSpec("heal-all", "heal", "heal the network, resume, start, unstall: everything"),
]

ACTIONS: dict[str, ActionSpec] = {a.name: a for a in _ACTIONS}
# What `nemesis: {mode: random, kinds: [...]}` may name (start/resume/heal are the schedule's
# own business; reassign needs its replicas named, so a random draw cannot make one).
RANDOM_KINDS: tuple[str, ...] = tuple(a.name for a in _ACTIONS if a.random)
