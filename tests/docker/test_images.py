"""The images `highwater images build` makes: built without a registry, runnable, and cached.

Builds for real (debootstrap on the first run on a machine: minutes; later runs reuse the cached
rootfs and images). Every container started here carries highwater.run=<id> and is removed in a
finally, whatever the test's outcome.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed

from harness import images
from harness.images import BuildResult, ImageError

DOCKER_TIMEOUT = 120


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=DOCKER_TIMEOUT, check=check
    )


@pytest.fixture(scope="module")
def run_id() -> Iterator[str]:
    rid = f"test-images-{uuid.uuid4().hex[:8]}"
    try:
        yield rid
    finally:
        # Belt and braces: anything a test left behind under this run id goes.
        ids = docker("ps", "-aq", "--filter", f"label=highwater.run={rid}").stdout.split()
        if ids:
            docker("rm", "-f", *ids, check=False)


@pytest.fixture(scope="module")
def frozen_tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Build from a snapshot of the project: others edit the working tree while tests run,
    and every edit (rightly) makes a new broker image, which would make "nothing changed"
    untestable. The snapshot holds exactly what the builder reads."""
    root = tmp_path_factory.mktemp("tree")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for d in (*images.SOURCE_DIRS, "images"):
        shutil.copytree(images.ROOT / d, root / d, ignore=ignore)
    for f in images.SOURCE_FILES:
        if (images.ROOT / f).is_file():
            shutil.copy2(images.ROOT / f, root / f)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(images, "ROOT", root)
        mp.setattr(images, "IMAGES_DIR", root / "images")
        yield root


@pytest.fixture(scope="module")
def built(frozen_tree: Path) -> dict[str, BuildResult]:
    # A cold machine runs debootstrap and downloads wheels first: minutes, within the bounds
    # harness.images puts on each step.
    return {r.name: r for r in images.build_images()}


def _run_container(run_id: str, *args: str) -> subprocess.CompletedProcess[str]:
    name = f"{run_id}-{uuid.uuid4().hex[:6]}"
    try:
        return docker("run", "--name", name, "--label", f"highwater.run={run_id}", *args,
                      check=False)
    finally:
        docker("rm", "-f", name, check=False)


@pytest.mark.docker
def test_build_makes_labelled_content_hash_tags(built: dict[str, BuildResult]) -> None:
    assert set(built) == {"base", "broker", "toxiproxy"}
    for name, result in built.items():
        assert result.tag.startswith(f"highwater/{name}:")
        assert result.tag != f"highwater/{name}:latest"
        labels = json.loads(
            docker("image", "inspect", "--format", "{{json .Config.Labels}}", result.tag).stdout
        )
        assert labels["highwater.image"] == name
        assert result.tag.endswith(":" + labels["highwater.hash"])
        # :latest points at the same image as the content-hash tag.
        assert images.image_id(f"highwater/{name}:latest") == images.image_id(result.tag)


@pytest.mark.docker
def test_second_build_is_a_no_op(built: dict[str, BuildResult]) -> None:
    again = {r.name: r for r in images.build_images()}
    assert {n: r.tag for n, r in again.items()} == {n: r.tag for n, r in built.items()}
    assert {n: r.action for n, r in again.items()} == {
        "base": "up to date",
        "broker": "up to date",
        "toxiproxy": "up to date",
    }
    assert images.ensure_images() == {n: r.tag for n, r in built.items()}


@pytest.mark.docker
def test_base_has_debian_python(built: dict[str, BuildResult], run_id: str) -> None:
    proc = _run_container(
        run_id, "--rm", built["base"].tag,
        "python3", "-c", "import sys, ssl; print('%d.%d' % sys.version_info[:2])",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "3.11"


@pytest.mark.docker
def test_broker_image_runs_highwater(built: dict[str, BuildResult], run_id: str) -> None:
    proc = _run_container(run_id, built["broker"].tag, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "usage: highwater" in proc.stdout
    assert "images" in proc.stdout


@pytest.mark.docker
def test_broker_image_imports_project_but_not_harness_only_deps(
    built: dict[str, BuildResult], run_id: str
) -> None:
    code = (
        "import importlib.util as u, broker_app, kio, crc32c, confluent_kafka;"
        "print(broker_app.__file__);"
        "print(u.find_spec('pyspark') is None, u.find_spec('docker') is None)"
    )
    proc = _run_container(run_id, "--entrypoint", "python", built["broker"].tag, "-c", code)
    assert proc.returncode == 0, proc.stderr
    where, no_heavy = proc.stdout.splitlines()
    # Installed into the image's venv from the wheel, not a bind mount of the host tree.
    assert where.startswith("/opt/highwater/lib/python3.11/site-packages/broker_app/")
    assert no_heavy == "True True"


@pytest.mark.docker
def test_toxiproxy_image_serves_the_api(built: dict[str, BuildResult], run_id: str) -> None:
    name = f"{run_id}-toxiproxy"
    try:
        docker("run", "-d", "--name", name, "--label", f"highwater.run={run_id}",
               "-p", "127.0.0.1::8474", built["toxiproxy"].tag)
        port = docker("port", name, "8474/tcp").stdout.split(":")[-1].strip()

        @retry(stop=stop_after_delay(60), wait=wait_fixed(0.5), reraise=True,
               retry=retry_if_exception_type(OSError))
        def version() -> tuple[int, str]:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/version", timeout=5) as r:
                return r.status, r.read().decode()

        status, body = version()
        assert status == 200
        assert body.strip()
    finally:
        docker("rm", "-f", name, check=False)


def test_runtime_dependency_not_in_pyproject_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "images" / "broker").mkdir(parents=True)
    (tmp_path / "images" / "broker" / "runtime-packages.txt").write_text("kio\n# c\nnot-a-dep\n")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["kio==0.6.5", "PyYAML>=6"]\n'
    )
    monkeypatch.setattr(images, "ROOT", tmp_path)
    monkeypatch.setattr(images, "IMAGES_DIR", tmp_path / "images")
    with pytest.raises(ImageError, match=r"runtime-packages.txt:3: 'not-a-dep' is not in"):
        images.runtime_requirements()


def test_runtime_requirements_take_pins_from_pyproject() -> None:
    reqs = images.runtime_requirements()
    assert "kio==0.6.5" in reqs
    assert not any(r.lower().startswith(("pyspark", "docker")) for r in reqs)


@pytest.mark.docker
def test_given_base_image_is_used_not_built(built: dict[str, BuildResult]) -> None:
    # No registry here, so "another base image" is a local one; the same image by another
    # name yields the same broker (the hash covers the base's image ID, not its name).
    base_id = images.image_id(built["base"].tag)
    assert base_id is not None
    alias = "highwater-test/other-base:given"
    docker("tag", built["base"].tag, alias)
    try:
        results = {r.name: r for r in images.build_images(base_image=alias)}
    finally:
        docker("rmi", alias, check=False)
    assert results["base"].action == "given"
    assert results["base"].tag == alias
    assert results["broker"].tag == built["broker"].tag
    assert results["broker"].action == "up to date"
