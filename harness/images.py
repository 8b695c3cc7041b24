"""Container images without a registry: `highwater images build` and ensure_images().

Contract:
- ensure_images(base_image=None, force=False) -> {"base": ref, "broker": tag, "toxiproxy": tag}
  builds whatever is missing or stale and returns the image references to run. Tags are
  content hashes (`highwater/<name>:<12 hex>`); each image is also tagged `:latest`.
- build_images(...) does the same and says, per image, what it did ("built" / "up to date" /
  "given") and how long it took; `highwater images build` prints that.
- A call with nothing changed only runs `docker image inspect`: it never re-runs debootstrap,
  pip or docker build.
- base: a Debian rootfs made with debootstrap (images/base/mkrootfs.sh, packages in
  images/base/packages.txt), imported with `docker import`. The rootfs tarball is cached under
  $HIGHWATER_CACHE (default ~/.cache/highwater), keyed by the base recipe's hash.
  `--base-image IMG` uses IMG instead (pulled if it is not local and a registry is reachable).
- broker: images/broker/Dockerfile FROM the base, classic builder, a venv with the runtime
  dependencies (names in images/broker/runtime-packages.txt, specifiers from pyproject.toml)
  installed offline from wheels made on the host, plus the project's own wheel.
- toxiproxy: images/toxiproxy/Dockerfile FROM the broker image.
- Every image carries the label highwater.image=<name> and highwater.hash=<content hash>.
- Failures raise ImageError with a message saying what is wrong and what to do.
- Concurrent callers (several test sessions) serialise on a lock file in the cache dir.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGES_DIR = ROOT / "images"
REPOSITORY = "highwater"
SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
# Debian bookworm's python3; wheels built by the host must fit it.
BASE_PYTHON = (3, 11)
# The project's own sources: what goes into the project wheel.
SOURCE_DIRS = ("broker_app", "harness")
# setup.py builds the C record walk (broker_app/storage/_recordwalk.c): the project wheel is a
# cp311-abi3 platform wheel, compiled on the host, since the images have no compiler.
SOURCE_FILES = ("pyproject.toml", "README.md", "setup.py")

# Bounds on every subprocess (seconds). Generous: a cold debootstrap on a slow mirror
# takes minutes, but nothing may hang forever.
QUICK_TIMEOUT = 60
DEBOOTSTRAP_TIMEOUT = 1800
PIP_TIMEOUT = 1200
IMPORT_TIMEOUT = 900
BUILD_TIMEOUT = 1800
PULL_TIMEOUT = 900
LOCK_TIMEOUT = 3600

Log = Callable[[str], None]


class ImageError(RuntimeError):
    """An image could not be built; the message says why and what to do."""


@dataclass(frozen=True)
class BuildResult:
    name: str
    tag: str
    action: str  # "built", "up to date" or "given" (a --base-image we did not build)
    seconds: float


def cache_dir() -> Path:
    return Path(os.environ.get("HIGHWATER_CACHE", Path.home() / ".cache" / "highwater"))


def mirror() -> str:
    return os.environ.get("HIGHWATER_DEBIAN_MIRROR", DEFAULT_MIRROR)


# --- subprocesses -------------------------------------------------------------------------------


def _run(
    cmd: list[str],
    *,
    what: str,
    timeout: float,
    env: dict[str, str] | None = None,
    hint: str = "",
) -> subprocess.CompletedProcess[str]:
    """Run cmd, capture its output, and turn every failure into an ImageError about `what`."""
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError as exc:
        raise ImageError(f"{what}: command not found: {cmd[0]}. {hint}".strip()) from exc
    except subprocess.TimeoutExpired as exc:
        raise ImageError(f"{what}: timed out after {timeout:.0f}s: {' '.join(cmd)}") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        raise ImageError(
            f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}\n{hint}".rstrip()
        )
    return proc


def check_docker() -> str:
    """Return the Docker Engine version, or raise a clear error if it cannot be reached."""
    try:
        proc = subprocess.run(
            ["docker", "version", "--format", "{{.Server.Version}}"],
            capture_output=True,
            text=True,
            timeout=QUICK_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError as exc:
        raise ImageError("docker CLI not found on PATH: install docker.io / docker-ce") from exc
    except subprocess.TimeoutExpired as exc:
        raise ImageError(f"Docker daemon did not answer within {QUICK_TIMEOUT}s") from exc
    if proc.returncode != 0 or not proc.stdout.strip():
        raise ImageError(
            "Docker daemon not reachable (is dockerd running, and DOCKER_HOST right?): "
            + proc.stderr.strip()
        )
    return proc.stdout.strip()


def image_id(ref: str) -> str | None:
    """The local image ID of ref, or None if there is no such image here."""
    proc = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", ref],
        capture_output=True,
        text=True,
        timeout=QUICK_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() or None


def _tag(ref: str, *tags: str) -> None:
    for t in tags:
        _run(["docker", "tag", ref, t], what=f"docker tag {t}", timeout=QUICK_TIMEOUT)


# --- content hashes -----------------------------------------------------------------------------


def _hash_tree(h: hashlib._Hash, root: Path, rel_to: Path) -> None:
    for path in sorted(root.rglob("*")):
        # Build products (bytecode, the in-place extension of `pip install -e .`) are not sources.
        if not path.is_file() or "__pycache__" in path.parts or path.suffix in (".pyc", ".so"):
            continue
        h.update(str(path.relative_to(rel_to)).encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())


def _short(h: hashlib._Hash) -> str:
    return h.hexdigest()[:12]


def base_hash() -> str:
    h = hashlib.sha256(f"base\0{SUITE}\0{mirror()}\0{platform.machine()}\0".encode())
    _hash_tree(h, IMAGES_DIR / "base", IMAGES_DIR)
    return _short(h)


def base_packages() -> list[str]:
    path = IMAGES_DIR / "base" / "packages.txt"
    names = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        if not re.fullmatch(r"[a-z0-9][a-z0-9+.-]+", name):
            raise ImageError(f"{path}:{lineno}: {name!r} is not a Debian package name")
        names.append(name)
    return names


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_requirements() -> list[str]:
    """pyproject.toml's requirement strings for the packages named in runtime-packages.txt."""
    listing = IMAGES_DIR / "broker" / "runtime-packages.txt"
    pyproject = ROOT / "pyproject.toml"
    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    by_name = {}
    for req in deps:
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
        if m:
            by_name[_normalise(m.group(1))] = req.strip()
    reqs = []
    for lineno, line in enumerate(listing.read_text().splitlines(), 1):
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        if _normalise(name) not in by_name:
            raise ImageError(
                f"{listing}:{lineno}: {name!r} is not in [project] dependencies of {pyproject}; "
                "add it there first (pyproject.toml holds the version pins)"
            )
        reqs.append(by_name[_normalise(name)])
    return reqs


