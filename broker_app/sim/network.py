"""Network: simulated request/response links between processes, with faults.

Contract:
- Nodes are `harness`-style names ("broker-1", "controller-1", "client"); each has a
  Process (the client side has a never-dying one). `rpc(src, dst, message, on_reply,
  on_error, timeout_ms)` carries `message` (a kio entity or a small object, never encoded)
  to `dst`'s handler, which answers through the `reply` it is given, zero or one time.
- Every directed link (src, dst) has a delay drawn from `base_delay_ms` plus the link's
  `latency` fault (ms +- jitter), FIFO: a message never overtakes an earlier one on the same
  directed link (one TCP stream per link; Kafka clients do keep several connections, whose
  relative reordering is not modelled).
- A cut link (partition, isolate; one direction: blackhole) drops messages, checked when
  sent and when they would arrive (a cut made while a message is in flight loses it): the
  connection stays open and the caller waits for its `timeout_ms`, as behind
  harness/net.py's Toxiproxy `timeout` toxic. Healing the link closes the connections it
  held (Toxiproxy does), so a call whose message was lost on it fails at once ("connection
  closed"). A message to a process that is down fails fast, one round trip later (connection
  refused); a process that dies fails every call it had received and not answered
  (`reset_node`: the kernel resets its connections); to a paused process a message waits
  until resume (the kernel buffers it). Callbacks run only in the caller's live incarnation.
- `drop_probability` per link loses single messages at random (not a plan action; tests).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from .events import EventLoop, Process, Timer

Handler = Callable[[str, Any, Callable[[Any], None]], None]  # (src, message, reply)


class _Call:
    """One rpc in flight: its callbacks run in the caller's incarnation (`gen`), as
    Process.guard would run them (dropped if the caller died, queued while it is paused).
    A class with bound methods rather than a nest of closures: this runs for every message."""

    __slots__ = ("net", "src", "dst", "message", "on_reply", "on_error", "caller", "gen",
                 "call_id", "done", "timeout", "lost", "received")

    def __init__(self, net: Network, src: str, dst: str, message: Any,
                 on_reply: Callable[[Any], None] | None,
                 on_error: Callable[[str], None] | None, caller: Process,
                 call_id: int) -> None:  # fmt: skip
        self.net = net
        self.src = src
        self.dst = dst
        self.message = message
        self.on_reply = on_reply
        self.on_error = on_error
        self.caller = caller
        self.gen = caller.generation
        self.call_id = call_id
        self.done = False
        self.timeout: Timer | None = None
        self.lost = False  # a message of this call was dropped by a cut
        self.received = False  # the handler has it and has not answered yet

    # -- the caller's side (in its incarnation) ----------------------------------------------

    def _finish(self, fn: Callable[[Any], None] | None, value: Any) -> None:
        if not self.done:
            self.done = True
            self.net._calls.pop(self.call_id, None)
            if self.timeout is not None:
                self.timeout.cancel()  # answered: the timeout event is skipped, not run
            if fn is not None:
                fn(value)

    def _finish_error(self, reason: str) -> None:
        self._finish(self.on_error, reason)

    def _finish_reply(self, response: Any) -> None:
        self._finish(self.on_reply, response)

    def fail(self, reason: str) -> None:
        """The call fails with `reason` (in the caller's incarnation, as a guarded callback)."""
        self.caller._run_guarded(self.gen, self._finish_error, (reason,))

    def _timed_out(self, timeout_ms: int) -> None:
        self.fail(f"timeout after {timeout_ms} ms")

    # -- the wire ------------------------------------------------------------------------------

    def _arrive(self) -> None:
        net = self.net
        if net.is_cut(self.src, self.dst):
            self.lost = True
            return
        target = net.processes.get(self.dst)
        if target is None or not target.up:
            self._back(partial(self._refused, f"connection to {self.dst} refused"))
            return
        target._run_guarded(target.generation, self._handle, ())

    def _handle(self) -> None:
        self.received = True
        self.net.handlers[self.dst](self.src, self.message, self.reply)

    def reply(self, response: Any) -> None:
        """The handler's answer: carried back to the caller."""
        self._back(partial(self._replied, response))

    def _back(self, deliver: Callable[[], None]) -> None:
        self.received = False
        at_back = self.net._arrival(self.dst, self.src)
        if at_back is None:
            self.lost = True
            return
        self.net.loop.call_at(at_back, partial(self._arrive_back, deliver))

    def _arrive_back(self, deliver: Callable[[], None]) -> None:
        if self.net.is_cut(self.dst, self.src):
            self.lost = True
        else:
            deliver()

    def _replied(self, response: Any) -> None:
        self.caller._run_guarded(self.gen, self._finish_reply, (response,))

    def _refused(self, reason: str) -> None:
        self.caller._run_guarded(self.gen, self._finish_error, (reason,))


@dataclass
class LinkFault:
    cut: bool = False
    latency_ms: int = 0
    jitter_ms: int = 0
    drop_probability: float = 0.0


class Network:
    def __init__(self, loop: EventLoop, base_delay_ms: tuple[int, int] = (1, 3)) -> None:
        self.loop = loop
        self.base_delay_ms = base_delay_ms
        self.processes: dict[str, Process] = {}
        self.handlers: dict[str, Handler] = {}
        self.faults: dict[tuple[str, str], LinkFault] = {}
        self._last_arrival: dict[tuple[str, str], int] = {}
        self._calls: dict[int, _Call] = {}  # calls not yet answered or failed
        self.messages = 0
        self._seq = 0

    def add_node(self, name: str, process: Process, handler: Handler | None = None) -> None:
        self.processes[name] = process
        if handler is not None:
            self.handlers[name] = handler

    # --- faults ----------------------------------------------------------------------------

    def fault(self, src: str, dst: str) -> LinkFault:
        f = self.faults.get((src, dst))
        if f is None:
            f = self.faults[(src, dst)] = LinkFault()
        return f

    def cut(self, a: str, b: str, both: bool = True) -> None:
        self.fault(a, b).cut = True
        if both:
            self.fault(b, a).cut = True

    def heal(self) -> None:
        self.faults.clear()
        self._close_lost(lambda c: True)

    def uncut(self, a: str, b: str, both: bool = True) -> None:
        for k in ((a, b), (b, a)) if both else ((a, b),):
            f = self.faults.get(k)
            if f is not None:
                f.cut = False
        self._close_lost(lambda c: {c.src, c.dst} == {a, b})

    def _close_lost(self, on_link: Callable[[_Call], bool]) -> None:
        """Healing closes the connections a cut held: their calls fail now."""
        for call in [c for c in self._calls.values() if c.lost and on_link(c)]:
            call.fail("connection closed by the heal")

    def reset_node(self, name: str) -> None:
        """`name` died: every call it had received and not answered fails (reset)."""
        for call in [c for c in self._calls.values() if c.dst == name and c.received]:
            at = self._arrival(call.dst, call.src)
            if at is not None:
                self.loop.call_at(at, lambda call=call: call.fail(f"connection to {name} reset"))

    def new_streams(self, name: str) -> None:
        """`name` (re)started: it talks over new connections, not queued behind what a latency
        fault held on its old ones or on refused connects while it was down (Toxiproxy: a new
        connection has only the toxics the link has now). Only such a queue reaches past the
        base delay, so without latency faults nothing changes."""
        horizon = self.loop.now_ms + self.base_delay_ms[1]
        for key in [k for k, at in self._last_arrival.items() if name in k and at > horizon]:
            del self._last_arrival[key]

    def is_cut(self, src: str, dst: str) -> bool:
        f = self.faults.get((src, dst))
        return f is not None and f.cut

    # --- delivery --------------------------------------------------------------------------

    def _arrival(self, src: str, dst: str) -> int | None:
        """When a message sent now on src->dst arrives (FIFO), or None if it is lost."""
        f = self.faults.get((src, dst))
        rng = self.loop.rng
        lo, hi = self.base_delay_ms
        # _randbelow is what randint(lo, hi) draws from (the same stream), without its
        # argument checks: this runs for every message.
        delay = lo if lo == hi else lo + rng._randbelow(hi - lo + 1)
        if f is not None:
            if f.cut or (f.drop_probability and rng.random() < f.drop_probability):
                return None
            if f.latency_ms or f.jitter_ms:
                delay += max(0, f.latency_ms + rng.randint(-f.jitter_ms, f.jitter_ms))
        key = (src, dst)
        at = max(self.loop.now_ms + delay, self._last_arrival.get(key, 0))
        self._last_arrival[key] = at
        return at

    def rpc(
        self,
        src: str,
        dst: str,
        message: Any,
        on_reply: Callable[[Any], None] | None,
        on_error: Callable[[str], None] | None,
        timeout_ms: int,
    ) -> None:
        """Send `message`; exactly one of on_reply / on_error runs (in src's incarnation),
        unless src died. on_reply None: fire and forget (acks=0)."""
        self.messages += 1
        self._seq += 1
        call = _Call(self, src, dst, message, on_reply, on_error, self.processes[src],
                     self._seq)  # fmt: skip
        if on_reply is not None or on_error is not None:
            self._calls[call.call_id] = call
            loop = self.loop
            call.timeout = loop.call_at(loop.now_ms + max(0, int(timeout_ms)),
                                        partial(call.caller._run_guarded, call.gen,
                                                call._timed_out, (timeout_ms,)))  # fmt: skip
        at = self._arrival(src, dst)
        if at is None:
            call.lost = True
            return
        self.loop.call_at(at, call._arrive)
