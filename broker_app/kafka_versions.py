"""`kafka_version` presets: one table from a Kafka release to every replication behaviour switch.

Contract:
- SWITCHES names each version-governed switch as plans and the command line spell it
  (`truncation`, `isr-update`, `isr-join`, `follower-restart`, `diverging-fetch-state`,
  `follower-ahead`, `leader-epoch-fencing`, `client-leader-epochs`, `strict-min-isr`,
  `eligible-leader-replicas`, `unclean-leader-election`, `isr-eligibility`,
  `isr-broker-epochs`, `pre-vote`), the processes that take it (broker, controller or both)
  and its allowed values. Switch values are strings; booleans are "true"/"false".
  add_switch_arguments gives each process one flag per switch it takes, switch_fields turns
  the flags into its config fields.
- VERSIONS is the table: each row is a Kafka release, the value of EVERY switch in it, and what
  changed in it with its KIP/JIRA. It is written as a changelog (_CHANGES: the oldest
  release's values, then the switches each release changed). A release not listed behaves like
  the nearest listed one below it; only listed releases are accepted. DEFAULT_VERSION (4.1)
  is today's Kafka: the "fixed" behaviour.
- `resolve(version, explicit)` is the preset of `version` (None: DEFAULT_VERSION) with each
  explicit switch replacing its one field: an explicit switch always wins over the preset.
  The one combination refused is eligible-leader-replicas=true with strict-min-isr=false:
  KIP-966's ELR is only safe because the HW waits for min.insync.replicas replicas (an ELR
  member holds everything below the HW only then). Unknown versions or values raise
  KafkaVersionError naming the known ones.
- Not switches (always on here, whatever the version): KIP-841's other rules (a fenced last
  ISR member stays, shutting-down replicas are not elected), controlled
  shutdown on SIGTERM (controlled.shutdown.enable's default since 0.8.2; broker_lifecycle.py),
  clients answered only after the first unfence (KRaft's start-up order). The Raft vote switch
  (`raft-vote-log-check`) and the controller activation switch (`controller-activation:
  on-election`, L11) are hypothetical bugs, in no release, and therefore not in this table
  either. Consumers never read past the HW in any Kafka release; `consumer-visibility:
  log-end` (L5) is a hypothetical legacy switch and therefore not in this table.
- `render_markdown()` is the table as docs/kafka-versions.md shows it (a test keeps the two
  equal).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from broker_app.replication.behaviour import (
    DIVERGING_FETCH_STATE_MODES,
    FOLLOWER_AHEAD_MODES,
    FOLLOWER_RESTART_MODES,
    ISR_JOIN_MODES,
    ISR_UPDATE_MODES,
    TRUNCATION_MODES,
)

BOOL = ("true", "false")


class KafkaVersionError(ValueError):
    """An unknown version or switch value, or a refused combination; the message says which."""


@dataclass(frozen=True)
class Switch:
    name: str
    processes: tuple[str, ...]  # "broker", "controller"
    choices: tuple[str, ...]
    doc: str


SWITCHES: tuple[Switch, ...] = (
    Switch("truncation", ("broker",), TRUNCATION_MODES,
           "how a new follower reconciles its log with the leader"),
    Switch("isr-update", ("broker",), ISR_UPDATE_MODES,
           "whether a pending ISR change counts before the controller commits it"),
    Switch("isr-join", ("broker",), ISR_JOIN_MODES,
           "what a follower outside the ISR must reach to join: the HW and the start of the "
           "leader's epoch, or the HW alone (KAFKA-7128)"),
    Switch("follower-restart", ("broker",), FOLLOWER_RESTART_MODES,
           "when a follower reconciles its log again: on every new leader epoch, or only when "
           "the leader changes (KAFKA-7164)"),
    Switch("diverging-fetch-state", ("broker",), DIVERGING_FETCH_STATE_MODES,
           "what a leader records of a follower whose fetch it answers with DivergingEpoch: "
           "nothing, or the fetch offset as its log end (KAFKA-13141)"),
    Switch("follower-ahead", ("broker",), FOLLOWER_AHEAD_MODES,
           "what a follower does when its leader's log ends below its fetch offset: truncate "
           "to it, or stop its broker while unclean election is off (KAFKA-3410, KAFKA-7414)"),
    Switch("leader-epoch-fencing", ("broker",), BOOL,
           "KIP-320: a follower's requests carry its leader epoch; a leader in another epoch "
           "refuses them"),
    Switch("client-leader-epochs", ("broker",), BOOL,
           "KIP-320: clients learn leader epochs (Metadata v7) and may ask OffsetForLeaderEpoch, "
           "so a consumer validates its position after a leader change; false: Kafka 2.0's "
           "API versions"),
    Switch("strict-min-isr", ("broker",), BOOL,
           "the HW advances only while the ISR has min.insync.replicas members"),
    Switch("eligible-leader-replicas", ("broker", "controller"), BOOL,
           "KIP-966 ELR: replicas leaving an ISR below min.insync stay electable"),
    Switch("unclean-leader-election", ("broker", "controller"), BOOL,
           "cluster default of unclean.leader.election.enable"),
    Switch("isr-eligibility", ("broker", "controller"), BOOL,
           "KIP-841: fenced or shutting-down replicas may not join an ISR"),
    Switch("isr-broker-epochs", ("broker", "controller"), BOOL,
           "KIP-903: AlterPartition carries ISR members' broker epochs, stale ones refused"),
    Switch("pre-vote", ("controller",), BOOL,
           "KIP-996: a KRaft voter asks for pre-votes before it raises the epoch"),
)
SWITCH_NAMES: tuple[str, ...] = tuple(s.name for s in SWITCHES)
_BY_NAME = {s.name: s for s in SWITCHES}


@dataclass(frozen=True)
class KafkaVersion:
    version: str
    switches: Mapping[str, str]
    changes: str  # what this release changed, citing KIP/JIRA


# The oldest release's value of every switch.
_OLDEST: dict[str, str] = {
    "truncation": "high-watermark", "isr-update": "eager", "isr-join": "high-watermark",
    "follower-restart": "leader-change", "diverging-fetch-state": "update",
    "follower-ahead": "stop", "leader-epoch-fencing": "false", "client-leader-epochs": "false",
    "strict-min-isr": "false",
    "eligible-leader-replicas": "false", "unclean-leader-election": "true",
    "isr-eligibility": "false", "isr-broker-epochs": "false", "pre-vote": "false",
}  # fmt: skip

# Each release: the switches it changed, and what changed, citing KIP/JIRA. A release's whole
# set is the one below it with its changes applied: the table reads as Kafka's changelog.
_CHANGES: tuple[tuple[str, dict[str, str], str], ...] = (
    ("0.8", {},
     "0.8.2 (KAFKA-1028, KAFKA-1555): min.insync.replicas refuses acks=all appends but does "
     "not gate the HW; a follower truncates to its own HW (KAFKA-1211); unclean election "
     "on by default; with it off, a follower whose leader's log ends below its fetch "
     "offset stops its broker (KAFKA-1028's halt; an exit since 0.10.0.1, KAFKA-3924)"),
    ("0.11", {"truncation": "kip-101", "unclean-leader-election": "false"},
     "KIP-101 (KAFKA-1211): truncation by leader epoch (OffsetsForLeaderEpoch); KIP-106: "
     "unclean.leader.election.enable defaults to false"),
    ("2.0", {"truncation": "kip-279"},
     "KIP-279 (KAFKA-6361): OffsetsForLeaderEpoch answers with the leader's largest epoch "
     "<= the requested one, the follower iterates"),
    ("2.0.1", {"isr-join": "epoch-start", "follower-restart": "epoch-change"},
     "KAFKA-7128: a follower joins the ISR only once it reached the start of the leader's "
     "epoch, not just the HW (L15); KAFKA-7164: a follower that missed an epoch of the "
     "same leader reconciles its log again (L16)"),
    ("2.1", {"leader-epoch-fencing": "true", "follower-ahead": "truncate",
             "client-leader-epochs": "true"},
     "KIP-320 (KAFKA-7395): follower requests carry the leader epoch they follow, and a "
     "leader in another epoch refuses them: a zombie follower's stale fetch no longer "
     "appends the new epoch's batches after a tail it should have truncated (L18); clients "
     "learn leader epochs (Metadata v7, OffsetForLeaderEpoch v2), so a consumer can "
     "validate its position after a leader change (the Java consumer does since 2.3, "
     "KAFKA-7747; librdkafka since 2.1) (L22); "
     "KAFKA-7414: a follower whose leader's log ends below its fetch offset truncates "
     "instead of stopping its broker (KAFKA-3410, L21)"),
    ("2.7", {"isr-update": "maximal"},
     "KIP-497 (KAFKA-8836): AlterIsr, the leader counts the maximal ISR; KIP-595 adds "
     "Fetch v12 LastFetchedEpoch/DivergingEpoch (used by KRaft only)"),
    ("2.8", {"truncation": "diverging-epoch"},
     "KAFKA-10554: the replica fetcher truncates from the Fetch response's DivergingEpoch "
     "instead of OffsetsForLeaderEpoch round trips"),
    ("3.0", {"diverging-fetch-state": "skip"},
     "KAFKA-13141 (also 2.7.2, 2.8.1): a leader answering a follower's fetch with "
     "DivergingEpoch no longer records its fetch offset as the follower's log end, which "
     "let the HW pass offsets the follower held other batches at (L17)"),
    ("3.3", {"isr-eligibility": "true"},
     "KIP-841 (KAFKA-13916): fenced or shutting-down replicas stay out of the ISR (L20); "
     "the last member is kept (always on here)"),
    ("3.5", {"isr-broker-epochs": "true"},
     "KIP-903 (KAFKA-14139, KAFKA-14617): AlterPartition v3 carries each ISR member's broker "
     "epoch; the controller refuses a stale one (INELIGIBLE_REPLICA), so a replica that "
     "restarted with an emptied log cannot rejoin the ISR on its predecessor's progress"),
    ("3.7", {"strict-min-isr": "true"},
     "KIP-966 part (KAFKA-15583): the HW advances only while ISR >= min.insync.replicas, "
     "which every check caps at the replica count (effectiveMinIsr: acks=all to RF=3 "
     "with min.insync=4 is served, not refused); "
     "KAFKA-15582/15586: the clean-shutdown marker and PreviousBrokerEpoch"),
    ("3.9", {},
     "no ELR yet: the last ISR member is elected even after an unclean shutdown "
     "(L10's loss)"),
    ("4.0", {"pre-vote": "true"},
     "KIP-966: eligible leader replicas available, opt-in "
     "(eligible.leader.replicas.version=1); KIP-996 (KAFKA-16164): KRaft pre-vote"),
    ("4.1", {"eligible-leader-replicas": "true"},
     "KIP-966: eligible leader replicas on by default for new clusters; unclean-shutdown "
     "brokers leave every ISR and ELR; the last known leader is elected when ISR and ELR "
     "are empty"),
)


def _releases() -> tuple[KafkaVersion, ...]:
    if list(_OLDEST) != list(SWITCH_NAMES):
        raise KafkaVersionError("version table: _OLDEST must give every switch, in order")
    values = dict(_OLDEST)
    out = []
    for version, changes, text in _CHANGES:
        for name, value in changes.items():
            if name not in _BY_NAME or value not in _BY_NAME[name].choices:
                raise KafkaVersionError(f"version table, {version}: bad switch {name}={value}")
        values.update(changes)
        out.append(KafkaVersion(version, dict(values), text))
    return tuple(out)


VERSIONS: tuple[KafkaVersion, ...] = _releases()
KNOWN_VERSIONS: tuple[str, ...] = tuple(v.version for v in VERSIONS)
DEFAULT_VERSION = "4.1"
_BY_VERSION = {v.version: v for v in VERSIONS}


def known_versions_text() -> str:
    return ", ".join(KNOWN_VERSIONS)


def preset(version: str) -> dict[str, str]:
    row = _BY_VERSION.get(str(version).strip())
    if row is None:
        raise KafkaVersionError(
            f"unknown Kafka version {version!r} (known: {known_versions_text()})"
        )
    return dict(row.switches)


def check_value(name: str, value: str) -> str:
    """The switch value normalised (booleans lower-case); KafkaVersionError if invalid."""
    sw = _BY_NAME.get(name)
    if sw is None:
        raise KafkaVersionError(f"unknown switch {name!r} (known: {', '.join(SWITCH_NAMES)})")
    v = str(value).strip()
    if sw.choices == BOOL:
        v = v.lower()
    if v not in sw.choices:
        raise KafkaVersionError(f"{name}={value!r} is not one of {', '.join(sw.choices)}")
    return v


def resolve(version: str | None, explicit: Mapping[str, str | None] | None = None
            ) -> dict[str, str]:  # fmt: skip
    """The preset of `version` with each explicit (non-None) switch replacing its field."""
    out = preset(DEFAULT_VERSION if version is None else version)
    for name, value in (explicit or {}).items():
        if value is not None:
            out[name] = check_value(name, value)
    if out["eligible-leader-replicas"] == "true" and out["strict-min-isr"] == "false":
        raise KafkaVersionError(
            "eligible-leader-replicas=true needs strict-min-isr=true (KIP-966: an ELR member "
            "holds everything below the HW only while the HW waits for min.insync.replicas); "
            "set eligible-leader-replicas false too, or pick a kafka_version before 3.7"
        )
    return out


def as_bool(value: str) -> bool:
    return value == "true"


def bool_text(value: bool | None) -> str | None:
    """An optional command-line boolean as a switch value (None: not given)."""
    return None if value is None else ("true" if value else "false")


def add_switch_arguments(parser: Any, process: str) -> None:
    """One flag per switch `process` takes ("broker" or "controller"), named as the switch:
    `--NAME VALUE`, or `--NAME` / `--no-NAME` for a boolean. Each defaults to None: the
    --kafka-version preset decides what is not given."""
    import argparse

    for s in SWITCHES:
        if process not in s.processes:
            continue
        if s.choices == BOOL:
            parser.add_argument(f"--{s.name}", action=argparse.BooleanOptionalAction,
                                default=None, help=s.doc)
        else:
            parser.add_argument(f"--{s.name}", choices=s.choices, default=None, help=s.doc)


def switch_fields(args: Any, process: str) -> dict[str, str | bool]:
    """The switches `process` takes, resolved from `args.kafka_version` and the flags of
    add_switch_arguments, keyed by config field name (`isr-join` -> `isr_join`), booleans as
    bool. KafkaVersionError for a refused combination."""
    mine = [s for s in SWITCHES if process in s.processes]
    explicit = {}
    for s in mine:
        given = getattr(args, s.name.replace("-", "_"))
        explicit[s.name] = bool_text(given) if s.choices == BOOL else given
    resolved = resolve(args.kafka_version, explicit)
    return {s.name.replace("-", "_"): as_bool(resolved[s.name]) if s.choices == BOOL
            else resolved[s.name] for s in mine}


def kafka_version_arg(value: str) -> str:
    """argparse type of --kafka-version: a known release, else the list of known ones."""
    import argparse

    if value.strip() not in KNOWN_VERSIONS:
        raise argparse.ArgumentTypeError(
            f"unknown Kafka version {value!r} (known: {known_versions_text()})"
        )
    return value.strip()


def render_markdown() -> str:
    """The version table as Markdown (docs/kafka-versions.md embeds exactly this)."""
    head = ["version", *SWITCH_NAMES, "what changed (KIP/JIRA)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v in VERSIONS:
        cells = [v.version, *(v.switches[n] for n in SWITCH_NAMES), v.changes]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| switch | processes | values | meaning |", "|---|---|---|---|"]
    for s in SWITCHES:
        lines.append(f"| {s.name} | {', '.join(s.processes)} | {' / '.join(s.choices)} "
                     f"| {s.doc} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render_markdown(), end="")
