"""InvariantChecker: replication invariants checked after every simulated event (issue 24).

`InvariantChecker(cluster).attach()` installs an `EventLoop.after_event` hook (and a power-loss
listener) on a SimCluster; after each event it looks at the brokers' Partitions, their replica
fetchers and the controllers' committed metadata images, and records a `Violation` (which
invariant, partition, the event that just ran, the virtual time, what is wrong, and the state
that shows it) the first time each distinct violation is seen. It never changes the run: it
reads state, schedules nothing and draws no randomness. `result()` is the run check
`invariant-violations`: {"count", "by_partition", "examples"} of the enforced violations (up
to 10 `Violation.text()`s), plus "by_invariant", "tolerated" (the same shape for the
violations the configured switches do not promise) and "not_enforced" (invariant -> why);
`violations` is the full list.

The invariants (Kafka's names; cf. RaftEventSimulationTest's per-event invariants):
- `one-leader-per-epoch`: a (partition, leader epoch) has one leader, across every broker
  that acts as leader and every controller's committed image.
- `leader-hw-monotonic`: a leader's high watermark never decreases within its leader epoch
  (one leader process: a restart is a new leader).
- `isr-holds-hw`: every offset below a leader's high watermark is held, in the same batch
  (base and last offset, partition leader epoch, CRC), by every member of that leader's
  maximal ISR (the ISR the HW counts: KIP-497/KIP-841), over the offsets both logs still
  have (a log start moved by retention or DeleteRecords is not a loss). Checked
  incrementally: each new HW range once; a member again from the start when it joins, its
  log is truncated (Log's truncation count, `_generation`) or reopened by a restart.
- `fetch-livelock`: a follower does not send more than `livelock_fetches` (N) Fetch rounds in
  a row with the same fetch offset and LastFetchedEpoch while its leader is reachable (both
  up, unpaused, the link not cut), still leads in the follower's leader epoch, and has
  something to give it (its LEO differs from the fetch offset, or it would answer
  DivergingEpoch). A caught-up follower's idle long polls do not count. KAFKA-10706's wedge
  (a DivergingEpoch answer that truncates nothing, repeated every few ms) is the case it is
  for. N = 20 by default: a healthy round either brings records or truncates (which changes
  the fetch offset or epoch), and FetchPacer spaces rounds that fail by 0.2-2 s, so 20 is
  well past any transient (a reassignment or a leader change still propagating).
- `fenced-in-isr`: a controller's committed ISR never names a fenced (or unregistered)
  broker. With eligible leader replicas (KIP-966, Kafka 4.1) none at all; without, KIP-841
  keeps a fenced broker only as the ISR's last member.

Which invariants are enforced under which switches (`enforced`, decided once from the brokers'
ReplicationBehaviour and the ControllerConfig; `why_not` says why one is not). A violation of
an invariant that is not enforced is still recorded, with enforced=False, and reported under
"tolerated": it is what a legacy mode is for, not a failure of the run.
- `leader-hw-monotonic` and `fetch-livelock`: every mode. The HW only moves forward on a
  leader in every mode (Partition.maybe_increment_leader_hw); no switch makes a follower spin.
- `one-leader-per-epoch` and `fenced-in-isr`: every mode but the hypothetical controller bug
  switches (`controller-activation: on-election`, L11; `raft-vote-log-check: none`, L13;
  `fenced-in-isr` also not with `isr-eligibility: false`, before KIP-841, L20): a
  controller deciding on a stale or diverged metadata image commits what a correct one never
  would (L11 legacy commits an ISR naming a fenced broker). Otherwise KIP-841's eligibility
  (`isr-eligibility`) decides whether it holds at all, and the ELR switch how strict
  `fenced-in-isr` is (see above).
- `isr-holds-hw`: only when the HW means "replicated to every ISR member": truncation by
  leader epoch that reconciles logs (`kip-279` or `diverging-epoch`; `high-watermark`, L1/L2,
  and `kip-101`, the fast double failover, leave a follower with another batch below the
  HW), the maximal ISR (`isr-update: eager`, L6/L9, counts a shrink before it is committed),
  KIP-903's broker epochs (`isr-broker-epochs: false`, L12, re-admits an emptied replica),
  KIP-320's fencing and KAFKA-7164's restart on every epoch (`leader-epoch-fencing: false`,
  `follower-restart: leader-change`, L16: a follower keeps a tail its leader truncated),
  KAFKA-13141's fix (`diverging-fetch-state: update` with `diverging-epoch` truncation, L17:
  the leader counts a diverged follower's fetch offset for the HW), no
  unclean leader election (L4: the new leader's log is short and the others truncate to it),
  and neither controller bug switch (a replica outside the real ISR may be elected).
  `strict-min-isr` and the ELR do not matter to it: a lone ISR member holds what its HW
  covers (L7's and L10's losses are a lone member's power loss, across leader epochs).
Power loss (`SimCluster.kill(lose_unsynced=True)`): short of a flush per batch, Kafka
acknowledges what is in the page cache of the ISR members, so one member's power loss may
drop offsets below the HW; Kafka 4.1 survives it because the controller drops that member
from the ISR (KIP-966: unclean shutdown, in the registration's own batch), which its leader
learns one metadata round later. So a replica whose power loss dropped batches of a partition
is not held to `isr-holds-hw` there until it has registered again (a registration epoch
above the one at the loss: before that the controller cannot know of the loss, and an ISR
expansion its leader sent on a fetch from before the loss may still add it) and then either
nothing names it in an ISR any more (no live leader's maximal or committed ISR, no
controller's committed ISR: it left, and it is held to it when it rejoins) or a controller's
committed ISR names it while that image knows its new incarnation (it was admitted, or kept,
knowingly, as L12's legacy mode does).
Seen with seed 1 of chaos_plans/scenarios: L1, L2, L3, L4, L6, L9 and L12 legacy tolerate
isr-holds-hw, L11 legacy fenced-in-isr; every fixed mode shows nothing.
Not checked: leader completeness across epochs (a new leader holds everything below an
earlier leader's HW): L7, L8 and L10 lose data that way and only the history shows it.
Limits: state changed by the harness between events (a nemesis action outside the event loop)
is seen after the next event, which the violation then names (`check_now()` checks at once);
the cluster-wide unclean.leader.election.enable decides, not a topic's override.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from broker_app.metadata.image import MetadataImage
from broker_app.replication.behaviour import ReplicationBehaviour
from broker_app.replication.fetcher import FETCHING
from broker_app.replication.partition import Partition
from broker_app.server.replica_fetcher import ReplicaFetcherThread

from .broker import SimBroker
from .cluster import SimCluster
from .env import SimFuture, SimTask

ONE_LEADER_PER_EPOCH = "one-leader-per-epoch"
LEADER_HW_MONOTONIC = "leader-hw-monotonic"
ISR_HOLDS_HW = "isr-holds-hw"
FETCH_LIVELOCK = "fetch-livelock"
FENCED_IN_ISR = "fenced-in-isr"
INVARIANTS: tuple[str, ...] = (ONE_LEADER_PER_EPOCH, LEADER_HW_MONOTONIC, ISR_HOLDS_HW,
                               FETCH_LIVELOCK, FENCED_IN_ISR)  # fmt: skip
DEFAULT_LIVELOCK_FETCHES = 20
MAX_EXAMPLES = 10

TopicPartition = tuple[str, int]
BatchKey = tuple[int, int, int, int]  # base offset, last offset, partition leader epoch, CRC


@dataclass(frozen=True)
class Violation:
    """One invariant violated, as first seen: after which event, when, and in what state."""

    invariant: str
    partition: str  # "t-0"
    event: str  # the event that had just run (describe_event)
    event_index: int  # EventLoop.events_run at that point: the event's number in the run
    time_ms: int  # virtual time
    message: str  # what is wrong
    state: str  # the state that shows it
    enforced: bool  # False: the configured (legacy) behaviour does not promise it

    def text(self) -> str:
        return (f"{self.invariant} {self.partition} at {self.time_ms} ms, after event "
                f"#{self.event_index} ({self.event}): {self.message} | state: {self.state}")


def enforced_invariants(behaviour: ReplicationBehaviour, controller: Any
                        ) -> dict[str, str | None]:  # fmt: skip
    """invariant -> None when the switches promise it, else why they do not (the rule of the
    module docstring). `controller` is a ControllerConfig."""
    controller_bug = None
    if not getattr(controller, "activate_caught_up", True):
        controller_bug = "controller-activation on-election (hypothetical bug, L11)"
    elif not getattr(controller, "raft_vote_log_check", True):
        controller_bug = "raft-vote-log-check none (hypothetical bug, L13)"
    isr: str | None = None
    if behaviour.truncation not in ("kip-279", "diverging-epoch"):
        isr = f"truncation {behaviour.truncation} does not reconcile a follower's log"
    elif behaviour.isr_update != "maximal":
        isr = f"isr-update {behaviour.isr_update} counts an uncommitted shrink"
    elif not behaviour.isr_broker_epochs or not getattr(controller, "isr_broker_epochs", True):
        isr = "isr-broker-epochs false (pre-KIP-903) can re-admit an emptied replica"
    elif not behaviour.leader_epoch_fencing or behaviour.follower_restart != "epoch-change":
        isr = ("leader-epoch-fencing false or follower-restart leader-change (before Kafka 2.1) "
               "can leave a follower with a tail its leader truncated")
    elif behaviour.uses_last_fetched_epoch and behaviour.diverging_fetch_state == "update":
        isr = ("diverging-fetch-state update (Kafka 2.8.0, KAFKA-13141) counts a diverged "
               "follower's fetch offset for the HW")
    elif getattr(controller, "unclean_leader_election", False):
        isr = "unclean-leader-election elects a replica outside the ISR"
    elif controller_bug is not None:
        isr = controller_bug
    fenced = controller_bug
    if fenced is None and not getattr(controller, "isr_eligibility", True):
        fenced = "isr-eligibility false (before Kafka 3.3, KIP-841) admits a fenced broker"
    return {ONE_LEADER_PER_EPOCH: controller_bug, LEADER_HW_MONOTONIC: None, ISR_HOLDS_HW: isr,
            FETCH_LIVELOCK: None, FENCED_IN_ISR: fenced}  # fmt: skip


@dataclass(slots=True)
class _Member:
    """One member of a leader's maximal ISR (not the leader), as far as it was checked."""

    broker: SimBroker
    log: Any = None  # the log object checked (a restart opens another)
    generation: int = -1  # its truncation count then (Log._generation)
    verified: int = -1  # holds the leader's batches below this offset


