"""YAML nodes with their positions: composing plan-like files and reading typed values from the
node tree, each error a one-line PlanError naming file:line and the field's path.

The YAML is composed (not loaded), so every value keeps the line it came from; a node made by a
`--set` override has line -1 and its mark names the override (`PlanError.origin`). NodeReader's
typed readers (scalar, int_, num, bool_, str_, enum, seq, mapping, str_map) are what the plan
builder and the nightly suite loader validate with.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness.plan.errors import PlanError


def compose(text: str, source: str) -> Node:
    """The node tree of `text`; PlanError (with the line when YAML knows it) if not YAML or
    empty."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else None
        raise PlanError(source, line, "", f"not valid YAML: {e.problem or e.context}") from e
    except yaml.YAMLError as e:
        raise PlanError(source, None, "", f"not valid YAML: {e}") from e
    if root is None:
        raise PlanError(source, 1, "", "the plan is empty")
    return root


def join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def describe(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    return repr(node.value) if node.value != "" else "nothing"


def suggest(word: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(known), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


def yaml_text(value: Any) -> str:
    """A value as one line of YAML, the way a --set value is written."""
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 20).strip()
    return text[:-3].strip() if text.endswith("\n...") or text.endswith("...") else text


def walk(node: Node) -> Iterable[Node]:
    yield node
    if isinstance(node, SequenceNode):
        for n in node.value:
            yield from walk(n)
    elif isinstance(node, MappingNode):
        for k, v in node.value:
            yield from walk(k)
            yield from walk(v)


class NodeReader:
    """Typed reads of a composed node tree; every error names `source`, line and path."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.ctor = SafeConstructor()

    def error(self, node: Node, path: str, message: str) -> PlanError:
        mark = node.start_mark
        if mark.line < 0:  # a node made from --set
            return PlanError(self.source, None, path, message, origin=mark.name)
        return PlanError(self.source, mark.line + 1, path, message)

    def scalar(self, node: Node, path: str, what: str) -> Any:
        if not isinstance(node, ScalarNode):
            raise self.error(node, path, f"expected {what}, got {describe(node)}")
        try:
            return self.ctor.construct_object(node)
        except ConstructorError as e:
            raise self.error(node, path, f"bad value: {e.problem}") from e

    def int_(self, node: Node, path: str, lo: float | None = None, hi: float | None = None
             ) -> int:
        v = self.scalar(node, path, "an integer")
        if not isinstance(v, int) or isinstance(v, bool):
            raise self.error(node, path, f"expected an integer, got {describe(node)}")
        return int(self._range(node, path, v, lo, hi))

    def num(self, node: Node, path: str, lo: float | None = None, hi: float | None = None,
            positive: bool = False) -> float:
        v = self.scalar(node, path, "a number")
        if not isinstance(v, int | float) or isinstance(v, bool):
            raise self.error(node, path, f"expected a number, got {describe(node)}")
        if positive and v <= 0:
            raise self.error(node, path, f"must be > 0, got {v}")
        return float(self._range(node, path, v, lo, hi))

    def _range(self, node: Node, path: str, v: float, lo: float | None, hi: float | None
               ) -> float:
        if lo is not None and v < lo:
            raise self.error(node, path, f"must be >= {lo:g}, got {v}")
        if hi is not None and v > hi:
            raise self.error(node, path, f"must be <= {hi:g}, got {v}")
        return v

    def bool_(self, node: Node, path: str) -> bool:
        v = self.scalar(node, path, "true or false")
        if not isinstance(v, bool):
            raise self.error(node, path, f"expected true or false, got {describe(node)}")
        return v

    def str_(self, node: Node, path: str) -> str:
        v = self.scalar(node, path, "a string")
        if not isinstance(v, str):
            raise self.error(node, path, f"expected a string, got {describe(node)}")
        return v

    def enum(self, node: Node, path: str, choices: Iterable[str]) -> str:
        choices = tuple(choices)
        v = self.scalar(node, path, f"one of {', '.join(choices)}")
        if str(v) not in choices or isinstance(v, bool):
            raise self.error(node, path, f"expected one of {', '.join(choices)}, got "
                             f"{describe(node)}{suggest(str(v), choices)}")
        return str(v)

    def seq(self, node: Node, path: str) -> list[Node]:
        if not isinstance(node, SequenceNode):
            raise self.error(node, path, f"expected a list, got {describe(node)}")
        return list(node.value)

    def mapping(self, node: Node, path: str, known: Iterable[str],
                required: Iterable[str] = ()) -> dict[str, tuple[Node, Node]]:
        """key -> (key node, value node); unknown, duplicate and missing keys are errors."""
        if not isinstance(node, MappingNode):
            raise self.error(node, path or "plan", f"expected a mapping, got {describe(node)}")
        known = tuple(known)
        out: dict[str, tuple[Node, Node]] = {}
        for k, v in node.value:
            if not isinstance(k, ScalarNode):
                raise self.error(k, path, "keys must be plain names")
            key = str(k.value)
            if key in out:
                raise self.error(k, join(path, key), "duplicate key")
            if key not in known:
                raise self.error(k, join(path, key), f"unknown key (known: {', '.join(known)})"
                                 f"{suggest(key, known)}")
            out[key] = (k, v)
        for r in required:
            if r not in out:
                raise self.error(node, join(path, r), "missing (required)")
        return out

    def str_map(self, node: Node, path: str) -> dict[str, str]:
        if not isinstance(node, MappingNode):
            raise self.error(node, path, f"expected a mapping, got {describe(node)}")
        out: dict[str, str] = {}
        for k, v in node.value:
            key = str(self.scalar(k, path, "a name"))
            if key in out:
                raise self.error(k, join(path, key), "duplicate key")
            val = self.scalar(v, join(path, key), "a value")
            if val is None:
                raise self.error(v, join(path, key), "needs a value")
            out[key] = str(val).lower() if isinstance(val, bool) else str(val)
        return out