def broker_hash(base_id: str, reqs: list[str]) -> str:
    h = hashlib.sha256(f"broker\0{base_id}\0".encode())
    h.update("\n".join(reqs).encode() + b"\0")
    _hash_tree(h, IMAGES_DIR / "broker", IMAGES_DIR)
    for d in SOURCE_DIRS:
        _hash_tree(h, ROOT / d, ROOT)
    for f in SOURCE_FILES:
        if (ROOT / f).is_file():
            h.update(f.encode() + b"\0" + hashlib.sha256((ROOT / f).read_bytes()).digest())
    return _short(h)


def toxiproxy_hash(broker_id: str) -> str:
    h = hashlib.sha256(f"toxiproxy\0{broker_id}\0".encode())
    _hash_tree(h, IMAGES_DIR / "toxiproxy", IMAGES_DIR)
    return _short(h)


# --- locking ------------------------------------------------------------------------------------


@contextmanager
def _build_lock(log: Log) -> Iterator[None]:
    """Serialise builders: two test sessions must not debootstrap or tag at the same time."""
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / "images.lock", "w") as f:
        deadline = time.monotonic() + LOCK_TIMEOUT
        told = False
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ImageError(
                        f"another image build held {cache_dir() / 'images.lock'} "
                        f"for over {LOCK_TIMEOUT}s"
                    ) from None
                if not told:
                    log("waiting for another `highwater images build` to finish...")
                    told = True
                time.sleep(0.5)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# --- the images ---------------------------------------------------------------------------------