@dataclass(slots=True)
class _LeaderView:
    """What has been checked of one leader (a Partition object in one leader epoch)."""

    epoch: int
    hw: int
    state: Any = None  # the Partition's partition_state object last seen
    members: dict[int, _Member] = field(default_factory=dict)


class InvariantChecker:
    def __init__(self, cluster: SimCluster, livelock_fetches: int = DEFAULT_LIVELOCK_FETCHES,
                 max_examples: int = MAX_EXAMPLES) -> None:  # fmt: skip
        self.cluster = cluster
        self.loop = cluster.loop
        self.livelock_fetches = livelock_fetches
        self.max_examples = max_examples
        self.violations: list[Violation] = []
        brokers = sorted(cluster.brokers.items())
        self._brokers: list[SimBroker] = [b for _, b in brokers]
        self._by_id: dict[int, SimBroker] = dict(brokers)
        behaviour = self._brokers[0].config.behaviour if self._brokers \
            else ReplicationBehaviour()
        ctl = next(iter(cluster.controllers.values()))
        self.why_not = enforced_invariants(behaviour, ctl.config)
        self.enforced = {name: why is None for name, why in self.why_not.items()}
        self._elr = bool(getattr(ctl.config, "eligible_leader_replicas", True))
        self._uses_last_fetched_epoch = behaviour.uses_last_fetched_epoch
        self._fn: Callable[[], None] | str | None = None  # the event (or label) checked
        self._leaders: dict[Partition, _LeaderView] = {}
        self._epoch_leader: dict[tuple[TopicPartition, int], tuple[int, str]] = {}
        self._rounds: dict[ReplicaFetcherThread, int] = {}
        # (follower, incarnation, partition) -> [(leader epoch, fetch offset, last epoch), n,
        # virtual ms of the first]
        self._streaks: dict[tuple[int, int, TopicPartition], list[Any]] = {}
        self._images: dict[str, MetadataImage] = {}
        self._controllers = list(cluster.controllers.items())
        self._suspects: set[tuple[TopicPartition, int]] = set()  # power loss, still listed
        self._loss_epoch: dict[int, int] = {}  # broker -> its registered epoch at its power loss
        self._seen: set[tuple[Any, ...]] = set()
        self._previous: Callable[[Callable[[], None]], None] | None = None

    # --- wiring ---------------------------------------------------------------------------

    def attach(self) -> InvariantChecker:
        """Check after every event from now on (an `after_event` already set runs first)."""
        previous = self._previous = self.loop.after_event
        if previous is None:
            self.loop.after_event = self.after_event
        else:
            def both(fn: Callable[[], None]) -> None:
                previous(fn)
                self.after_event(fn)

            self.loop.after_event = both
        self.cluster.power_loss_listeners.append(self.on_power_loss)
        return self

    def detach(self) -> None:
        self.loop.after_event = self._previous
        if self.on_power_loss in self.cluster.power_loss_listeners:
            self.cluster.power_loss_listeners.remove(self.on_power_loss)

    def on_power_loss(self, broker_id: int, lost: dict[TopicPartition, int]) -> None:
        """SimCluster's power-loss listener: `broker_id` lost batches of the partitions in
        `lost`; it is not held to isr-holds-hw there until it left every ISR or was admitted
        again by a controller that knows its new incarnation (see the module docstring)."""
        self._loss_epoch[broker_id] = max(
            (b.epoch for image in self._live_images()
             if (b := image.brokers.get(broker_id)) is not None), default=-1)  # fmt: skip
        for tp in lost:
            self._suspects.add((tp, broker_id))

    # --- the check ------------------------------------------------------------------------

    def after_event(self, fn: Callable[[], None] | str | None) -> None:
        """The EventLoop hook: check everything the event `fn` may have changed. Cheap when
        nothing relevant moved: identity and integer comparisons only."""
        self._fn = fn
        # The controllers first: a power-loss replica they admitted again is checked below.
        images = self._images
        for name, c in self._controllers:
            raft = c.raft
            if raft is None or not c.process.up:
                continue
            image = raft.committed_image
            if images.get(name) is not image:
                images[name] = image
                self._check_image(name, image)
        if self._suspects:
            self._forget_suspects()
        leaders = self._leaders
        rounds = self._rounds
        for b in self._brokers:
            rm = b.replica_manager
            if rm is None:
                continue
            for tp, p in rm.partitions.items():
                if p.role != "leader":
                    continue
                v = leaders.get(p)
                if (v is None or v.epoch != p.leader_epoch or v.hw != p.log.high_watermark
                        or v.state is not p.partition_state):  # fmt: skip
                    self._check_leader(b, tp, p, v)
                    continue
                hw = v.hw
                for mem in v.members.values():
                    mrm = mem.broker.replica_manager
                    if mrm is None:
                        continue  # down: what it holds is looked at when it is back
                    mp = mrm.partitions.get(tp)
                    if (mp is None or mp.log is not mem.log or mem.verified < hw
                            or mp.log._generation != mem.generation):  # fmt: skip
                        self._check_leader(b, tp, p, v)
                        break
            if b.fetchers:
                for f in b.fetchers.values():
                    if rounds.get(f, 0) != f.rounds:  # a round started since
                        rounds[f] = f.rounds
                        self._fetch_round(b, f)

    def check_now(self, label: str | None = None) -> None:
        """Check the current state outside the event loop (e.g. after a harness action,
        which `label` names in a violation)."""
        self.after_event(label)

    # leaders: one per epoch, HW monotonic, the ISR holds the HW

    def _check_leader(self, b: SimBroker, tp: TopicPartition, p: Partition,
                      v: _LeaderView | None) -> None:  # fmt: skip
        hw = p.log.high_watermark
        if v is None or v.epoch != p.leader_epoch:
            v = self._leaders[p] = _LeaderView(p.leader_epoch, hw)
            self._claim_epoch(tp, p.leader_epoch, b.node_id, f"{b.name} acts as leader")
        elif hw != v.hw:
            if hw < v.hw:
                self._violate(LEADER_HW_MONOTONIC, tp,
                              ("hw", b.node_id, b.process.generation, tp, p.leader_epoch),
                              f"{b.name}'s high watermark went from {v.hw} to {hw} in leader "
                              f"epoch {p.leader_epoch}", self._leader_text(b, p))  # fmt: skip
            v.hw = hw
        state = p.partition_state
        if state is not v.state:
            v.state = state
            members = state.maximal_isr - {b.node_id}
            for m in [m for m in v.members if m not in members]:
                del v.members[m]
            for m in members:
                if m not in v.members and m in self._by_id:
                    v.members[m] = _Member(self._by_id[m])
        for m, mem in v.members.items():
            mb = mem.broker
            mrm = mb.replica_manager
            if mrm is None:
                continue
            mp = mrm.partitions.get(tp)
            mlog = mp.log if mp is not None else mb.store.get_log(tp)
            # The log counts its truncations: one may have dropped checked offsets (and a
            # later append put others there), and a restart opens another log: either way
            # the member is checked afresh.
            generation = -2 if mlog is None else mlog._generation
            if mlog is not mem.log or generation != mem.generation:
                mem.log, mem.generation, mem.verified = mlog, generation, -1
            if mem.verified < hw:
                self._check_member(b, tp, p, m, mem, hw)

    def _check_member(self, b: SimBroker, tp: TopicPartition, p: Partition, m: int,
                      mem: _Member, hw: int) -> None:  # fmt: skip
        if (tp, m) in self._suspects:
            return  # checked from where it was once it is not exempt any more
        log, mlog, mb = p.log, mem.log, mem.broker
        lo = max(mem.verified, log.log_start_offset)
        if mlog is not None:
            lo = max(lo, mlog.log_start_offset)
        mem.verified = hw
        if lo >= hw:
            return
        problem = None
        if mlog is None:
            problem = f"{mb.name} has no log of {tp[0]}-{tp[1]}"
        elif mlog.log_end_offset < hw:
            problem = (f"{mb.name} holds offsets only below {mlog.log_end_offset}, the high "
                       f"watermark is {hw}")  # fmt: skip
        else:
            mine = _batch_keys(log, lo, hw)
            theirs = _batch_keys(mlog, lo, hw)
            if mine != theirs:
                for a, c in zip(mine + [None], theirs + [None], strict=False):
                    if a != c:
                        at = (a or c)[0]  # type: ignore[index]
                        problem = (f"{mb.name} holds another batch at offset {at}: "
                                   f"{_key_text(c)} where the leader has {_key_text(a)}")
                        break
        if problem is None:
            return
        self._violate(ISR_HOLDS_HW, tp, ("isr", b.node_id, b.process.generation, tp,
                                         p.leader_epoch, m),
                      f"{b.name} (leader epoch {p.leader_epoch}) has high watermark {hw} with "
                      f"{mb.name} in its ISR, and {problem}",
                      f"{self._leader_text(b, p)}; {self._replica_text(mb, tp)}")  # fmt: skip

    def _claim_epoch(self, tp: TopicPartition, epoch: int, leader: int, who: str) -> None:
        """one-leader-per-epoch: the first claim of (partition, epoch) wins, others violate."""
        seen = self._epoch_leader.get((tp, epoch))
        if seen is None:
            self._epoch_leader[(tp, epoch)] = (leader, who)
        elif seen[0] != leader:
            self._violate(ONE_LEADER_PER_EPOCH, tp, ("leader", tp, epoch, leader),
                          f"leader epoch {epoch} has two leaders: broker-{seen[0]} "
                          f"({seen[1]}) and broker-{leader} ({who})",
                          self._leaders_text(tp))  # fmt: skip

    # followers: no fetch livelock

    def _fetch_round(self, b: SimBroker, f: ReplicaFetcherThread) -> None:
        """A new fetcher round of `b` from f.leader started: every partition it fetches sends
        its fetch offset now."""
        leader = self._by_id.get(f.leader_id)
        net = self.cluster.net
        reachable = (leader is not None and leader.process.up and not leader.process.paused
                     and not net.is_cut(b.name, leader.name)
                     and not net.is_cut(leader.name, b.name))  # fmt: skip
        lrm = leader.replica_manager if reachable else None  # type: ignore[union-attr]
        now = self.loop.now_ms
        for tp, st in f.session.states.items():
            key = (b.node_id, b.process.generation, tp)
            if st.state != FETCHING:
                self._streaks.pop(key, None)
                continue
            log = st.log
            offset = log.log_end_offset
            last = log.latest_epoch if self._uses_last_fetched_epoch else None
            sig = (st.leader_epoch, offset, last)
            lp = lrm.partitions.get(tp) if lrm is not None else None
            possible = (lp is not None and lp.role == "leader"
                        and lp.leader_epoch == st.leader_epoch
                        and (lp.log.log_end_offset != offset
                             or _diverges(lp, last, offset)))  # fmt: skip
            s = self._streaks.get(key)
            if not possible:
                self._streaks.pop(key, None)
            elif s is None or s[0] != sig:
                self._streaks[key] = [sig, 1, now]
            else:
                s[1] += 1
                if s[1] > self.livelock_fetches:
                    assert lp is not None and leader is not None
                    self._violate(FETCH_LIVELOCK, tp, ("livelock", key, sig),
                                  f"{b.name} fetched offset {offset} (LastFetchedEpoch "
                                  f"{_epoch_text(last)}, leader epoch {st.leader_epoch}) from "
                                  f"{leader.name} {s[1]} times in a row since {s[2]} ms without "
                                  f"progress, the leader reachable",
                                  f"{self._replica_text(b, tp)}; "
                                  f"{self._leader_text(leader, lp)}")  # fmt: skip

    # the controller: no fenced broker in an ISR; its leaders claim their epochs too

    def _check_image(self, name: str, image: MetadataImage) -> None:
        brokers = image.brokers
        for t, idx, reg in image.all_partitions():
            tp = (t.name, idx)
            if reg.leader >= 0:
                self._claim_epoch(tp, reg.leader_epoch, reg.leader,
                                  f"{name}'s committed image, offset {image.offset}")
            for r in reg.isr:
                b = brokers.get(r)
                if b is not None and not b.fenced:
                    continue
                if not self._elr and reg.isr == (r,):
                    continue  # KIP-841 without ELR: the last member stays
                what = "not registered" if b is None else "fenced"
                self._violate(FENCED_IN_ISR, tp, ("fenced", tp, r, reg.partition_epoch),
                              f"{name}'s committed ISR {list(reg.isr)} names broker-{r}, "
                              f"which is {what}",
                              f"{name} image offset {image.offset}: {tp[0]}-{tp[1]} leader "
                              f"{reg.leader} epoch {reg.leader_epoch} partition epoch "
                              f"{reg.partition_epoch} isr {list(reg.isr)} elr {list(reg.elr)}; "
                              f"brokers {_brokers_text(image)}")  # fmt: skip

    def _forget_suspects(self) -> None:
        """A power-loss replica is held to isr-holds-hw again once nothing lists it in an ISR,
        or once a controller's committed ISR lists it while knowing its new incarnation (a
        registration after the loss): then it was admitted (or kept) knowingly."""
        listed: set[tuple[TopicPartition, int]] = set()
        admitted: set[tuple[TopicPartition, int]] = set()
        for b in self._brokers:
            rm = b.replica_manager
            if rm is None:
                continue
            for tp, p in rm.partitions.items():
                if p.role == "leader":
                    listed.update((tp, m) for m in p.maximal_isr | p.isr)
        loss_epoch = self._loss_epoch
        registered_again: set[int] = set()
        for image in self._live_images():
            brokers = image.brokers
            registered_again.update(b for b, reg in brokers.items()
                                    if b in loss_epoch and reg.epoch > loss_epoch[b])
            for t, idx, reg in image.all_partitions():
                for m in reg.isr:
                    listed.add(((t.name, idx), m))
                    b = brokers.get(m)
                    if b is not None and b.epoch > loss_epoch.get(m, -1):
                        admitted.add(((t.name, idx), m))
        # Until it registered again the controller cannot know of the loss: an ISR expansion
        # the leader sent on a fetch from before the loss may still commit it (seed 1001421
        # of random-targeted: out of every ISR at its power loss, added back 0.4 s later while
        # dead, on its pre-loss fetch), so leaving every ISR does not clear it before that.
        self._suspects = {s for s in self._suspects
                          if s[1] not in registered_again or (s in listed and s not in admitted)}

    def _live_images(self) -> Iterable[MetadataImage]:
        for name, c in self.cluster.controllers.items():
            if c.process.up and name in self._images:
                yield self._images[name]

    # --- recording and reporting ------------------------------------------------------------

    def _violate(self, invariant: str, tp: TopicPartition, key: tuple[Any, ...], message: str,
                 state: str) -> None:  # fmt: skip
        key = (invariant, *key)
        if key in self._seen:
            return
        self._seen.add(key)
        self.violations.append(Violation(
            invariant, f"{tp[0]}-{tp[1]}", describe_event(self._fn), self.loop.events_run,
            self.loop.now_ms, message, state, self.enforced[invariant]))  # fmt: skip

    def result(self) -> dict[str, Any]:
        """The run check `invariant-violations`: count, by_partition and up to max_examples
        examples of the enforced violations; by_invariant; and the same for the tolerated
        ones (not promised by the configured switches)."""
        out = self._summary([v for v in self.violations if v.enforced])
        out["tolerated"] = self._summary([v for v in self.violations if not v.enforced])
        out["not_enforced"] = {k: why for k, why in self.why_not.items() if why is not None}
        return out

    def _summary(self, violations: list[Violation]) -> dict[str, Any]:
        by_partition: dict[str, int] = {}
        by_invariant: dict[str, int] = {}
        for v in violations:
            by_partition[v.partition] = by_partition.get(v.partition, 0) + 1
            by_invariant[v.invariant] = by_invariant.get(v.invariant, 0) + 1
        return {"count": len(violations), "by_partition": by_partition,
                "by_invariant": by_invariant,
                "examples": [v.text() for v in violations[: self.max_examples]]}  # fmt: skip

    # --- state texts ------------------------------------------------------------------------

    def _leader_text(self, b: SimBroker, p: Partition) -> str:
        return (f"{b.name} {p.role} of {p.name} epoch {p.leader_epoch} partition epoch "
                f"{p.partition_epoch} hw {p.log.high_watermark} leo {p.log.log_end_offset} isr "
                f"{sorted(p.isr)} maximal {sorted(p.maximal_isr)} "
                f"({type(p.partition_state).__name__}) epochs {_epochs_text(p.log)}")

    def _replica_text(self, b: SimBroker, tp: TopicPartition) -> str:
        rm = b.replica_manager
        p = rm.partitions.get(tp) if rm is not None else None
        if p is None:
            log = b.store.get_log(tp) if rm is not None else None
            if log is None:
                return f"{b.name}: no replica of {tp[0]}-{tp[1]} (up={b.up})"
            return (f"{b.name} (no partition state yet) leo {log.log_end_offset} hw "
                    f"{log.high_watermark} epochs {_epochs_text(log)}")
        fetch = ""
        for f in b.fetchers.values():
            st = f.session.states.get(tp)
            if st is not None:
                fetch = f" fetcher {st.state} from broker-{f.leader_id} (its round {f.rounds})"
        return (f"{b.name} {p.role} of {p.name} (leader {p.leader_id}) epoch {p.leader_epoch} "
                f"hw {p.log.high_watermark} leo {p.log.log_end_offset} log start "
                f"{p.log.log_start_offset} epochs {_epochs_text(p.log)}{fetch}")

    def _leaders_text(self, tp: TopicPartition) -> str:
        out = []
        for b in self._brokers:
            rm = b.replica_manager
            p = rm.partitions.get(tp) if rm is not None else None
            if p is not None:
                out.append(f"{b.name} {p.role} of {p.name} epoch {p.leader_epoch} hw "
                           f"{p.log.high_watermark} leo {p.log.log_end_offset}")
        for name, image in self._images.items():
            reg = image.partition(*tp)
            if reg is not None:
                out.append(f"{name} image: leader {reg.leader} epoch {reg.leader_epoch}")
        return "; ".join(out)


