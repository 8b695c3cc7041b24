"""Conditions on broker state: a small, safe expression language (parsed by hand, never eval'd).

    leader(t-0).hw >= 10 and replica(t-0, follower).hw < leader(t-0).hw
    isr(t-0).size == 1          epoch(t-0) > 3          2 not in isr(t-0)
    replica(t-0, 2).leo == leader(t-0).leo              elapsed >= 30 and online(t-0)

Grammar (lowest precedence first):
    expr    := and ("or" and)*
    and     := not ("and" not)*
    not     := "not" not | compare
    compare := sum [("=="|"!="|"<"|"<="|">"|">=") sum | ["not"] "in" set]
    sum     := primary (("+"|"-") primary)*
    primary := NUMBER | "true" | "false" | "elapsed" | "(" expr ")" | call ["." attribute]
Calls: leader(P), replica(P, B|leader|follower[, i]), follower(P[, i]) -> replica, with
attributes leo, hw, hw_checkpoint (the HW of its last checkpoint: where a crash restarts it),
epoch, id, in_isr, alive; isr(P), replicas(P) -> set, with .size;
epoch(P) -> int; online(P) -> bool (has a leader); alive(B) -> bool.
P is "<topic>-<partition>"; B a broker id. Followers are the replicas other than the leader
in assignment order; `follower` without an index is follower 0.

The KRaft controller quorum (from the controllers' /state "quorum", ClusterState.quorum):
    controller.leader -> int: the active controller's id; controller.epoch -> int: the Raft
    epoch it leads (both as the answering controllers know it: state.active_controller);
    controller.committed / .hw / .leo / .active / .alive: the active controller's own report;
    controller(N).committed, .hw, .leo, .epoch, .leader, .active, .alive: controller N's own
    report (committed: offset below which its metadata is committed and applied; hw: its Raft
    high watermark; leader: the leader it knows; alive: it answered the last poll).
A controller that did not answer has unknown attributes (alive is false). Without any quorum
view (a source without one, e.g. a recorded state) controller.leader is ClusterState.controller and
the rest is unknown.

Evaluation uses three-valued logic: a value nobody could report (no leader, broker down)
is unknown; comparisons with unknown are unknown, and a condition that ends up unknown is
not satisfied. `parse_condition` type-checks the whole expression and, given the plan's
topology, checks that every partition, broker and follower index exists; errors carry the
1-based column.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from harness.plan.errors import ConditionError
from harness.plan.state import ClusterState, PartitionState, active_controller

Value = int | float | bool | frozenset[int] | None

_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>==|!=|<=|>=|<|>|\+|-|\(|\)|,|\.)|(?P<bad>\S))"
)
# Topic names may contain letters, digits, '.', '_' and '-'; the partition is the last "-N".
_PARTITION = re.compile(r"\s*(?P<p>[A-Za-z0-9._-]+-\d+)(?=\s*[,)])")
_CMP = {"==", "!=", "<", "<=", ">", ">="}
_KEYWORDS = {"and", "or", "not", "in", "true", "false"}
_REPLICA_ATTRS = {"leo": "int", "hw": "int", "hw_checkpoint": "int", "epoch": "int", "id": "int",
                  "in_isr": "bool", "alive": "bool"}
_FUNCTIONS = ("leader", "replica", "follower", "isr", "replicas", "epoch", "online", "alive",
              "controller")
_CONTROLLER_ATTRS = {"committed": "int", "hw": "int", "leo": "int", "epoch": "int",
                     "leader": "int", "active": "bool", "alive": "bool"}


@dataclass(frozen=True)
class _Tok:
    kind: str  # num | name | op | end
    text: str
    col: int  # 1-based


class _Expr:
    type: str  # "int" | "bool" | "set" | "replica"
    col: int

    def eval(self, s: ClusterState) -> Value:
        raise NotImplementedError


@dataclass
class _Const(_Expr):
    value: int | float | bool
    type: str
    col: int

    def eval(self, s: ClusterState) -> Value:
        return self.value


@dataclass
class _Elapsed(_Expr):
    col: int
    type: str = "int"

    def eval(self, s: ClusterState) -> Value:
        return s.elapsed_s


@dataclass
class _Replica:
    """Which replica a replica(...) names; resolved to a broker id on each evaluation."""

    partition: str
    which: str  # "leader" | "follower" | "broker"
    number: int  # follower index or broker id

    def broker(self, p: PartitionState) -> int | None:
        if self.which == "leader":
            return p.leader
        if self.which == "follower":
            followers = p.followers()
            return followers[self.number] if self.number < len(followers) else None
        return self.number


@dataclass
class _ReplicaAttr(_Expr):
    replica: _Replica
    attr: str
    type: str
    col: int

    def eval(self, s: ClusterState) -> Value:
        p = s.partition(self.replica.partition)
        if p is None:
            return None
        b = self.replica.broker(p)
        if b is None:
            return None
        if self.attr == "id":
            return b
        if self.attr == "in_isr":
            return b in p.isr
        if self.attr == "alive":
            return b in s.alive
        rs = p.replica_states.get(b)
        if rs is None:
            return None
        return {"leo": rs.leo, "hw": rs.hw, "hw_checkpoint": rs.hw_checkpoint,
                "epoch": rs.leader_epoch}[self.attr]


@dataclass
class _PartitionFn(_Expr):
    """isr(P), replicas(P), epoch(P), online(P) and set sizes."""

    fn: str
    partition: str
    type: str
    col: int
    size: bool = False

    def eval(self, s: ClusterState) -> Value:
        p = s.partition(self.partition)
        if p is None:
            return None
        v: Value
        if self.fn == "isr":
            v = frozenset(p.isr)
        elif self.fn == "replicas":
            v = frozenset(p.replicas)
        elif self.fn == "epoch":
            v = p.leader_epoch
        else:  # online
            v = p.leader is not None
        return len(v) if self.size and isinstance(v, frozenset) else v


@dataclass
class _Alive(_Expr):
    broker: int
    col: int
    type: str = "bool"

    def eval(self, s: ClusterState) -> Value:
        return self.broker in s.alive


@dataclass
class _ControllerAttr(_Expr):
    """controller.ATTR (which=None: the active controller) or controller(N).ATTR."""

    which: int | None
    attr: str
    type: str
    col: int

    def eval(self, s: ClusterState) -> Value:
        known = active_controller(s.quorum)
        if self.which is None:
            if self.attr == "leader":
                return known[0] if known else (None if s.quorum else s.controller)
            if self.attr == "epoch":
                return known[1] if known else None
            if known is None:
                return None
            cid = known[0]
        else:
            cid = self.which
        if self.attr == "alive":
            return cid in s.quorum if s.quorum else None
        c = s.quorum.get(cid)
        if c is None:
            return None
        return {"committed": c.committed, "hw": c.hw, "leo": c.leo, "epoch": c.epoch,
                "leader": c.leader, "active": c.active}[self.attr]


@dataclass
class _Arith(_Expr):
    op: str
    left: _Expr
    right: _Expr
    col: int
    type: str = "int"

    def eval(self, s: ClusterState) -> Value:
        a, b = self.left.eval(s), self.right.eval(s)
        if a is None or b is None:
            return None
        return a + b if self.op == "+" else a - b  # type: ignore[operator]


_COMPARE: dict[str, Callable[[Value, Value], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,  # type: ignore[operator]
    "<=": lambda a, b: a <= b,  # type: ignore[operator]
    ">": lambda a, b: a > b,  # type: ignore[operator]
    ">=": lambda a, b: a >= b,  # type: ignore[operator]
}


@dataclass
class _Compare(_Expr):
    op: str
    left: _Expr
    right: _Expr
    col: int
    type: str = "bool"

    def eval(self, s: ClusterState) -> Value:
        a, b = self.left.eval(s), self.right.eval(s)
        if a is None or b is None:
            return None
        return _COMPARE[self.op](a, b)


@dataclass
class _In(_Expr):
    item: _Expr
    container: _Expr
    negate: bool
    col: int
    type: str = "bool"

    def eval(self, s: ClusterState) -> Value:
        a, c = self.item.eval(s), self.container.eval(s)
        if a is None or not isinstance(c, frozenset):
            return None
        return (a in c) != self.negate


@dataclass
class _Logic(_Expr):
    op: str  # and | or | not
    args: list[_Expr]
    col: int
    type: str = "bool"

    def eval(self, s: ClusterState) -> Value:
        vals = [a.eval(s) for a in self.args]
        if self.op == "not":
            return None if vals[0] is None else not vals[0]
        decisive = self.op == "or"  # the value that settles the result on its own
        if any(v is decisive for v in vals):
            return decisive
        if any(v is None for v in vals):
            return None
        return not decisive


@dataclass(frozen=True)
class Condition:
    """A parsed condition; `holds(state)` is True only when it is known to be true."""

    text: str
    _root: _Expr

    def evaluate(self, state: ClusterState) -> bool | None:
        """True, False, or None when the state does not tell (unknown)."""
        v = self._root.eval(state)
        return None if v is None else bool(v)

    def holds(self, state: ClusterState) -> bool:
        return self.evaluate(state) is True

    def __str__(self) -> str:
        return self.text


def evaluate(condition: Condition, state: ClusterState) -> bool:
    """Whether `condition` holds on `state` (unknown counts as not holding)."""
    return condition.holds(state)


class _Parser:
    def __init__(
        self,
        text: str,
        partitions: Mapping[str, int] | None,
        brokers: Collection[int] | None,
        controllers: Collection[int] | None = None,
    ) -> None:
        self.text = text
        self.pos = 0
        self.buf: _Tok | None = None
        self.partitions = partitions  # name -> replication factor
        self.brokers = brokers
        self.controllers = controllers

    # -- lexing (lazy, one token of lookahead, so partition names can be read raw) --
    def _lex(self) -> _Tok:
        if self.text[self.pos :].strip() == "":
            return _Tok("end", "", len(self.text) + 1)
        m = _TOKEN.match(self.text, self.pos)
        assert m is not None  # the pattern ends in \S, so it always matches non-blank text
        self.pos = m.end()
        col = m.start(m.lastgroup or 0) + 1
        kind = m.lastgroup or "bad"
        if kind == "bad":
            raise ConditionError(f"unexpected character {m.group('bad')!r}", col)
        return _Tok(kind, m.group(kind), col)

    def peek(self) -> _Tok:
        if self.buf is None:
            self.buf = self._lex()
        return self.buf

    def take(self) -> _Tok:
        tok = self.peek()
        self.buf = None
        return tok

    def expect(self, text: str) -> _Tok:
        tok = self.take()
        if tok.text != text:
            raise ConditionError(f"expected {text!r}, found {_describe(tok)}", tok.col)
        return tok

    def accept(self, text: str) -> bool:
        if self.peek().text == text and self.peek().kind in ("op", "name"):
            self.take()
            return True
        return False

    def partition(self) -> str:
        assert self.buf is None, "partition names are read raw, right after '(' or ','"
        m = _PARTITION.match(self.text, self.pos)
        if m is None:
            col = len(self.text) - len(self.text[self.pos :].lstrip()) + 1
            raise ConditionError("expected a partition like t-0", col)
        name, col = m.group("p"), m.start("p") + 1
        if self.partitions is not None and name not in self.partitions:
            known = ", ".join(sorted(self.partitions)) or "none"
            raise ConditionError(f"unknown partition {name!r} (plan has: {known})", col)
        self.pos = m.end()
        return name

    def broker_id(self) -> int:
        tok = self.take()
        if tok.kind != "num" or "." in tok.text:
            raise ConditionError(f"expected a broker id, found {_describe(tok)}", tok.col)
        b = int(tok.text)
        if self.brokers is not None and b not in self.brokers:
            raise ConditionError(f"no broker {b} in this cluster", tok.col)
        return b

    # -- grammar --
    def parse(self) -> _Expr:
        e = self.expr()
        tok = self.peek()
        if tok.kind != "end":
            raise ConditionError(f"unexpected {_describe(tok)}", tok.col)
        _want(e, "bool", "a condition must be true or false")
        return e

    def expr(self) -> _Expr:
        args = [self.and_()]
        col = args[0].col
        while self.accept("or"):
            args.append(self.and_())
        return args[0] if len(args) == 1 else _Logic("or", [_want(a, "bool") for a in args], col)

    def and_(self) -> _Expr:
        args = [self.not_()]
        col = args[0].col
        while self.accept("and"):
            args.append(self.not_())
        return args[0] if len(args) == 1 else _Logic("and", [_want(a, "bool") for a in args], col)

    def not_(self) -> _Expr:
        tok = self.peek()
        if tok.kind == "name" and tok.text == "not":
            self.take()
            return _Logic("not", [_want(self.not_(), "bool")], tok.col)
        return self.compare()

    def compare(self) -> _Expr:
        left = self.sum()
        tok = self.peek()
        if tok.kind == "op" and tok.text in _CMP:
            self.take()
            right = self.sum()
            if tok.text in ("==", "!="):
                if left.type not in ("int", "bool") or left.type != right.type:
                    raise ConditionError(
                        f"cannot compare {_kind(left)} with {_kind(right)}", tok.col
                    )
            else:
                _want(left, "int", f"'{tok.text}' needs numbers")
                _want(right, "int", f"'{tok.text}' needs numbers")
            return _Compare(tok.text, left, right, tok.col)
        negate = False
        if tok.kind == "name" and tok.text == "not":
            self.take()
            negate = True
            if self.peek().text != "in":
                raise ConditionError("expected 'in' after 'not'", self.peek().col)
        if self.accept("in"):
            right = self.sum()
            _want(left, "int", "'in' needs a broker id on its left")
            _want(right, "set", "'in' needs isr(P) or replicas(P) on its right")
            return _In(left, right, negate, tok.col)
        return left

    def sum(self) -> _Expr:
        left = self.primary()
        while self.peek().kind == "op" and self.peek().text in ("+", "-"):
            tok = self.take()
            right = self.primary()
            _want(left, "int", f"'{tok.text}' needs numbers")
            _want(right, "int", f"'{tok.text}' needs numbers")
            left = _Arith(tok.text, left, right, tok.col)
        return left

    def primary(self) -> _Expr:
        tok = self.take()
        if tok.kind == "num":
            value = float(tok.text) if "." in tok.text else int(tok.text)
            return _Const(value, "int", tok.col)
        if tok.text == "(" and tok.kind == "op":
            e = self.expr()
            self.expect(")")
            return e
        if tok.kind == "name":
            if tok.text in ("true", "false"):
                return _Const(tok.text == "true", "bool", tok.col)
            if tok.text == "elapsed":
                return _Elapsed(tok.col)
            if tok.text == "controller":
                return self.controller(tok)
            if tok.text in _FUNCTIONS:
                return self.call(tok)
            if tok.text not in _KEYWORDS:
                raise ConditionError(
                    f"unknown name {tok.text!r} (functions: {', '.join(_FUNCTIONS)}, elapsed)",
                    tok.col,
                )
        raise ConditionError(f"expected a value, found {_describe(tok)}", tok.col)

    def call(self, fn: _Tok) -> _Expr:
        self.expect("(")
        if fn.text == "alive":
            b = self.broker_id()
            self.expect(")")
            return _Alive(b, fn.col)
        partition = self.partition()
        if fn.text in ("isr", "replicas", "epoch", "online"):
            self.expect(")")
            if fn.text in ("isr", "replicas"):
                if self.accept("."):
                    attr = self.take()
                    if attr.text != "size":
                        raise ConditionError(
                            f"{fn.text}(...) has only .size, not {attr.text!r}", attr.col
                        )
                    return _PartitionFn(fn.text, partition, "int", fn.col, size=True)
                return _PartitionFn(fn.text, partition, "set", fn.col)
            return _PartitionFn(fn.text, partition, "int" if fn.text == "epoch" else "bool",
                                fn.col)
        if fn.text == "leader":
            replica = _Replica(partition, "leader", 0)
        elif fn.text == "follower":
            replica = _Replica(partition, "follower", self.follower_index(partition))
        else:  # replica(P, B|leader|follower[, i])
            self.expect(",")
            tok = self.peek()
            if tok.kind == "name" and tok.text == "leader":
                self.take()
                replica = _Replica(partition, "leader", 0)
            elif tok.kind == "name" and tok.text == "follower":
                self.take()
                replica = _Replica(partition, "follower", self.follower_index(partition))
            elif tok.kind == "num":
                replica = _Replica(partition, "broker", self.broker_id())
            else:
                raise ConditionError(
                    f"expected a broker id, 'leader' or 'follower', found {_describe(tok)}",
                    tok.col,
                )
        self.expect(")")
        dot = self.peek()
        if dot.text != ".":
            raise ConditionError(
                f"{fn.text}(...) names a replica: add .leo, .hw, .epoch, .id, .in_isr or .alive",
                dot.col,
            )
        self.take()
        attr = self.take()
        if attr.text not in _REPLICA_ATTRS:
            raise ConditionError(
                f"unknown replica attribute {attr.text!r} (known: {', '.join(_REPLICA_ATTRS)})",
                attr.col,
            )
        return _ReplicaAttr(replica, attr.text, _REPLICA_ATTRS[attr.text], fn.col)

    def controller(self, fn: _Tok) -> _Expr:
        """controller.ATTR or controller(N).ATTR (after the word `controller`)."""
        which: int | None = None
        if self.accept("("):
            tok = self.take()
            if tok.kind != "num" or "." in tok.text:
                raise ConditionError(f"expected a controller id, found {_describe(tok)}",
                                     tok.col)
            which = int(tok.text)
            if self.controllers is not None and which not in self.controllers:
                raise ConditionError(
                    f"no controller {which} in this cluster (controllers: "
                    f"{', '.join(map(str, sorted(self.controllers)))})", tok.col)
            self.expect(")")
        dot = self.peek()
        if dot.text != ".":
            raise ConditionError(
                "controller needs an attribute: " + ", ".join(f".{a}" for a in _CONTROLLER_ATTRS),
                dot.col)
        self.take()
        attr = self.take()
        if attr.text not in _CONTROLLER_ATTRS:
            raise ConditionError(
                f"unknown controller attribute {attr.text!r} (known: "
                f"{', '.join(_CONTROLLER_ATTRS)})", attr.col)
        return _ControllerAttr(which, attr.text, _CONTROLLER_ATTRS[attr.text], fn.col)

    def follower_index(self, partition: str) -> int:
        if not self.accept(","):
            return 0
        tok = self.take()
        if tok.kind != "num" or "." in tok.text:
            raise ConditionError(f"expected a follower index, found {_describe(tok)}", tok.col)
        i = int(tok.text)
        if self.partitions is not None and i >= self.partitions[partition] - 1:
            raise ConditionError(
                f"follower index {i} out of range: {partition} has "
                f"{self.partitions[partition] - 1} follower(s)",
                tok.col,
            )
        return i


def _describe(tok: _Tok) -> str:
    return "end of condition" if tok.kind == "end" else repr(tok.text)


def _kind(e: _Expr) -> str:
    return {"int": "a number", "bool": "true/false", "set": "a set", "replica": "a replica"}[
        e.type
    ]


def _want(e: _Expr, type_: str, message: str | None = None) -> _Expr:
    if e.type != type_:
        need = {"int": "a number", "bool": "true/false", "set": "a set"}[type_]
        raise ConditionError(message or f"expected {need}, found {_kind(e)}", e.col)
    return e


def parse_condition(
    text: str,
    partitions: Mapping[str, int] | None = None,
    brokers: Collection[int] | None = None,
    *,
    controllers: Collection[int] | None = None,
) -> Condition:
    """Parse and type-check `text`.

    partitions: known partition names -> replication factor (checks names and follower
    indexes); brokers: known broker ids; controllers: known controller ids. Any may be None
    to skip that check. Raises ConditionError with a 1-based column.
    """
    if not isinstance(text, str) or not text.strip():
        raise ConditionError("empty condition", 1)
    return Condition(text, _Parser(text, partitions, brokers, controllers).parse())
