"""Cleanup guarantees: an exception, SIGTERM, a SIGKILLed owner (then `highwater clean`), and the
`highwater cluster up/status/down` commands. One-broker clusters: cheap to start."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hw_docker_util import leftovers, produce_ok

from harness.cluster import Cluster, clean

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]
HIGHWATER = [sys.executable, "-m", "harness.cli"]

OWNER_SCRIPT = """
import json, sys, time
from harness.cluster import Cluster
with Cluster(sys.argv[1], brokers=1, images=json.loads(sys.argv[2])):
    print("UP", flush=True)
    time.sleep(600)
"""


def _start_owner(run_id: str, images: dict[str, str]) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", OWNER_SCRIPT, run_id, json.dumps(images)],
                            stdout=subprocess.PIPE, text=True, cwd=REPO)
    deadline = time.monotonic() + 180
    line = ""
    while time.monotonic() < deadline and proc.poll() is None:
        line = proc.stdout.readline() if proc.stdout else ""
        if line.startswith("UP"):
            return proc
    proc.kill()
    proc.wait(30)
    raise AssertionError(f"owner process did not bring the cluster up (last line {line!r})")


def test_exception_inside_with_removes_everything(cluster_images, run_id_factory) -> None:
    rid = run_id_factory("exc")
    with pytest.raises(RuntimeError, match="boom"), Cluster(rid, brokers=1,
                                                             images=cluster_images) as c:
        produce_ok(c.bootstrap, "t", [b"x"])
        assert leftovers([rid])
        raise RuntimeError("boom")
    assert leftovers([rid]) == []


def test_sigterm_removes_everything(cluster_images, run_id_factory) -> None:
    rid = run_id_factory("term")
    proc = _start_owner(rid, cluster_images)
    try:
        assert leftovers([rid])
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert leftovers([rid]) == []


def test_clean_removes_runs_whose_owner_was_killed(cluster_images, run_id_factory) -> None:
    import docker

    rid = run_id_factory("orphan")
    proc = _start_owner(rid, cluster_images)
    proc.kill()  # SIGKILL: no handler runs, the containers stay behind
    proc.wait(30)
    try:
        assert leftovers([rid])
        removed = clean(docker.from_env())
        assert rid in removed
        assert leftovers([rid]) == []
    finally:
        clean(docker.from_env(), only_run=rid)


def test_cluster_cli_up_status_down(run_id_factory) -> None:
    rid = run_id_factory("cli")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    try:
        up = subprocess.run([*HIGHWATER, "cluster", "up", "--brokers", "1", "--run-id", rid,
                             "--json"], capture_output=True, text=True, timeout=600, env=env)
        assert up.returncode == 0, up.stderr
        info = json.loads(up.stdout)
        assert info["run_id"] == rid
        produce_ok(info["bootstrap"], "cli", [b"x"])
        # The starting process has exited: the cluster stays, and `clean` leaves it alone.
        import docker

        assert rid not in clean(docker.from_env())
        status = subprocess.run([*HIGHWATER, "cluster", "status", "--run-id", rid],
                                capture_output=True, text=True, timeout=120, env=env)
        assert status.returncode == 0 and info["bootstrap"] in status.stdout
        down = subprocess.run([*HIGHWATER, "cluster", "down", "--run-id", rid],
                              capture_output=True, text=True, timeout=300, env=env)
        assert down.returncode == 0, down.stderr
        assert leftovers([rid]) == []
        again = subprocess.run([*HIGHWATER, "cluster", "down", "--run-id", rid],
                               capture_output=True, text=True, timeout=120, env=env)
        assert again.returncode == 1 and rid in again.stderr
    finally:
        subprocess.run([*HIGHWATER, "clean", "--run-id", rid], capture_output=True,
                       timeout=300, env=env)
