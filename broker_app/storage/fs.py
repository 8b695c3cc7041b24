"""The disk seam under the log (issue 26): every file operation of the storage layer.

LogSegment, OffsetIndex, the checkpoint files, Log and LogManager do their I/O through a
FileSystem, never through `os` or `pathlib` themselves, so the same code runs on the machine's
disk and on a simulated one.

Contract:
- Descriptors are ints from `open` (read-write, the file created if missing) or `dup`; the
  offset-free calls `pread`, `pwrite`, `size`, `truncate`, `fsync`, `close` take them.
- Path calls: `mkdirs`, `listdir` (names, sorted), `isdir`, `exists`, `unlink` and `rmtree`
  (both fine if the path is missing), `replace` (atomic rename over the target), `fsync_dir`,
  `read_bytes` (FileNotFoundError if missing), `write_bytes` (create or replace the contents,
  no fsync).
- `files` is the FileSystem's bounded cache of open descriptors (file_cache.py).
- OS_FS is the machine's file system (production, and the broker's containers, where the
  FUSE layer of harness/cluster/diskfs.py may sit below it).
- MemoryFileSystem is the simulated disk with the same page-cache rule as that FUSE layer:
  a write is visible at once and durable only once its file is fsynced; truncation too;
  directory operations (create, rename, unlink, mkdir) are durable at once. `power_loss()`
  drops every unsynced change (what `kill` with lose_unsynced does to a container);
  `sync_all()` writes every file out (the kernel's writeback, the `disk-sync` action).
  Not simulated (as in the FUSE layer): lost directory operations, torn writes inside a
  write, I/O errors.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .file_cache import FileCache


class FileSystem:
    """The operations the storage layer needs (see the module docstring)."""

    _files: FileCache | None = None

    @property
    def files(self) -> FileCache:
        if self._files is None:
            from .file_cache import FileCache  # noqa: PLC0415 - file_cache imports this module

            self._files = FileCache(fs=self)
        return self._files

    # descriptors
    def open(self, path: Path) -> int: raise NotImplementedError
    def close(self, fd: int) -> None: raise NotImplementedError
    def dup(self, fd: int) -> int: raise NotImplementedError
    def pread(self, fd: int, n: int, pos: int) -> bytes: raise NotImplementedError
    def pwrite(self, fd: int, data: bytes | memoryview, pos: int) -> int:
        raise NotImplementedError
    def size(self, fd: int) -> int: raise NotImplementedError
    def truncate(self, fd: int, length: int) -> None: raise NotImplementedError
    def fsync(self, fd: int) -> None: raise NotImplementedError

    # paths
    def mkdirs(self, path: Path) -> None: raise NotImplementedError
    def listdir(self, path: Path) -> list[str]: raise NotImplementedError
    def isdir(self, path: Path) -> bool: raise NotImplementedError
    def exists(self, path: Path) -> bool: raise NotImplementedError
    def unlink(self, path: Path) -> None: raise NotImplementedError
    def rmtree(self, path: Path) -> None: raise NotImplementedError
    def replace(self, src: Path, dst: Path) -> None: raise NotImplementedError
    def fsync_dir(self, path: Path) -> None: raise NotImplementedError
    def read_bytes(self, path: Path) -> bytes: raise NotImplementedError
    def write_bytes(self, path: Path, data: bytes) -> None: raise NotImplementedError


class OsFileSystem(FileSystem):
    """The machine's disk."""

    def open(self, path: Path) -> int:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)

    def close(self, fd: int) -> None:
        os.close(fd)

    def dup(self, fd: int) -> int:
        return os.dup(fd)

    def pread(self, fd: int, n: int, pos: int) -> bytes:
        return os.pread(fd, n, pos)

    def pwrite(self, fd: int, data: bytes | memoryview, pos: int) -> int:
        return os.pwrite(fd, data, pos)

    def size(self, fd: int) -> int:
        return os.fstat(fd).st_size

    def truncate(self, fd: int, length: int) -> None:
        os.ftruncate(fd, length)

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def mkdirs(self, path: Path) -> None:
        Path(path).mkdir(parents=True, exist_ok=True)

    def listdir(self, path: Path) -> list[str]:
        return sorted(os.listdir(path))

    def isdir(self, path: Path) -> bool:
        return os.path.isdir(path)

    def exists(self, path: Path) -> bool:
        return os.path.exists(path)

    def unlink(self, path: Path) -> None:
        Path(path).unlink(missing_ok=True)

    def rmtree(self, path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def replace(self, src: Path, dst: Path) -> None:
        os.replace(src, dst)

    def fsync_dir(self, path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def read_bytes(self, path: Path) -> bytes:
        return Path(path).read_bytes()

    def write_bytes(self, path: Path, data: bytes) -> None:
        Path(path).write_bytes(data)


OS_FS = OsFileSystem()


class _Inode:
    __slots__ = ("data", "durable")

    def __init__(self) -> None:
        self.data = bytearray()  # what reads see (the page cache)
        self.durable = b""  # what survives a power loss


class MemoryFileSystem(FileSystem):
    """A simulated disk with a page cache (see the module docstring). Paths are only names
    here: nothing touches the machine's disk."""

    def __init__(self) -> None:
        self._files: FileCache | None = None
        self._inodes: dict[str, _Inode] = {}
        self._dirs: set[str] = set()
        self._fds: dict[int, _Inode] = {}
        self._next_fd = 3

    @staticmethod
    def _key(path: Path) -> str:
        return os.path.normpath(os.fspath(path))

    def _inode(self, fd: int) -> _Inode:
        inode = self._fds.get(fd)
        if inode is None:
            raise OSError(9, f"bad file descriptor {fd}")
        return inode

    # descriptors
    def open(self, path: Path) -> int:
        key = self._key(path)
        if os.path.dirname(key) not in self._dirs:
            raise FileNotFoundError(2, f"no directory for {key}")
        inode = self._inodes.get(key)
        if inode is None:
            inode = self._inodes[key] = _Inode()
        return self._new_fd(inode)

    def _new_fd(self, inode: _Inode) -> int:
        fd = self._next_fd
        self._next_fd += 1
        self._fds[fd] = inode
        return fd

    def close(self, fd: int) -> None:
        if self._fds.pop(fd, None) is None:
            raise OSError(9, f"bad file descriptor {fd}")

    def dup(self, fd: int) -> int:
        return self._new_fd(self._inode(fd))

    def pread(self, fd: int, n: int, pos: int) -> bytes:
        return bytes(self._inode(fd).data[pos : pos + n])

    def pwrite(self, fd: int, data: bytes | memoryview, pos: int) -> int:
        buf = self._inode(fd).data
        if pos > len(buf):
            buf.extend(bytes(pos - len(buf)))
        buf[pos : pos + len(data)] = data
        return len(data)

    def size(self, fd: int) -> int:
        return len(self._inode(fd).data)

    def truncate(self, fd: int, length: int) -> None:
        buf = self._inode(fd).data
        if length < len(buf):
            del buf[length:]
        else:
            buf.extend(bytes(length - len(buf)))

    def fsync(self, fd: int) -> None:
        inode = self._inode(fd)
        inode.durable = bytes(inode.data)

    # paths
    def mkdirs(self, path: Path) -> None:
        key = self._key(path)
        while key not in self._dirs:
            self._dirs.add(key)
            parent = os.path.dirname(key)
            if parent == key:
                break
            key = parent

    def listdir(self, path: Path) -> list[str]:
        key = self._key(path)
        if key not in self._dirs:
            raise FileNotFoundError(2, f"no directory {key}")
        names = {os.path.basename(p) for p in self._inodes if os.path.dirname(p) == key}
        names |= {os.path.basename(d) for d in self._dirs
                  if d != key and os.path.dirname(d) == key}  # fmt: skip
        return sorted(names)

    def isdir(self, path: Path) -> bool:
        return self._key(path) in self._dirs

    def exists(self, path: Path) -> bool:
        key = self._key(path)
        return key in self._inodes or key in self._dirs

    def unlink(self, path: Path) -> None:
        self._inodes.pop(self._key(path), None)  # open descriptors keep the inode

    def rmtree(self, path: Path) -> None:
        key = self._key(path)
        prefix = key + os.sep
        for p in [p for p in self._inodes if p.startswith(prefix)]:
            del self._inodes[p]
        self._dirs = {d for d in self._dirs if d != key and not d.startswith(prefix)}

    def replace(self, src: Path, dst: Path) -> None:
        inode = self._inodes.pop(self._key(src), None)
        if inode is None:
            raise FileNotFoundError(2, f"no file {src}")
        self._inodes[self._key(dst)] = inode

    def fsync_dir(self, path: Path) -> None:
        if self._key(path) not in self._dirs:
            raise FileNotFoundError(2, f"no directory {path}")

    def read_bytes(self, path: Path) -> bytes:
        inode = self._inodes.get(self._key(path))
        if inode is None:
            raise FileNotFoundError(2, f"no file {path}")
        return bytes(inode.data)

    def write_bytes(self, path: Path, data: bytes) -> None:
        fd = self.open(path)
        try:
            self.truncate(fd, 0)
            self.pwrite(fd, data, 0)
        finally:
            self.close(fd)

    # faults
    def unsynced(self, under: Path) -> dict[str, tuple[bytes, bytes]]:
        """path -> (page cache, disk) of every file below `under` whose page cache differs
        from its disk: what a power loss now would change."""
        prefix = self._key(under) + os.sep
        return {p: (bytes(i.data), i.durable) for p, i in self._inodes.items()
                if p.startswith(prefix) and i.data != i.durable}  # fmt: skip

    def power_loss(self) -> int:
        """Every change not fsynced is gone (open descriptors die with the machine); returns
        how many bytes of page cache differed from the disk."""
        lost = 0
        for inode in self._inodes.values():
            if inode.data != inode.durable:
                lost += max(len(inode.data), len(inode.durable))
                inode.data = bytearray(inode.durable)
        self._fds.clear()
        if self._files is not None:
            self._files.forget_all()
        return lost

    def sync_all(self) -> None:
        """Write every file's page cache out (writeback)."""
        for inode in self._inodes.values():
            inode.durable = bytes(inode.data)
