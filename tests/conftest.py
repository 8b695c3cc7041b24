"""Suite-wide: which tests may run beside others when make test runs pytest-xdist (`-n 2`).

Containers, local broker processes and Spark sessions are one work unit, "serial": one worker
runs them one after another, in file order, as a plain `pytest` does, so a 2-core machine never
holds two clusters, or a cluster and a Spark session, at once (their timeouts are set for that).
Every other test runs in-process (unit tests, the simulator, lone brokers on a loop of their
own); those are spread over both workers a module at a time, beside the serial unit, whose
tests mostly wait on containers and timers. A plain `pytest` without `-n` runs everything in
order, as before.

xdist's own `--dist loadgroup` would do this with `xdist_group` marks, but pytest-xdist 3.8
cannot rename node ids on pytest 9.2 (the group is silently lost), so the serial unit is a
scheduler of our own: xdist's LoadScopeScheduling with its documented `_split_scope` overridden.
Which files are serial is decided from their paths, because xdist's controller schedules by
node id without collecting; a test marked `docker` or `spark` outside those paths is an error at
collection, so the list cannot drift from the marks.
"""

from __future__ import annotations

import pytest

# Relative to the rootdir, as in node ids: containers and local broker processes (whole
# directories) and the files whose tests are marked docker or spark.
SERIAL_PATHS = (
    "tests/docker/",
    "tests/integration/",
    "tests/scenarios/test_docker_scenarios.py",
    "tests/unit/checker/test_check.py",
    "tests/unit/checker/test_cli.py",
    "tests/unit/checker/test_differential.py",
    "tests/unit/checker/test_sidecar.py",
    "tests/unit/nightly/test_nightly_summary.py",
)
SERIAL_MARKS = ("docker", "spark")
SERIAL_SCOPE = "serial"


def is_serial(nodeid: str) -> bool:
    return nodeid.startswith(SERIAL_PATHS)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    stray = [item.nodeid for item in items
             if not is_serial(item.nodeid)
             and any(item.get_closest_marker(m) for m in SERIAL_MARKS)]  # fmt: skip
    if stray:
        raise pytest.UsageError(
            f"{stray[0]} is marked {' or '.join(SERIAL_MARKS)} but its file is not in "
            f"SERIAL_PATHS (tests/conftest.py): add it there, so that pytest -n never runs it "
            f"beside another container or Spark test ({len(stray)} such test(s))")


@pytest.hookimpl(optionalhook=True)  # a hook of xdist's: `pytest -p no:xdist` still runs
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Whatever `--dist` says (but `each`), the serial unit plus one unit per module."""
    if config.getvalue("dist") == "each":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SerialUnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return SERIAL_SCOPE if is_serial(nodeid) else nodeid.split("::", 1)[0]

    return SerialUnitScheduling(config, log)