def _rootfs_tarball(h: str, log: Log) -> Path:
    """The cached debootstrap rootfs for recipe hash h, made if missing."""
    tarball = cache_dir() / f"base-rootfs-{h}.tar"
    if tarball.is_file():
        log(f"base: reusing cached rootfs {tarball}")
        return tarball
    if shutil.which("debootstrap") is None:
        raise ImageError(
            "debootstrap not found: install it with `apt-get update && apt-get install -y "
            "debootstrap` (as root), or pass --base-image IMAGE to use an image you have"
        )
    if os.geteuid() != 0:
        raise ImageError(
            "making the base rootfs with debootstrap needs root: run `highwater images build` "
            "as root once (later runs reuse the cached image), or pass --base-image IMAGE"
        )
    packages = base_packages()
    log(f"base: debootstrap {SUITE} from {mirror()} with {', '.join(packages)} (minutes)...")
    _run(
        [str(IMAGES_DIR / "base" / "mkrootfs.sh"), SUITE, mirror(), ",".join(packages),
         str(tarball)],
        what="debootstrap of the base rootfs",
        timeout=DEBOOTSTRAP_TIMEOUT,
        hint=f"Is {mirror()} reachable? Set HIGHWATER_DEBIAN_MIRROR to use another mirror.",
    )
    return tarball


def ensure_base(force: bool, log: Log) -> BuildResult:
    started = time.monotonic()
    h = base_hash()
    tag = f"{REPOSITORY}/base:{h}"
    if not force and image_id(tag):
        _tag(tag, f"{REPOSITORY}/base:latest")
        return BuildResult("base", tag, "up to date", time.monotonic() - started)
    tarball = _rootfs_tarball(h, log)
    log(f"base: docker import {tarball.name} -> {tag}")
    _run(
        [
            "docker", "import",
            "--change", "LABEL highwater.image=base",
            "--change", f"LABEL highwater.hash={h}",
            "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "--change", "ENV LANG=C.UTF-8",
            "--change", 'CMD ["python3"]',
            "--message", f"debootstrap {SUITE} minbase, highwater base recipe {h}",
            str(tarball), tag,
        ],
        what="docker import of the base rootfs",
        timeout=IMPORT_TIMEOUT,
    )
    _tag(tag, f"{REPOSITORY}/base:latest")
    return BuildResult("base", tag, "built", time.monotonic() - started)


def given_base(ref: str, log: Log) -> tuple[BuildResult, str]:
    """Use a base image the user named; pull it only if it is not here."""
    started = time.monotonic()
    ident = image_id(ref)
    if ident is None:
        log(f"base: {ref} is not local, trying docker pull...")
        _run(
            ["docker", "pull", ref],
            what=f"docker pull {ref}",
            timeout=PULL_TIMEOUT,
            hint="No registry reachable? Load the image with `docker load`, or drop "
            "--base-image to build the debootstrap base.",
        )
        ident = image_id(ref)
        if ident is None:
            raise ImageError(f"--base-image {ref}: pulled, but docker still cannot find it")
    return BuildResult("base", ref, "given", time.monotonic() - started), ident


def _wheelhouse(kind: str, reqs: list[str], log: Log) -> Path:
    """A directory of wheels for reqs (and their dependencies), cached by the requirement set."""
    key = f"{sys.implementation.cache_tag}\0{platform.machine()}\0" + "\n".join(reqs)
    h = hashlib.sha256(key.encode()).hexdigest()[:12]
    out = cache_dir() / "wheels" / f"{kind}-{h}"
    if (out / ".complete").is_file():
        return out
    log(f"pip wheel {kind}: {' '.join(reqs)} -> {out}")
    out.parent.mkdir(parents=True, exist_ok=True)
    # Download into a scratch dir and rename: an interrupted pip leaves no half cache entry.
    partial = Path(tempfile.mkdtemp(prefix=f"{kind}-{h}.", dir=out.parent))
    try:
        _run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(partial), *reqs],
            what=f"pip wheel of {kind}",
            timeout=PIP_TIMEOUT,
            hint="Is PyPI reachable from this host (PIP_CERT, PIP_INDEX_URL)?",
        )
        (partial / ".complete").write_text("\n".join(reqs) + "\n")
        shutil.rmtree(out, ignore_errors=True)
        partial.rename(out)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return out