# --- helpers ---------------------------------------------------------------------------------


def _batch_keys(log: Any, lo: int, hi: int) -> list[BatchKey]:
    """The batches of `log` holding offsets in [lo, hi)."""
    return [(bp.base_offset, bp.last_offset, bp.leader_epoch, bp.crc)
            for bp in log.positions(lo, hi)]


def _diverges(leader: Partition, last_fetched_epoch: int | None, fetch_offset: int) -> bool:
    """Would the leader answer this fetch with DivergingEpoch (Partition.read_for_fetch)?"""
    if last_fetched_epoch is None:
        return False
    epoch, end = leader.log.end_offset_for_epoch(last_fetched_epoch)
    return epoch < last_fetched_epoch or end < fetch_offset


def _key_text(key: BatchKey | None) -> str:
    if key is None:
        return "nothing"
    return f"[{key[0]}..{key[1]}] epoch {key[2]} crc {key[3]:#x}"


def _epoch_text(epoch: int | None) -> str:
    return "none" if epoch is None else str(epoch)


def _epochs_text(log: Any) -> str:
    return "[" + ", ".join(f"{e.epoch}@{e.start_offset}" for e in log.epoch_entries) + "]"


def _brokers_text(image: MetadataImage) -> str:
    return ", ".join(f"{b.id}:{'fenced' if b.fenced else 'live'} epoch {b.epoch}"
                     for b in sorted(image.brokers.values(), key=lambda b: b.id))  # fmt: skip


