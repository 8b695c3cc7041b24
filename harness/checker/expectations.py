"""Expectations (`expected` in HISTORY.md): parse them, evaluate them, give the verdict.

Contract: an expectation maps an anomaly name to "<op> <n>" with op one of == != >= <= > < and n
a non-negative integer, e.g. {"lost-write": "> 0", "inconsistent-offset": "== 0"}.
`parse_expected` raises ExpectationError naming the bad key or expression; `verdict` returns
"as-expected" when every expression holds for the anomaly counts, and, with no expectations,
exactly when the history is valid.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.checker.history import ANOMALIES

AS_EXPECTED, UNEXPECTED = "as-expected", "unexpected"

# The comparison operators an `expected` expression may use; plans use the same table.
COMPARISONS: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_EXPR = re.compile(r"^\s*(==|!=|>=|<=|>|<)\s*(\d+)\s*$")


class ExpectationError(ValueError):
    """An `expected` mapping that cannot be understood; the message says which part and why."""


@dataclass(frozen=True)
class Expectation:
    anomaly: str
    op: str
    n: int
    text: str

    def holds(self, count: int) -> bool:
        return COMPARISONS[self.op](count, self.n)


def parse_expected(expected: Any, where: str = "expected") -> list[Expectation]:
    """Parse an `expected` mapping; `where` prefixes error messages (e.g. a plan's path)."""
    if expected is None:
        return []
    if not isinstance(expected, Mapping):
        raise ExpectationError(
            f"{where}: must be a mapping of anomaly name to expression, "
            f"got {type(expected).__name__}"
        )
    out = []
    for name, text in expected.items():
        if name not in ANOMALIES:
            raise ExpectationError(
                f"{where}: unknown anomaly {name!r}; known: {', '.join(ANOMALIES)}"
            )
        if isinstance(text, bool) or not isinstance(text, str | int):
            raise ExpectationError(f"{where}: {name}: expression must be a string like '> 0'")
        # A bare number means "== n": a natural shorthand in YAML plans.
        m = _EXPR.match(f"== {text}" if isinstance(text, int) else text)
        if not m:
            raise ExpectationError(
                f"{where}: {name}: cannot parse {text!r}; expected '<op> <n>' with op in "
                f"{' '.join(COMPARISONS)} and n a non-negative integer, e.g. '> 0'"
            )
        out.append(Expectation(name, m.group(1), int(m.group(2)), str(text)))
    return out


def verdict(valid: bool, counts: Mapping[str, int], expectations: list[Expectation]) -> str:
    if not expectations:
        return AS_EXPECTED if valid else UNEXPECTED
    ok = all(e.holds(counts.get(e.anomaly, 0)) for e in expectations)
    return AS_EXPECTED if ok else UNEXPECTED
