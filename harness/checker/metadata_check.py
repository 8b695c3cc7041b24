"""The metadata-divergence check (issue 13): do the brokers' and controllers' metadata images
agree at the end of a run?

Input: the nodes' `GET /state` answers, {node name: state}. Every broker and controller
reports `metadata_digest` (MetadataImage.digest: a hash of the image without its offset) and
`metadata_offset`; a controller also reports its whole image (`image`), and a quorum
controller `quorum.active`.

Definition (`metadata_divergence(answers)`):
- The reference is the active controller's digest (`quorum.active`), else the one controller
  there is, else the digest most controllers hold, else (no controller answered) the digest
  most brokers hold; ties go to the lowest digest, so the result does not depend on order.
- Every node that answered with a digest other than the reference counts once. A node that
  did not answer, or whose answer has no digest, is listed under `unknown` and not counted
  (an absent node cannot be compared; the run says elsewhere that it was down).
- `by_partition`: for each differing controller (which exposes its image) the partitions
  whose registration differs from the reference controller's, `<topic>-<partition>` -> nodes;
  a broker only exposes a digest, so a differing broker adds nothing here.
- `examples`: up to 10 `[node, metadata_offset, digest]` of differing nodes.
The shape is that of an anomaly in results.json (HISTORY.md: a metadata check reports under
its own name): {"count", "by_partition", "examples"}, plus "reference" and "unknown".

`committed_log_divergence(applied, final)` is the same result for a controller quorum's
committed metadata records (Raft's state machine safety). `applied`: each voter's records as
its state machine applied them over the whole run, every incarnation, (offset, value);
`final`: each voter's committed log at the end (`committed_records`: offset -> value, None for
a control record). The reference is the voter with the longest final committed log (ties:
lowest name). A voter counts once if it ever applied a record that the reference's final log
holds differently at that offset (a committed record later lost or replaced: the legacy Raft
vote switch), or its final log differs from the reference's at an offset both hold.
`by_partition` counts the differing offsets under `__cluster_metadata-0`; examples are
`[node, offset]`. A voter with neither is `unknown`. Comparing the final logs alone would miss
the loss: after the truncation every voter agrees again, on a log without the record.

`with_log_check(images, logs)` adds the controllers' committed-log comparison
(harness/checker/metadata_log_check.py) to this result: "committed_log" and its count in "count".

`wait_for_agreement(endpoints, timeout_s)` polls the nodes (harness.state_poller.fetch_state)
until every endpoint answers and nothing differs, or the timeout passes, and returns the last
result: images converge after the faults heal (a broker applies what the controller committed
a fetch later), so only a difference that outlasts the wait counts.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

MAX_EXAMPLES = 10


def _is_controller(node: str, state: Mapping[str, Any]) -> bool:
    return node.startswith("controller") or "image" in state


def _reference(answers: Mapping[str, Mapping[str, Any]]) -> tuple[str | None, str | None]:
    """(reference node, digest)."""
    controllers = {n: s for n, s in answers.items()
                   if _is_controller(n, s) and s.get("metadata_digest")}
    for n in sorted(controllers):
        if (controllers[n].get("quorum") or {}).get("active"):
            return n, controllers[n]["metadata_digest"]
    if not controllers:
        return None, None
    counts = Counter(s["metadata_digest"] for s in controllers.values())
    best = max(sorted(counts), key=lambda d: counts[d])
    node = min(n for n, s in controllers.items() if s["metadata_digest"] == best)
    return node, best


def _partitions(image: Mapping[str, Any]) -> dict[str, Any]:
    return {f"{t}-{p}": reg for t, topic in (image.get("topics") or {}).items()
            for p, reg in (topic.get("partitions") or {}).items()}


def metadata_divergence(answers: Mapping[str, Mapping[str, Any] | None]) -> dict[str, Any]:
    known = {n: s for n, s in answers.items() if s and s.get("metadata_digest")}
    unknown = sorted(n for n in answers if n not in known)
    ref_node, ref_digest = _reference(known)
    if ref_node is None:  # no controller answered: the digest most brokers hold
        digests = Counter(s["metadata_digest"] for s in known.values())
        ref_digest = max(sorted(digests), key=lambda d: digests[d]) if digests else None
    differing = sorted(n for n, s in known.items() if s["metadata_digest"] != ref_digest)
    by_partition: dict[str, int] = {}
    ref_parts = _partitions(known[ref_node].get("image") or {}) if ref_node else {}
    for n in differing:
        image = known[n].get("image")
        if image is None:
            continue
        mine = _partitions(image)
        for name in sorted(set(mine) | set(ref_parts)):
            if mine.get(name) != ref_parts.get(name):
                by_partition[name] = by_partition.get(name, 0) + 1
    examples = [[n, known[n].get("metadata_offset"), known[n]["metadata_digest"]]
                for n in differing[:MAX_EXAMPLES]]
    return {"count": len(differing), "by_partition": by_partition, "examples": examples,
            "reference": {"node": ref_node, "digest": ref_digest}, "unknown": unknown}


METADATA_PARTITION = "__cluster_metadata-0"


def committed_records(log: Any, high_watermark: int | None) -> dict[int, bytes | None]:
    """A Raft log's committed part (below the high watermark) as offset -> value, None for a
    control record (broker_app.raft's ReplicatedLog)."""
    out: dict[int, bytes | None] = {}
    if high_watermark is None:
        return out
    for batch in log.read(log.start_offset, 1 << 30):
        for i, value in enumerate(batch.records):
            if batch.base_offset + i < high_watermark:
                out[batch.base_offset + i] = None if batch.control else value
    return out


def committed_log_divergence(applied: Mapping[str, Sequence[tuple[int, bytes]]],
                             final: Mapping[str, Mapping[int, bytes | None]]
                             ) -> dict[str, Any]:  # fmt: skip
    """The metadata-divergence result for voters' committed records (see above)."""
    nodes = sorted(set(applied) | set(final))
    unknown = [n for n in nodes if not applied.get(n) and not final.get(n)]
    result: dict[str, Any] = {"count": 0, "by_partition": {}, "examples": [],
                              "reference": {"node": None, "digest": None}, "unknown": unknown}
    if not any(final.values()):
        return result
    ref = min((n for n in final if final[n]), key=lambda n: (-len(final[n]), n))
    reference = final[ref]
    differing: dict[str, int] = {}
    offsets: set[int] = set()
    for n in nodes:
        pairs = [*applied.get(n, ()), *((o, v) for o, v in (final.get(n) or {}).items())]
        for off, value in pairs:
            if off in reference and reference[off] != value:
                offsets.add(off)
                differing.setdefault(n, off)
    result.update(count=len(differing),
                  by_partition={METADATA_PARTITION: len(offsets)} if offsets else {},
                  examples=[[n, off] for n, off in sorted(differing.items())[:MAX_EXAMPLES]],
                  reference={"node": ref, "digest": None})
    return result


def wait_for_agreement(endpoints: Callable[[], Mapping[str, str]], timeout_s: float,
                       interval_s: float = 0.5, request_timeout_s: float = 2.0,
                       unknown_grace_s: float = 5.0) -> dict[str, Any]:
    """Poll until nothing differs (and every node answered, or unknown_grace_s passed: a node
    a plan left down should not cost every run the whole timeout), or timeout_s passes."""
    from harness.state_poller import fetch_state

    start = time.monotonic()
    while True:
        answers = {n: fetch_state(a, request_timeout_s) for n, a in endpoints().items()}
        result = metadata_divergence(answers)
        waited = time.monotonic() - start
        if result["count"] == 0 and (not result["unknown"] or waited >= unknown_grace_s):
            return result
        if waited >= timeout_s:
            return result
        time.sleep(interval_s)


def with_log_check(images: Mapping[str, Any], logs: Mapping[str, Any]) -> dict[str, Any]:
    """The run's one `metadata-divergence` result: the image check's, with the controllers'
    committed-log comparison (metadata_log_check.py) under "committed_log" and its count
    added to "count" (each differing node, and each committed record missing or different on
    a voter, counts once)."""
    return {**images, "count": int(images["count"]) + int(logs["count"]),
            "committed_log": dict(logs)}