def _project_wheel(into: Path, log: Log) -> None:
    """Build the project's wheel from a copy of its sources, so the shared tree gets no build/."""
    with tempfile.TemporaryDirectory(prefix="highwater-src.") as src:
        # *.so: an editable install's in-place build; the wheel compiles its own.
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "*.so")
        for d in SOURCE_DIRS:
            shutil.copytree(ROOT / d, Path(src) / d, ignore=ignore)
        for f in SOURCE_FILES:
            if (ROOT / f).is_file():
                shutil.copy2(ROOT / f, Path(src) / f)
        # pyproject names README.md as the readme; a wheel does not need its text.
        (Path(src) / "README.md").touch()
        build_requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"][
            "requires"
        ]
        backend = _wheelhouse("build-backend", build_requires, log)
        log("broker: pip wheel of the project")
        # Isolated build, but offline: the build backend comes from the cached wheelhouse, so a
        # source change does not mean a trip to PyPI (and the venv needs no `wheel` package).
        _run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index",
             "--find-links", str(backend), "--wheel-dir", str(into), src],
            what="pip wheel of the project",
            timeout=PIP_TIMEOUT,
        )


def _docker_build(context: Path, tag: str, name: str, h: str, build_args: dict[str, str]) -> None:
    cmd = ["docker", "build", "--rm", "--force-rm", "-t", tag, "-t", f"{REPOSITORY}/{name}:latest",
           "--label", f"highwater.image={name}", "--label", f"highwater.hash={h}"]
    for k, v in build_args.items():
        cmd += ["--build-arg", f"{k}={v}"]
    _run(
        [*cmd, str(context)],
        what=f"docker build of {tag}",
        timeout=BUILD_TIMEOUT,
        # The classic builder resolves FROM against local images; BuildKit would try a registry.
        env={"DOCKER_BUILDKIT": "0"},
    )


def ensure_broker(base_ref: str, base_id: str, force: bool, log: Log) -> BuildResult:
    started = time.monotonic()
    if base_ref.startswith(f"{REPOSITORY}/base:") and sys.version_info[:2] != BASE_PYTHON:
        raise ImageError(
            f"the host's Python is {sys.version_info[0]}.{sys.version_info[1]}, but the base "
            f"image has Python {BASE_PYTHON[0]}.{BASE_PYTHON[1]}: wheels built here would not "
            "fit. Run `highwater images build` from a Python 3.11 venv."
        )
    reqs = runtime_requirements()
    h = broker_hash(base_id, reqs)
    tag = f"{REPOSITORY}/broker:{h}"
    if not force and image_id(tag):
        _tag(tag, f"{REPOSITORY}/broker:latest")
        return BuildResult("broker", tag, "up to date", time.monotonic() - started)
    deps = _wheelhouse("runtime", reqs, log)
    with tempfile.TemporaryDirectory(prefix="highwater-ctx.", dir=cache_dir()) as tmp:
        ctx = Path(tmp)
        shutil.copy2(IMAGES_DIR / "broker" / "Dockerfile", ctx / "Dockerfile")
        shutil.copytree(deps, ctx / "wheels" / "deps", ignore=shutil.ignore_patterns(".complete"))
        (ctx / "wheels" / "deps" / "requirements.txt").write_text("\n".join(reqs) + "\n")
        _project_wheel(ctx / "wheels" / "project", log)
        log(f"broker: docker build -> {tag}")
        _docker_build(ctx, tag, "broker", h, {"BASE_IMAGE": base_ref})
    return BuildResult("broker", tag, "built", time.monotonic() - started)


def ensure_toxiproxy(broker_tag: str, force: bool, log: Log) -> BuildResult:
    started = time.monotonic()
    broker_id = image_id(broker_tag)
    if broker_id is None:
        raise ImageError(f"broker image {broker_tag} vanished before the toxiproxy build")
    h = toxiproxy_hash(broker_id)
    tag = f"{REPOSITORY}/toxiproxy:{h}"
    if not force and image_id(tag):
        _tag(tag, f"{REPOSITORY}/toxiproxy:latest")
        return BuildResult("toxiproxy", tag, "up to date", time.monotonic() - started)
    log(f"toxiproxy: docker build -> {tag}")
    _docker_build(IMAGES_DIR / "toxiproxy", tag, "toxiproxy", h, {"BROKER_IMAGE": broker_tag})
    return BuildResult("toxiproxy", tag, "built", time.monotonic() - started)


