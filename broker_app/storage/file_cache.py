"""A bounded cache of open file descriptors for segment and index files.

Kafka keeps every segment's files open and asks the operator for a large fd ulimit; a broker
that a client can make create thousands of partitions then runs out of fds ("Too many open
files") and cannot even restart. Here a LogSegment or OffsetIndex holds a CachedFile, which
opens its file lazily on first use and may be closed again when the cache is over capacity
(least recently used first); the next use reopens it. Unflushed writes survive the close
(they are in the page cache; a later fsync of the reopened file flushes the inode).

A descriptor returned by `fd` is valid until the next call into the cache, so the event-loop
thread uses it at once and never keeps it. Work handed to another thread (an fsync off the
loop) holds `with f.pinned() as fd:` instead: a pinned file is never evicted, and closing it
waits until the last pin is released. The cache's bookkeeping is guarded by a lock.

Each FileSystem (fs.py) has one cache, `fs.files`, whose descriptors are that file system's;
FILE_CACHE is the machine's.
"""

from __future__ import annotations

import resource
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .fs import OS_FS, FileSystem


def default_capacity() -> int:
    """A quarter of the soft fd ulimit (sockets, checkpoints and libraries need the rest)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return 4096
    return max(min(soft // 4, 4096), 8)


class FileCache:
    def __init__(self, capacity: int | None = None, fs: FileSystem | None = None) -> None:
        self.capacity = capacity or default_capacity()
        self.fs = fs if fs is not None else OS_FS
        self._open: OrderedDict[CachedFile, int] = OrderedDict()
        self._pins: Counter[CachedFile] = Counter()
        self._closing: set[CachedFile] = set()  # closed while pinned: close at last unpin
        self._lock = threading.Lock()
        self.opens = 0  # files opened so far (tests, /state)
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._open)

    def fd(self, f: CachedFile) -> int:
        with self._lock:
            return self._fd_locked(f)

    def _fd_locked(self, f: CachedFile) -> int:
        fd = self._open.get(f)
        if fd is not None:
            self._open.move_to_end(f)
            return fd
        if len(self._open) >= self.capacity:
            for old in list(self._open):  # least recently used first, skipping pinned files
                if len(self._open) < self.capacity:
                    break
                if not self._pins[old]:
                    self.fs.close(self._open.pop(old))
                    self.evictions += 1
        fd = self.fs.open(f.path)
        self.opens += 1
        self._open[f] = fd
        return fd

    @contextmanager
    def pinned(self, f: CachedFile) -> Iterator[int]:
        with self._lock:
            fd = self._fd_locked(f)
            self._pins[f] += 1
        try:
            yield fd
        finally:
            with self._lock:
                self._pins[f] -= 1
                if not self._pins[f]:
                    del self._pins[f]
                    if f in self._closing:
                        self._closing.discard(f)
                        self._close_locked(f)

    def close(self, f: CachedFile) -> None:
        with self._lock:
            if self._pins[f]:
                self._closing.add(f)
            else:
                self._close_locked(f)

    def _close_locked(self, f: CachedFile) -> None:
        fd = self._open.pop(f, None)
        if fd is not None:
            self.fs.close(fd)

    def forget_all(self) -> None:
        """The file system lost every descriptor (a simulated power loss): drop them without
        closing; the next use of a file opens it again."""
        with self._lock:
            self._open.clear()
            self._pins.clear()
            self._closing.clear()


FILE_CACHE = OS_FS.files  # the machine's one cache (the broker's segments and indexes)


class CachedFile:
    """A file opened on demand through a FileCache; `closed` after close()."""

    __slots__ = ("path", "cache", "closed")

    def __init__(self, path: Path, cache: FileCache | None = None) -> None:
        self.path = Path(path)
        self.cache = cache if cache is not None else FILE_CACHE
        self.closed = False

    @property
    def fd(self) -> int:
        """An open descriptor for immediate use, or -1 once closed."""
        if self.closed:
            return -1
        return self.cache.fd(self)

    @contextmanager
    def pinned(self) -> Iterator[int]:
        """The descriptor, kept open (never evicted) until the block ends; for other threads."""
        with self.cache.pinned(self) as fd:
            yield fd

    def close(self) -> None:
        if not self.closed:
            self.cache.close(self)
            self.closed = True
