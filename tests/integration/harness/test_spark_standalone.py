"""The checker and the nightly summary on a real Spark standalone cluster (master + one worker).

Both are started from the installed pyspark distribution (`bin/spark-class`) on 127.0.0.1 with
free ports; `highwater check --spark-master spark://...` runs as the real CLI in a child process
and its results.json must be byte-identical to a local[*] check of the same history; the nightly
summary computed through the cluster must equal the local one. The cluster is always stopped.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from procutil import REPO, free_port, read_log, wait_listening

pytestmark = pytest.mark.spark

FIXTURES = REPO / "tests" / "fixtures" / "histories"
SUMMARY = """
import json, sys
from harness.checker.check import spark_session
from harness.nightly.summary import summarize
spark = spark_session(sys.argv[1], driver_memory="1g")
try:
    print(json.dumps(summarize(spark, [(d, "plan") for d in sys.argv[2:]]), sort_keys=True))
finally:
    spark.stop()
"""


def _env() -> dict[str, str]:
    import pyspark

    env = os.environ.copy()
    env.update(
        SPARK_HOME=str(Path(pyspark.__file__).parent),
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,  # workers run the driver's Python (no UDFs today)
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    return env


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)


def _wait_for(log: Path, text: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while text not in read_log(log):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"no {text!r} in {log} (exit {proc.poll()}):\n{read_log(log)}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def spark():
    from harness.checker.check import spark_session

    session = spark_session("local[2]", driver_memory="1g")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[str]:
    spark_class = Path(_env()["SPARK_HOME"]) / "bin" / "spark-class"
    if shutil.which("java") is None or not spark_class.is_file():
        pytest.skip("needs java and pyspark's bin/spark-class")
    tmp = tmp_path_factory.mktemp("spark-cluster")
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = tmp / f"{name}.log"
        with open(log, "ab") as fh:
            proc = subprocess.Popen(
                [str(spark_class), *args], cwd=tmp, env=_env(), stdout=fh, stderr=fh,
                start_new_session=True,  # its own group: the launcher and JVM stop together
            )  # fmt: skip
        procs.append(proc)
        return proc, log

    try:
        master, mlog = start(
            "master", "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port()),
        )  # fmt: skip
        wait_listening(master, [port], "spark master", lambda: read_log(mlog))
        worker, wlog = start(
            "worker", "org.apache.spark.deploy.worker.Worker", master_url,
            "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
            "--cores", "1", "--memory", "1g", "--work-dir", str(tmp / "work"),
        )  # fmt: skip
        _wait_for(wlog, "Successfully registered with master", worker, timeout=90)
        yield master_url
    finally:
        for proc in reversed(procs):
            _stop(proc)


def _copy(name: str, root: Path) -> Path:
    run = root / name
    run.mkdir(parents=True)
    shutil.copy(FIXTURES / name / "history.jsonl", run / "history.jsonl")
    return run


def test_check_and_summary_on_a_standalone_cluster(cluster, spark, tmp_path: Path) -> None:
    from harness.checker.check import check_runs
    from harness.nightly.summary import summarize

    names = ["lost-write", "poll-skip", "edges"]
    on_cluster = [_copy(n, tmp_path / "cluster") for n in names]
    local = [_copy(n, tmp_path / "local") for n in names]
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", "check", "--spark-master", cluster,
         *map(str, on_cluster)],
        cwd=REPO, env=_env(), capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr  # lost-write is unexpected
    check_runs(local, spark=spark)
    for a, b in zip(on_cluster, local, strict=True):
        assert (a / "results.json").read_bytes() == (b / "results.json").read_bytes(), a.name

    proc = subprocess.run(
        [sys.executable, "-c", SUMMARY, cluster, *map(str, on_cluster)],
        cwd=REPO, env=_env(), capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    remote = json.loads(proc.stdout.strip().splitlines()[-1])
    here = summarize(spark, [(d, "plan") for d in local])
    # Same numbers; the run keys differ only by the cluster/local directory.
    rename = {str(b.resolve()): str(a.resolve()) for a, b in zip(on_cluster, local, strict=True)}
    here["runs"] = {rename[k]: v for k, v in here["runs"].items()}
    assert remote == json.loads(json.dumps(here, sort_keys=True))
    assert remote["plans"]["plan"]["acked"] > 0
