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
- A cut link (partition, isolate) drops messages, checked when sent and when they would
  arrive (a cut made while a message is in flight loses it): the connection stays open and
  the caller waits for its `timeout_ms`, as behind harness/net.py's Toxiproxy `timeout`
  toxic. Healing the link closes the connections it held (Toxiproxy does), so a call whose
  message was lost on it fails at once ("connection closed"). A message to a process that
  is down fails fast, one round trip later (connection refused); a process that dies fails
  every call it had received and not answered (`reset_node`: the kernel resets its
  connections); to a paused process a message waits until resume (the kernel buffers it).
  Callbacks run only in the caller's live incarnation.
- `drop_probability` per link loses single messages at random (not a plan action; tests).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .events import EventLoop, Process, Timer

Handler = Callable[[str, Any, Callable[[Any], None]], None]  # (src, message, reply)


@dataclass
class _Call:
    src: str
    dst: str
    fail: Callable[[str], None]
    lost: bool = False  # a message of this call was dropped by a cut
    received: bool = False  # the handler has it and has not answered yet


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

    def uncut(self, a: str, b: str) -> None:
        for k in ((a, b), (b, a)):
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
        caller = self.processes[src]
        done = [False]
        self._seq += 1
        call_id = self._seq
        timeout: list[Timer] = []

        def finish(fn: Callable[[Any], None] | None, value: Any) -> None:
            if not done[0]:
                done[0] = True
                self._calls.pop(call_id, None)
                if timeout:
                    timeout[0].cancel()  # answered: the timeout event is skipped, not run
                if fn is not None:
                    fn(value)

        def finish_error(reason: str) -> None:
            finish(on_error, reason)

        def finish_reply(response: Any) -> None:
            finish(on_reply, response)

        guarded_reply = caller.guard(finish_reply)
        guarded_error = caller.guard(finish_error)
        call = _Call(src, dst, guarded_error)
        if on_reply is not None or on_error is not None:
            self._calls[call_id] = call
            timeout.append(caller.call_later(
                timeout_ms, lambda: finish_error(f"timeout after {timeout_ms} ms")))
        at = self._arrival(src, dst)
        if at is None:
            call.lost = True
            return

        def back(fn: Callable[[], None]) -> None:
            call.received = False
            at_back = self._arrival(dst, src)
            if at_back is None:
                call.lost = True
                return

            def arrive_back() -> None:
                if self.is_cut(dst, src):
                    call.lost = True
                else:
                    fn()

            self.loop.call_at(at_back, arrive_back)

        def reply(response: Any) -> None:
            back(lambda: guarded_reply(response))

        def arrive() -> None:
            if self.is_cut(src, dst):
                call.lost = True
                return
            target = self.processes.get(dst)
            if target is None or not target.up:
                back(lambda: guarded_error(f"connection to {dst} refused"))
                return
            handler = self.handlers[dst]

            def handle() -> None:
                call.received = True
                handler(src, message, reply)

            target.guard(handle)()

        self.loop.call_at(at, arrive)
