"""StatePoller: the run's eyes on the cluster, a thread polling every admin `GET /state`.

Contract:
- `StatePoller(endpoints, cluster_spec, states=None, ...)`: `endpoints()` returns
  {"broker-<id>" | "controller-<id>": "127.0.0.1:<port>"} (a lone "controller" counts as
  controller 1; called on every poll, so a restarted
  container's new published port is picked up). Every `interval_s` the thread asks each of them,
  concurrently, with a bounded `timeout_s`; a node that does not answer (down, paused, cut off
  from the host) is simply absent from that poll.
- Each poll becomes a `harness.plan.state.ClusterState` (`latest()`): leader, epoch, replicas
  and ISR from a controller's committed metadata image (the active controller's, else the most
  advanced answering one's), else from the answering broker with the highest leader epoch
  (partition epoch) for that partition; per replica what its own broker says (role, LEO, HW,
  epoch); `alive` = brokers that answered; `quorum` = each answering controller's Raft view
  (its /state "quorum") and `controller` the active one (state.active_controller).
  `elapsed_s` comes from `elapsed()` (the run's clock: seconds since the workload started).
- With `states` (a StatesWriter), every answering broker's replicas are appended to
  states.jsonl per poll (the report's HW/LEO timelines); with `quorum` (a QuorumWriter),
  every answering controller's quorum view to quorum.jsonl (the controller epoch timeline).
- `poll_once()` does one poll synchronously (also what the thread calls); `start()`/`stop()`
  run and end the thread (stop is bounded).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harness.cluster.topology import controller_index
from harness.plan.model import ClusterSpec
from harness.plan.state import (
    ClusterState,
    ControllerState,
    PartitionState,
    ReplicaState,
    active_controller,
)
from harness.store.quorum import QuorumWriter
from harness.store.states import ROLES, StatesWriter

log = logging.getLogger(__name__)

CONTROLLER = "controller"


def fetch_state(address: str, timeout_s: float) -> dict[str, Any] | None:
    """GET http://<address>/state as JSON, or None when the node does not answer in time."""
    try:
        with urllib.request.urlopen(f"http://{address}/state", timeout=timeout_s) as resp:
            data = json.loads(resp.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None
    return data if isinstance(data, dict) else None


def _broker_id(node: str) -> int | None:
    prefix, _, n = node.partition("-")
    return int(n) if prefix == "broker" and n.isdigit() else None


def controller_id(node: str) -> int | None:
    """The controller id a node name stands for: controller-<id>, or 1 for a lone
    "controller"; None for anything else."""
    if node == CONTROLLER:
        return 1
    prefix, _, n = node.partition("-")
    return int(n) if prefix == CONTROLLER and n.isdigit() else None


def _index(node_id: int) -> int:
    """A KRaft controller node id as the plan numbers controllers (topology.controller_index:
    node 3000 + c is controller c); an id outside that plan stays as it is."""
    c = controller_index(node_id)
    return node_id if c is None else c


def quorum_view(cid: int, st: Mapping[str, Any]) -> ControllerState | None:
    """Controller `cid`'s /state "quorum" as a ControllerState (leader and voters numbered as
    the plan numbers controllers); None without one or when it is malformed."""
    q = st.get("quorum")
    if not isinstance(q, dict):
        return None
    try:
        leader, hw = q.get("leader_id"), q.get("high_watermark")
        return ControllerState(
            id=cid, epoch=int(q["epoch"]),
            leader=_index(leader) if isinstance(leader, int) and leader >= 0 else None,
            active=bool(q.get("active")), committed=int(q.get("committed_offset", 0)),
            hw=int(hw) if isinstance(hw, int) else None, leo=int(q.get("log_end_offset", 0)),
            voters=tuple(_index(int(v)) for v in q.get("voters") or ()),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _metadata_offset(st: Mapping[str, Any]) -> int:
    v = st.get("metadata_offset")
    return v if isinstance(v, int) else -1


def _workload_partitions(st: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A broker's partitions minus internal topics (`__consumer_offsets`, which the group
    coordinator creates as soon as a consumer with a group.id asks for its coordinator): plans,
    conditions and reports are about the workload's topics."""
    return [p for p in st.get("partitions") or []
            if isinstance(p, dict) and not str(p.get("topic", "")).startswith("__")]


def build_state(
    spec: ClusterSpec, answers: Mapping[str, dict[str, Any]], elapsed_s: float = 0.0
) -> ClusterState:
    """A ClusterState from the /state answers of the nodes that answered (pure)."""
    brokers = {b: answers[f"broker-{b}"] for b in spec.broker_ids() if f"broker-{b}" in answers}
    replicas: dict[str, dict[int, ReplicaState]] = {}
    best_view: dict[str, tuple[tuple[int, int], dict[str, Any]]] = {}
    for b, st in brokers.items():
        for p in _workload_partitions(st):
            try:
                name = f"{p['topic']}-{int(p['partition'])}"
                role = p.get("role") if p.get("role") in ROLES else "none"
                epoch = int(p.get("leader_epoch", -1))
                replicas.setdefault(name, {})[b] = ReplicaState(
                    b, role, int(p.get("leo", 0)), int(p.get("hw", 0)), epoch,
                    int(p.get("hw_checkpoint", -1)),
                )
            except (KeyError, TypeError, ValueError):
                continue  # a malformed entry is one broker's problem, not the run's
            rank = (epoch, int(p.get("partition_epoch", -1)))
            if name not in best_view or rank > best_view[name][0]:
                best_view[name] = (rank, p)
    controllers = {c: st for n, st in answers.items() if (c := controller_id(n)) is not None}
    quorum = {c: v for c, st in controllers.items() if (v := quorum_view(c, st)) is not None}
    known = active_controller(quorum)
    if quorum:
        active = known[0] if known else None
    else:
        active = min(controllers) if controllers else None
    # Every controller's image is its committed one: the active controller's is the newest.
    source = controllers.get(active) if active is not None else None
    if source is None and controllers:
        source = max(controllers.values(), key=_metadata_offset)
    controller_topics = ((source or {}).get("image") or {}).get("topics") or {}
    partitions: dict[str, PartitionState] = {}
    for topic in spec.topics:
        for i in range(topic.partitions):
            name = f"{topic.name}-{i}"
            view = (controller_topics.get(topic.name) or {}).get("partitions", {}).get(str(i))
            if view is None and name in best_view:
                view = best_view[name][1]
            if view is None:
                partitions[name] = PartitionState(topic.name, i, None, -1, (), (),
                                                  replicas.get(name, {}))
                continue
            leader = view.get("leader")
            partitions[name] = PartitionState(
                topic.name, i,
                leader if isinstance(leader, int) and leader >= 0 else None,
                int(view.get("leader_epoch", -1)),
                tuple(view.get("replicas") or ()),
                tuple(view.get("isr") or ()),
                replicas.get(name, {}),
                tuple(view.get("elr") or ()),
            )
    return ClusterState(
        brokers=spec.broker_ids(),
        alive=frozenset(brokers),
        partitions=partitions,
        controllers=spec.controller_ids(),
        controller=active,
        elapsed_s=elapsed_s,
        quorum=quorum,
        internal=_internal_partitions(brokers, controller_topics),
    )


def _internal_partitions(brokers: Mapping[int, dict[str, Any]],
                         controller_topics: Mapping[str, Any]) -> dict[str, PartitionState]:
    """Leader, replicas and ISR of the internal topics' partitions (`__consumer_offsets`):
    the controller's image when it answered, else the answering broker with the highest
    leader epoch. Only what group targets need (no per-replica LEO/HW)."""
    views: dict[tuple[str, int], dict[str, Any]] = {}
    for topic, t in controller_topics.items():
        if str(topic).startswith("__") and isinstance(t, dict):
            for i, view in (t.get("partitions") or {}).items():
                if str(i).isdigit() and isinstance(view, dict):
                    views[(str(topic), int(i))] = view
    seen: dict[tuple[str, int], tuple[int, dict[str, Any]]] = {}
    for st in brokers.values():
        for p in st.get("partitions") or []:
            if not (isinstance(p, dict) and str(p.get("topic", "")).startswith("__")):
                continue
            try:
                key, epoch = (str(p["topic"]), int(p["partition"])), int(p.get("leader_epoch", -1))
            except (KeyError, TypeError, ValueError):
                continue
            if key not in seen or epoch > seen[key][0]:
                seen[key] = (epoch, p)
    for key, (_, p) in seen.items():
        views.setdefault(key, p)
    out: dict[str, PartitionState] = {}
    for (topic, i), view in views.items():
        leader = view.get("leader")
        try:
            out[f"{topic}-{i}"] = PartitionState(
                topic, i, leader if isinstance(leader, int) and leader >= 0 else None,
                int(view.get("leader_epoch", -1)), tuple(view.get("replicas") or ()),
                tuple(view.get("isr") or ()))
        except (TypeError, ValueError):
            continue
    return out


class StatePoller:
    def __init__(
        self,
        endpoints: Callable[[], Mapping[str, str]],
        spec: ClusterSpec,
        states: StatesWriter | None = None,
        elapsed: Callable[[], float] = lambda: 0.0,
        interval_s: float = 0.2,
        timeout_s: float = 0.5,
        quorum: QuorumWriter | None = None,
    ) -> None:
        self.endpoints = endpoints
        self.quorum = quorum
        self.spec = spec
        self.states = states
        self.elapsed = elapsed
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.polls = 0
        self._latest: ClusterState | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="state-poll")

    def latest(self) -> ClusterState | None:
        with self._lock:
            return self._latest

    def poll_once(self) -> ClusterState:
        try:
            endpoints = dict(self.endpoints())
        except Exception as exc:  # docker hiccup: this poll sees nobody
            log.debug("endpoints unavailable: %s", exc)
            endpoints = {}
        futures = {n: self._pool.submit(fetch_state, a, self.timeout_s)
                   for n, a in endpoints.items()}
        answers = {}
        for node, fut in futures.items():
            data = fut.result()
            if data is not None:
                answers[node] = data
        state = build_state(self.spec, answers, self.elapsed())
        if self.states is not None:
            self._write_samples(answers)
        if self.quorum is not None:
            self._write_quorum(state)
        with self._lock:
            self._latest = state
            self.polls += 1
        return state

    def _write_samples(self, answers: Mapping[str, dict[str, Any]]) -> None:
        assert self.states is not None
        for node, st in answers.items():
            b = _broker_id(node)
            if b is None:
                continue
            lag = (st.get("event_loop_lag_ms") or {}).get("current")
            lag = lag if isinstance(lag, int) and lag >= 0 else None
            for p in _workload_partitions(st):
                try:
                    leader = p.get("leader")
                    self.states.write(
                        b, str(p["topic"]), int(p["partition"]),
                        p.get("role") if p.get("role") in ROLES else "none",
                        leader if isinstance(leader, int) and leader >= 0 else None,
                        int(p.get("leader_epoch", -1)), int(p.get("hw", 0)),
                        int(p.get("leo", 0)), [int(x) for x in p.get("isr") or ()],
                        loop_lag_ms=lag,
                        elr=[int(x) for x in p.get("elr") or ()],
                    )
                except (KeyError, TypeError, ValueError):
                    continue
                except OSError as exc:  # the writer closed under us at shutdown
                    log.debug("states writer: %s", exc)
                    return

    def _write_quorum(self, state: ClusterState) -> None:
        assert self.quorum is not None
        for c in state.quorum.values():
            try:
                self.quorum.write(c.id, c.epoch, c.leader, c.active, c.hw, c.committed,
                                  leo=c.leo)
            except (OSError, ValueError) as exc:  # the writer closed under us at shutdown
                log.debug("quorum writer: %s", exc)
                return

    def _loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.poll_once()
            except Exception:  # the poller must outlive any one bad poll
                log.exception("state poll failed")
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - started)))

    def start(self) -> StatePoller:
        self._thread = threading.Thread(target=self._loop, name="state-poller", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Stop the thread (bounded); True when it ended."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._pool.shutdown(wait=False, cancel_futures=True)
        return self._thread is None or not self._thread.is_alive()

    def wait_for(self, pred: Callable[[ClusterState], bool], timeout_s: float,
                 stop: threading.Event | None = None) -> ClusterState | None:
        """The first fresh state satisfying pred within timeout_s, else None."""
        deadline = time.monotonic() + timeout_s
        seen = -1
        while time.monotonic() < deadline and not (stop is not None and stop.is_set()):
            with self._lock:
                state, polls = self._latest, self.polls
            if state is not None and polls != seen and pred(state):
                return state
            seen = polls
            time.sleep(min(self.interval_s, 0.2))
        return None


def settled(state: ClusterState) -> bool:
    """Every partition has a live leader and its ISR is every replica."""
    for p in state.partitions.values():
        if p.leader is None or p.leader not in state.alive or not p.replicas:
            return False
        if set(p.isr) != set(p.replicas):
            return False
    return True
