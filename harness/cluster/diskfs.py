"""A FUSE layer under a broker's data dir for disk faults (in the spirit of Jepsen's lazyfs).

Acts below the unmodified broker: the broker's data dir is a FUSE mount (mfusepy over libfuse3)
whose files live in BACKING_DIR; the broker cannot tell. Inside the broker container:

  python -m harness.cluster.diskfs run -- highwater broker ...   (PID 1, the supervisor)

mounts the filesystem (a separate `fs` process, so docker's SIGTERM reaches only the supervisor),
starts the broker on it, forwards SIGTERM/SIGINT to it, and when it exits writes every unsynced
page out (a clean shutdown flushes the page cache), unmounts and exits with the broker's code.

What it simulates:
- a page cache that loses data on a crash: write() lands in the fs process's memory (4 KiB pages
  keyed by backing inode) and reaches BACKING_DIR only on fsync/fdatasync of that file (or a
  clean stop, or `ctl flush`). SIGKILL of the container kills the fs process with it: every write
  not fsynced is gone, exactly what `kill(lose_unsynced=True)` needs. Truncation is lazy too.
- stalls: `ctl stall write|fsync|all SECONDS` blocks those operations (reads go on) until the
  time passes or `ctl unstall`; the blocked callers then proceed normally.
What it does not simulate: lost directory operations (create, rename, unlink, mkdir are
durable at once), torn pages inside a write, reordering of fsynced writes, I/O errors.

Needs /dev/fuse and CAP_SYS_ADMIN in the container (wrap_broker() asks for them). The harness
talks to it with `docker exec ... python -m harness.cluster.diskfs ctl ...` (control()).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from harness.cluster.topology import DATA_DIR

BACKING_DIR = "/var/lib/highwater/backing"
CONTROL_SOCKET = "/run/highwater-diskfs.sock"
LIB_DIR = "/opt/highwater-diskfs"  # mfusepy.py is copied here if the image lacks it
PAGE = 4096
MOUNT_TIMEOUT_S = 20.0
OPS = ("write", "fsync")


# --- what the harness uses ----------------------------------------------------------------------


def wrap_broker(command: list[str]) -> tuple[list[str], dict[str, Any]]:
    """The container command and docker options that run `highwater <command>` on the layer."""
    return (["run", "--", "highwater", *command],
            {"entrypoint": ["python", "-m", "harness.cluster.diskfs"],
             "devices": ["/dev/fuse:/dev/fuse:rwm"], "cap_add": ["SYS_ADMIN"],
             "environment": {"PYTHONPATH": LIB_DIR}})


def library_files() -> list[tuple[Path, str]]:
    """What to copy into a broker container before it starts: the host's mfusepy (one
    pure-Python file), so the layer works with a broker image that does not ship it."""
    import mfusepy

    return [(Path(mfusepy.__file__), f"{LIB_DIR}/mfusepy.py")]


def control(container: Any, *args: str) -> str:
    """Send one control command to the layer in a running container; returns its answer."""
    code, out = container.exec_run(["python", "-m", "harness.cluster.diskfs", "ctl", *args],
                                   environment={"PYTHONPATH": LIB_DIR})
    text = out.decode(errors="replace").strip()
    if code != 0:
        raise RuntimeError(f"diskfs ctl {' '.join(args)} in {container.name}: {text}")
    return text


def status(container: Any) -> dict[str, Any]:
    return json.loads(control(container, "status"))


# --- stall gate ---------------------------------------------------------------------------------


class Gate:
    """Blocks writes and/or fsyncs until a deadline passes or unstall() is called."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._until = {op: 0.0 for op in OPS}
        self.stalled_calls = 0

    def stall(self, ops: str, seconds: float) -> None:
        if ops not in (*OPS, "all"):
            raise ValueError(f"ops {ops!r}: use write, fsync or all")
        with self._cond:
            for op in OPS if ops == "all" else (ops,):
                self._until[op] = time.monotonic() + seconds
            self._cond.notify_all()

    def unstall(self) -> None:
        with self._cond:
            self._until = {op: 0.0 for op in OPS}
            self._cond.notify_all()

    def wait(self, op: str) -> None:
        with self._cond:
            counted = False
            while (left := self._until[op] - time.monotonic()) > 0:
                if not counted:
                    self.stalled_calls += 1
                    counted = True
                self._cond.wait(left)

    def stalled(self) -> list[str]:
        now = time.monotonic()
        return [op for op, until in self._until.items() if until > now]


# --- the filesystem -----------------------------------------------------------------------------


