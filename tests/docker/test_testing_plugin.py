"""Issue 28's must-show: a user's test written only against the documented API
(docs/testing-your-app.md's worked example, copied to a directory outside the repository) runs
with the project's venv and its pytest plugin: acks=all through a leader kill loses nothing,
acks=1 with a cut-off leader loses what that leader acknowledged alone; no container or
network is left afterwards."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hw_docker_util import docker_cli

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]


def _hw_test_objects() -> list[str]:
    names = docker_cli("ps", "-a", "--format", "{{.Names}}").split()
    names += docker_cli("network", "ls", "--format", "{{.Name}}").split()
    return sorted(n for n in names if n.startswith("hw-test-"))


def test_the_documented_example_runs_from_outside_the_repository(
        cluster_images: dict[str, str], tmp_path: Path) -> None:
    doc = (REPO / "docs/testing-your-app.md").read_text()
    [code] = re.findall(r"```python\n(.*?)```", doc, re.S)
    app = tmp_path / "app"
    app.mkdir()
    (app / "test_app.py").write_text(code)
    before = _hw_test_objects()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "test_app.py"], cwd=app, capture_output=True, text=True,
                          timeout=900)  # fmt: skip
    out = "\n".join(line for line in proc.stdout.splitlines() if not line.startswith("%"))
    assert proc.returncode == 0, out[-4000:] + proc.stderr[-2000:]
    assert "2 passed" in out, out[-2000:]
    assert _hw_test_objects() == before  # every container and network removed
