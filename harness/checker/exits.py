"""The run check `unexpected-exits`: processes that ended without the nemesis ending them.

A broker or controller that exits on its own (a fatal error: Kafka <= 2.0's "log truncation is
not allowed", KAFKA-3410, L21; a crash) is restarted by the final heal like every node, so
neither the history nor the convergence check would show it. Both runtimes record each such
exit when they notice it: the simulator when a process stops itself (SimBroker.exit), the
container cluster when it starts a node whose container exited while the harness had not
stopped or killed it (harness/cluster/cluster.py, with the container's exit code).

`exits_result(lines)` is what results.json carries under `unexpected-exits`, in the run
checks' shape (HISTORY.md "Extending the format"): {"count", "by_node": {node: n},
"examples": [line, ...] (at most 10)}; each line starts with the node's name. Judged like
every run check (harness.checker.expectations): `== 0` unless the plan expects otherwise.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from harness.checker.expectations import UNEXPECTED_EXITS

__all__ = ["UNEXPECTED_EXITS", "exits_result"]
MAX_EXAMPLES = 10


def exits_result(lines: Iterable[str]) -> dict[str, Any]:
    found = list(lines)
    by_node = Counter(line.split(" ", 1)[0] for line in found)
    return {"count": len(found), "by_node": dict(sorted(by_node.items())),
            "examples": found[:MAX_EXAMPLES]}
