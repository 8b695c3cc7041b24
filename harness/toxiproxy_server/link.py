"""A Link: one direction of one proxied connection, as a live-editable chain of toxic stages.

Contract (sans-I/O, like Toxiproxy's ToxicLink): the pump `push`es bytes read from the source and
`push_eof`s when the source ends; `advance(now)` returns the items due at the destination (Chunk,
EOF or RESET), and `next_deadline()` tells the pump when to call again. `add_toxic`,
`update_toxic` and `remove_toxic` edit the chain of a live link, as Toxiproxy re-links its stubs:
a toxic added later applies to data still travelling through earlier stages, and a removed toxic
hands whatever it held to the next stage at once (Toxiproxy flushes it, skipping the delay).
Removing a `timeout` toxic closes the link (see toxics.py). After the first EOF or RESET reaches
the end, the link is finished and drops everything.
"""

from __future__ import annotations

import random

from harness.toxiproxy_server.model import ToxicSpec
from harness.toxiproxy_server.toxics import EOF, RESET, Chunk, Item, Stage, make_stage


class Link:
    def __init__(self, specs: list[ToxicSpec], now: float, rng: random.Random) -> None:
        self._rng = rng
        self._names: list[str] = []
        self._stages: list[Stage] = []
        self._ready: list[Item] = []
        self.finished = False
        for spec in specs:
            self.add_toxic(spec, now)

    @property
    def passthrough(self) -> bool:
        """No toxic and nothing in flight: the pump may copy bytes straight through."""
        return not self._stages and not self._ready and not self.finished

    def backlogged(self) -> bool:
        return any(s.held_bytes >= s.max_backlog for s in self._stages)

    # -- data -------------------------------------------------------------------------------
    def push(self, data: bytes, now: float) -> None:
        self._feed(0, [Chunk(data, now)], now)

    def push_eof(self, now: float) -> None:
        self._feed(0, [EOF], now)

    def advance(self, now: float) -> list[Item]:
        for i, stage in enumerate(self._stages):
            ready = stage.pop_ready(now)
            if ready:
                self._feed(i + 1, ready, now)
        out, self._ready = self._ready, []
        return out

    def next_deadline(self) -> float | None:
        deadlines = [d for s in self._stages if (d := s.next_deadline()) is not None]
        return min(deadlines) if deadlines else None

    def _feed(self, index: int, items: list[Item], now: float) -> None:
        if self.finished:
            return
        if index < len(self._stages):
            stage = self._stages[index]
            for item in items:
                stage.push(item, now)
            return
        for item in items:
            self._ready.append(item)
            if item is EOF or item is RESET:
                self.finished = True
                self._stages.clear()
                self._names.clear()
                return

    # -- live chain edits -------------------------------------------------------------------
    def add_toxic(self, spec: ToxicSpec, now: float) -> None:
        if self.finished:
            return
        stage = make_stage(spec.type, spec.attributes, spec.toxicity, now, self._rng)
        self._names.append(spec.name)
        self._stages.append(stage)

    def update_toxic(self, spec: ToxicSpec, now: float) -> None:
        if spec.name not in self._names:
            return
        i = self._names.index(spec.name)
        old = self._stages[i]
        new = make_stage(spec.type, spec.attributes, spec.toxicity, now, self._rng, previous=old)
        self._stages[i] = new
        for item in old.take_held():
            new.push(item, now)

    def remove_toxic(self, spec: ToxicSpec, now: float) -> None:
        if spec.name not in self._names:
            return
        i = self._names.index(spec.name)
        stage = self._stages.pop(i)
        self._names.pop(i)
        held = stage.take_held()
        if spec.type == "timeout":
            held.append(EOF)  # TimeoutToxic.Cleanup closes the stub, toxicity notwithstanding
        self._feed(i, held, now)