def build_images(
    base_image: str | None = None, force: bool = False, log: Log | None = None
) -> list[BuildResult]:
    """Build whatever is missing or stale; return what was done for base, broker, toxiproxy."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    check_docker()
    with _build_lock(log):
        if base_image:
            base, base_id = given_base(base_image, log)
        else:
            base = ensure_base(force, log)
            base_id = image_id(base.tag) or ""
        broker = ensure_broker(base.tag, base_id, force, log)
        toxiproxy = ensure_toxiproxy(broker.tag, force, log)
    return [base, broker, toxiproxy]


def ensure_images(base_image: str | None = None, force: bool = False) -> dict[str, str]:
    """The image to run for each of base, broker and toxiproxy, built if missing or stale."""
    return {r.name: r.tag for r in build_images(base_image, force, log=lambda _msg: None)}


# --- CLI ----------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="images_action", metavar="ACTION", required=True)
    b = sub.add_parser("build", help="build the missing or stale images (content-hash tags)")
    b.add_argument(
        "--base-image",
        metavar="IMG",
        help="use IMG (e.g. python:3.11-slim) as the base instead of the debootstrap rootfs",
    )
    b.add_argument(
        "--force",
        action="store_true",
        help="rebuild even if the tags exist (the cached rootfs and wheels are reused; "
        "delete $HIGHWATER_CACHE to re-download them)",
    )
    sub.add_parser("list", help="list the highwater images here, with sizes")
    sub.add_parser(
        "prune",
        help="remove content-hash tags that :latest no longer points at (images that "
        "containers still use are kept)",
    )


def _list() -> int:
    check_docker()
    proc = _run(
        ["docker", "image", "ls", "--filter", "label=highwater.image",
         "--format", "{{.Repository}}:{{.Tag}}\t{{.ID}}\t{{.Size}}\t{{.CreatedSince}}"],
        what="docker image ls",
        timeout=QUICK_TIMEOUT,
    )
    print(proc.stdout, end="")
    return 0


def prune(log: Log) -> list[str]:
    """Untag every highwater image that no :latest tag points at; return the tags removed.

    Each source change makes a new broker image, so old ones pile up. Opt-in, never automatic:
    a concurrent test session may be about to start a container from a tag it just got.
    """
    check_docker()
    with _build_lock(log):
        proc = _run(
            ["docker", "image", "ls", "--filter", "label=highwater.image",
             "--format", "{{.Repository}}:{{.Tag}}\t{{.ID}}"],
            what="docker image ls",
            timeout=QUICK_TIMEOUT,
        )
        rows = [line.split("\t") for line in proc.stdout.splitlines() if "\t" in line]
        keep = {ident for ref, ident in rows if ref.endswith(":latest")}
        removed = []
        for ref, ident in rows:
            if ident in keep or ref.endswith(":<none>"):
                continue
            # No -f: docker refuses to remove an image a container uses, which is what we want.
            rm = subprocess.run(["docker", "rmi", ref], capture_output=True, text=True,
                                timeout=QUICK_TIMEOUT, stdin=subprocess.DEVNULL)
            if rm.returncode == 0:
                removed.append(ref)
            else:
                log(f"kept {ref}: {rm.stderr.strip()}")
    return removed


def run(args: argparse.Namespace) -> int:
    try:
        if args.images_action == "list":
            return _list()
        if args.images_action == "prune":
            removed = prune(lambda msg: print(msg, file=sys.stderr))
            for ref in removed:
                print(f"removed {ref}")
            print(f"{len(removed)} image tag(s) removed")
            return 0
        started = time.monotonic()
        results = build_images(args.base_image, args.force)
        for r in results:
            print(f"{r.name:<10} {r.tag:<32} {r.action} ({r.seconds:.1f}s)")
        print(f"images ready in {time.monotonic() - started:.1f}s")
        return 0
    except ImageError as exc:
        print(f"highwater images: error: {exc}", file=sys.stderr)
        return 1
