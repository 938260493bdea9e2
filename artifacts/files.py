"""Writing artifact files so that a full disk or a read-only directory never leaves half a file
and never becomes a traceback: a whole file is written to a temporary file in its directory
and renamed over the old one; a failed write is a WriteFailed naming the file (exit 3)."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from artifacts.errors import InfrastructureError

# Room set aside on the output's file system for the end of a run: run.json's last write,
# which says why the run failed, must fit when the disk is full. A run.json is a few KB (tens
# with hundreds of profile records); the old one is freed only after the new one is written.
RESERVE_BYTES = 64 * 1024
RESERVE_FILE = ".chperf-reserve"


class WriteFailed(InfrastructureError):
    """A file could not be written: a full disk, a read-only or vanished directory."""

    def __init__(
        self, path: Path, error: OSError, *, hint: str = "", action: str = "write"
    ) -> None:
        self.path = path
        self.reason = error.strerror or str(error)
        super().__init__(
            f"cannot {action} {path}: {self.reason}",
            hint=hint
            or f"free space on the file system of {path.parent} (or make it writable) and "
            "rerun; the files written before are kept",
        )


def write_atomically(path: Path, text: str) -> Path:
    """`text` as the whole of `path`: readers see the old file or the new one, never a part;
    on failure no temporary file is left behind."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise WriteFailed(path, e) from e
    return path


class Reserve:
    """RESERVE_BYTES held in a file of the output directory while a run goes on, and given
    back at its end, so that run.json can still record a full disk."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / RESERVE_FILE
        self._held = False

    def hold(self) -> None:
        try:
            self._held = True
            # Real bytes: not a sparse file, nor zeros a compressing file system would not store.
            self.path.write_bytes(os.urandom(RESERVE_BYTES))
        except OSError as e:
            self.release()
            raise WriteFailed(self.path, e) from e

    def release(self) -> None:
        if self._held:
            self._held = False
            with contextlib.suppress(OSError):  # a read-only directory: nothing to give back
                self.path.unlink(missing_ok=True)


class NotRegularFile(OSError):
    """A named input that is a FIFO, a device, a socket or a directory: reading it could
    block forever or never end."""


def read_regular_file(path: Path, limit: int) -> bytes:
    """At most `limit` bytes of a regular file. Opened without blocking and checked before the
    first read, so a FIFO in a test's place fails at once instead of waiting for a writer."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(limit)
    finally:
        os.close(fd)