def describe_event(fn: Callable[..., Any] | str | None) -> str:
    """A short text for an event's callback: which process ran what (a message delivered, a
    response back, a timer), for a violation to name its event; a str is its own text."""
    if isinstance(fn, str):
        return fn
    try:
        return _describe(fn, ())
    except Exception:  # never let a description hide the violation itself
        return repr(fn)[:120]


def _describe(fn: Any, args: tuple[Any, ...]) -> str:
    from .events import Process
    from .network import _Call

    if fn is None:
        return "no event (checked outside the event loop)"
    if isinstance(fn, partial):
        return _describe(fn.func, tuple(fn.args) + tuple(args))
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", type(fn).__name__)
    if isinstance(owner, Process) and name == "_run_guarded" and len(args) >= 2:
        inner_args = args[2] if len(args) > 2 else ()
        return f"{owner.name}: {_describe(args[1], tuple(inner_args))}"
    if isinstance(owner, SimFuture):
        owner = owner.waiter
    if isinstance(owner, SimTask):
        return f"{owner.process.name}: {owner.coro.__qualname__} resumes"
    if isinstance(owner, _Call):
        what = _message_name(owner.message)
        if name == "_arrive":
            return f"{what} {owner.src} -> {owner.dst} arrives"
        if name == "_handle":
            return f"{owner.dst} handles {what} from {owner.src}"
        if name == "_arrive_back":
            inner = args[0] if args else None
            kind = getattr(getattr(inner, "func", None), "__name__", "")
            if kind == "_replied":
                return f"response to {what} {owner.dst} -> {owner.src} arrives"
            return f"refusal of {what} {owner.dst} -> {owner.src} arrives"
        if name == "_finish_reply":
            return f"{owner.src} applies the response to {what} from {owner.dst}"
        if name in ("_finish_error", "_timed_out"):
            reason = args[0] if args else ""
            return f"{what} {owner.src} -> {owner.dst} fails ({reason})"
        return f"{what} {owner.src} -> {owner.dst}: {name}"
    qual = getattr(fn, "__qualname__", name)
    if qual.endswith(("every.<locals>.tick", "guard.<locals>.run")):
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False))
        inner = _describe(cells["fn"].cell_contents, ()) if "fn" in cells else qual
        if "interval_ms" in cells:
            return f"every {cells['interval_ms'].cell_contents} ms: {inner}"
        proc = cells["self"].cell_contents if "self" in cells else None
        return f"{proc.name}: {inner}" if isinstance(proc, Process) else inner
    if owner is not None:
        label = getattr(owner, "name", None)
        if isinstance(owner, ReplicaFetcherThread):
            label = f"broker-{owner.node_id} fetcher from broker-{owner.leader_id}"
        return f"{qual}" + (f" ({label})" if label else "")
    return qual


def _message_name(message: Any) -> str:
    body = getattr(message, "body", None)
    if body is not None and type(message).__name__ == "Envelope":
        return f"Raft {type(body).__name__}"
    return type(message).__name__
