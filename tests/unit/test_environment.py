"""Issue 26's rule: no module of broker_app reads the machine's clock or the global random
generator except broker_app/environment.py, so the simulator's virtual time and seeded rng
reach everything a simulated broker does. Checked on the source (AST), so an `import time as t`
or `from random import choice` cannot hide a call."""

from __future__ import annotations

import ast
from pathlib import Path

import broker_app

ROOT = Path(broker_app.__file__).parent
ALLOWED = {ROOT / "environment.py"}
CLOCKS = {"time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns"}
# Module-level functions of `random` (its hidden global generator); random.Random(seed) and
# the type are fine.
GLOBAL_RANDOM = {"random", "randint", "randrange", "choice", "choices", "shuffle", "sample",
                 "uniform", "getrandbits", "randbytes", "gauss", "seed"}  # fmt: skip


def offenders(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    modules: dict[str, str] = {}  # local name -> "time" | "random" (import time as t)
    names: dict[str, str] = {}  # local name -> "time.monotonic" (from time import monotonic)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in ("time", "random"):
                    modules[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module in ("time", "random"):
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    found = []
    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            what = f"{modules.get(node.value.id, '?')}.{node.attr}"
        elif isinstance(node, ast.Name) and node.id in names:
            what = names[node.id]
        if what is None:
            continue
        module, _, attr = what.partition(".")
        if (module == "time" and attr in CLOCKS) or (module == "random"
                                                     and attr in GLOBAL_RANDOM):
            found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: {what}")
    return found


def test_only_the_environment_reads_clocks_and_global_randomness() -> None:
    found = [o for p in sorted(ROOT.rglob("*.py")) if p not in ALLOWED for o in offenders(p)]
    assert found == []


def test_the_check_sees_every_spelling(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import time as t\nimport random\nfrom time import monotonic as m\n"
                   "from random import choice\n"
                   "a = t.time()\nb = random.choice([1])\nc = m()\nd = choice([1])\n"
                   "ok = random.Random(5).random()\n")  # fmt: skip
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert sorted(o.split(": ")[1] for o in offenders(bad)) == [
            "random.choice", "random.choice", "time.monotonic", "time.time"]
    finally:
        ROOT = saved