class Dirty:
    """Unsynced state of one backing inode: its logical size and modified pages."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd  # our own O_RDWR descriptor, kept until written back
        self.size = size
        self.pages: dict[int, bytearray] = {}

    def page(self, index: int) -> bytearray:
        page = self.pages.get(index)
        if page is None:
            page = bytearray(os.pread(self.fd, PAGE, index * PAGE).ljust(PAGE, b"\0"))
            self.pages[index] = page
        return page

    def write_back(self) -> None:
        for index, page in sorted(self.pages.items()):
            start = index * PAGE
            if start < self.size:
                os.pwrite(self.fd, bytes(page[: min(PAGE, self.size - start)]), start)
        os.ftruncate(self.fd, self.size)
        os.fsync(self.fd)


def make_operations(root: str, gate: Gate) -> Any:
    import mfusepy

    class LazyFS(mfusepy.Operations):
        use_ns = True

        def __init__(self) -> None:
            self.root = root
            self._mutex = threading.RLock()
            self.dirty: dict[int, Dirty] = {}

        def _real(self, path: str) -> str:
            return os.path.join(self.root, path.lstrip("/"))

        def _state(self, real: str) -> Dirty:
            st = os.lstat(real)
            d = self.dirty.get(st.st_ino)
            if d is None:
                d = Dirty(os.open(real, os.O_RDWR), st.st_size)
                self.dirty[st.st_ino] = d
            return d

        def _drop(self, ino: int) -> None:
            d = self.dirty.pop(ino, None)
            if d is not None:
                os.close(d.fd)

        def flush_all(self) -> int:
            with self._mutex:
                n = len(self.dirty)
                for ino in list(self.dirty):
                    self.dirty[ino].write_back()
                    self._drop(ino)
                return n

        def stats(self) -> dict[str, Any]:
            with self._mutex:
                return {"dirty_files": len(self.dirty),
                        "dirty_bytes": sum(len(d.pages) * PAGE for d in self.dirty.values()),
                        "stalled": gate.stalled(), "stalled_calls": gate.stalled_calls}

        # metadata: passthrough, durable at once
        def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
            st = os.lstat(self._real(path))
            attrs = {k: getattr(st, k) for k in (
                "st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_atime_ns",
                "st_mtime_ns", "st_ctime_ns")}
            for k in ("st_atime", "st_mtime", "st_ctime"):
                attrs[k] = attrs.pop(f"{k}_ns")
            with self._mutex:
                d = self.dirty.get(st.st_ino)
                if d is not None:
                    attrs["st_size"] = d.size
            return attrs

        def readdir(self, path: str, fh: int) -> list[str]:
            return [".", "..", *os.listdir(self._real(path))]

        def statfs(self, path: str) -> dict[str, int]:
            sv = os.statvfs(self._real(path))
            return {k: getattr(sv, k) for k in (
                "f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files",
                "f_flag", "f_frsize", "f_namemax")}

        def mkdir(self, path: str, mode: int) -> None:
            os.mkdir(self._real(path), mode)

        def rmdir(self, path: str) -> None:
            os.rmdir(self._real(path))

        def unlink(self, path: str) -> None:
            real = self._real(path)
            with self._mutex:
                st = os.lstat(real)
                os.unlink(real)
                if st.st_nlink <= 1:
                    self._drop(st.st_ino)

        def rename(self, old: str, new: str) -> None:
            with self._mutex:
                try:
                    target = os.lstat(self._real(new))
                except FileNotFoundError:
                    target = None
                os.rename(self._real(old), self._real(new))
                if target is not None and target.st_nlink <= 1:
                    self._drop(target.st_ino)

        def chmod(self, path: str, mode: int) -> None:
            os.chmod(self._real(path), mode)

        def chown(self, path: str, uid: int, gid: int) -> None:
            os.chown(self._real(path), uid, gid)

        def utimens(self, path: str, times: tuple[int, int] | None = None) -> None:
            os.utime(self._real(path), ns=times) if times else os.utime(self._real(path))

        # data: through the in-memory page cache
        def create(self, path: str, mode: int, fi: Any = None) -> int:
            return os.open(self._real(path), os.O_RDWR | os.O_CREAT, mode)

        def open(self, path: str, flags: int) -> int:
            return os.open(self._real(path), os.O_RDWR if flags & os.O_ACCMODE else os.O_RDONLY)

        def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
            with self._mutex:
                ino = os.fstat(fh).st_ino
                d = self.dirty.get(ino)
                if d is None:
                    return os.pread(fh, size, offset)
                size = max(0, min(size, d.size - offset))
                out = bytearray(os.pread(fh, size, offset).ljust(size, b"\0"))
                for index in range(offset // PAGE, (offset + size + PAGE - 1) // PAGE):
                    page = d.pages.get(index)
                    if page is None:
                        continue
                    lo, hi = max(offset, index * PAGE), min(offset + size, (index + 1) * PAGE)
                    out[lo - offset:hi - offset] = page[lo - index * PAGE:hi - index * PAGE]
                # Beyond the backing file's end and not in a page: zeros, as after truncate-up.
                return bytes(out)

        def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
            gate.wait("write")
            with self._mutex:
                d = self._state(self._real(path))
                pos = 0
                while pos < len(data):
                    index, within = divmod(offset + pos, PAGE)
                    n = min(PAGE - within, len(data) - pos)
                    d.page(index)[within:within + n] = data[pos:pos + n]
                    pos += n
                d.size = max(d.size, offset + len(data))
                return len(data)

        def truncate(self, path: str, length: int, fh: int | None = None) -> None:
            gate.wait("write")
            with self._mutex:
                d = self._state(self._real(path))
                if length < d.size:
                    for index in [i for i in d.pages if i * PAGE >= length]:
                        del d.pages[index]
                    index, within = divmod(length, PAGE)
                    if within:
                        d.page(index)[within:] = b"\0" * (PAGE - within)
                d.size = length

        def fsync(self, path: str, datasync: int, fh: int) -> None:
            gate.wait("fsync")
            with self._mutex:
                ino = os.fstat(fh).st_ino
                d = self.dirty.get(ino)
                if d is not None:
                    d.write_back()
                    self._drop(ino)
                else:
                    os.fsync(fh)

        def fsyncdir(self, path: str, datasync: int, fh: int) -> None:
            gate.wait("fsync")
            fd = os.open(self._real(path), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

        def flush(self, path: str, fh: int) -> None:
            return None  # close() is not a sync: the page cache keeps the data

        def release(self, path: str, fh: int) -> None:
            os.close(fh)

    return LazyFS()


def _serve_control(ops: Any, gate: Gate, path: str) -> None:
    if os.path.exists(path):
        os.unlink(path)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(8)

    def handle(conn: socket.socket) -> None:
        with conn:
            words = conn.makefile().readline().split()
            try:
                cmd = words[0] if words else ""
                if cmd == "stall" and len(words) == 3:
                    gate.stall(words[1], float(words[2]))
                    answer = "ok"
                elif cmd == "unstall":
                    gate.unstall()
                    answer = "ok"
                elif cmd == "flush":
                    answer = f"ok {ops.flush_all()} files written back"
                elif cmd == "status":
                    answer = json.dumps(ops.stats())
                else:
                    answer = ("error: commands are: stall write|fsync|all SECONDS, unstall, "
                              "flush, status")
            except (ValueError, OSError) as exc:
                answer = f"error: {exc}"
            conn.sendall(answer.encode() + b"\n")

    while True:
        conn, _ = srv.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


def _fs_main(backing: str, mount: str, sock: str) -> int:
    import mfusepy

    gate = Gate()
    ops = make_operations(backing, gate)
    threading.Thread(target=_serve_control, args=(ops, gate, sock), daemon=True).start()
    mfusepy.FUSE(ops, mount, foreground=True, nothreads=False, fsname="highwater-diskfs")
    return 0


def _ctl_main(args: list[str]) -> int:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(30)
            s.connect(CONTROL_SOCKET)
            s.sendall(" ".join(args).encode() + b"\n")
            answer = s.makefile().readline().strip()
    except OSError as exc:
        print(f"diskfs: cannot reach {CONTROL_SOCKET}: {exc}", file=sys.stderr)
        return 1
    print(answer)
    return 1 if answer.startswith("error") else 0


def _run_main(command: list[str]) -> int:
    """PID 1: mount, run the broker on it, forward signals, flush and unmount when it ends."""
    for d in (BACKING_DIR, DATA_DIR):
        os.makedirs(d, exist_ok=True)
    fs = subprocess.Popen([sys.executable, "-m", "harness.cluster.diskfs", "fs", BACKING_DIR,
                           DATA_DIR, CONTROL_SOCKET], start_new_session=True)
    deadline = time.monotonic() + MOUNT_TIMEOUT_S
    while not (os.path.ismount(DATA_DIR) and os.path.exists(CONTROL_SOCKET)):
        if fs.poll() is not None or time.monotonic() > deadline:
            print(f"diskfs: FUSE mount of {DATA_DIR} failed (needs /dev/fuse and "
                  "CAP_SYS_ADMIN)", file=sys.stderr, flush=True)
            fs.kill()
            return 1
        time.sleep(0.05)
    print(f"diskfs: {DATA_DIR} mounted over {BACKING_DIR}", file=sys.stderr, flush=True)
    broker = subprocess.Popen(command)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, _f: broker.send_signal(s))
    code = broker.wait()
    _ctl_main(["flush"])
    subprocess.run(["fusermount3", "-u", DATA_DIR], check=False, timeout=30)
    try:
        fs.wait(timeout=30)
    except subprocess.TimeoutExpired:
        fs.kill()
    return code


def main(argv: list[str]) -> int:
    if argv[:1] == ["run"] and "--" in argv:
        return _run_main(argv[argv.index("--") + 1:])
    if argv[:1] == ["fs"] and len(argv) == 4:
        return _fs_main(*argv[1:])
    if argv[:1] == ["ctl"] and len(argv) > 1:
        return _ctl_main(argv[1:])
    print("usage: python -m harness.cluster.diskfs run -- CMD... | fs BACKING MOUNT SOCKET | "
          "ctl stall write|fsync|all SECONDS | ctl unstall | ctl flush | ctl status",
          file=sys.stderr)
    return errno.EINVAL


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
