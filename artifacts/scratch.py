"""Scratch directories that outlive a killed chperf, and their removal by the next one.

chperf removes its scratch directories (the servers' data, compare's chDB session) when it
ends, also on SIGINT and SIGTERM. SIGKILL (a CI job's timeout, the OOM killer) gives it no
chance: the servers die with it (PR_SET_PDEATHSIG), but their data stays, several GB a run.
So each scratch directory holds an owner file naming the process that made it (PID, its start
time, the boot, the host and the PID namespace), and the next chperf to make a directory of the
same kind under the same parent removes those whose owner is gone. A directory without an owner
file (another tool's, or one kept with --keep-servers-dir) is never touched, nor one of another
user, nor one whose owner this process cannot see (another host on a shared file system,
another container's PID namespace).
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

OWNER_FILE = ".chperf-owner"
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


@dataclass(frozen=True)
class Owner:
    pid: int
    start: str  # /proc/PID/stat field 22: clock ticks since boot, tells a reused PID apart
    boot: str
    host: str
    pid_namespace: str

    def line(self) -> str:
        return f"{self.pid} {self.start} {self.boot} {self.host} {self.pid_namespace}\n"

    @staticmethod
    def parse(text: str) -> Owner | None:
        parts = text.split()
        if len(parts) != 5 or not parts[0].isdigit():
            return None
        return Owner(int(parts[0]), *parts[1:])


def _boot_id() -> str:
    try:
        return BOOT_ID.read_text().strip() or "unknown"
    except OSError:
        return "unknown"


def _token(text: str) -> str:
    """One field of the owner line: no whitespace, never empty."""
    return "".join(text.split()) or "unknown"


def _pid_namespace() -> str:
    try:
        return _token(os.readlink("/proc/self/ns/pid"))
    except OSError:
        return "unknown"


def process_start(pid: int) -> str | None:
    """The start time of a live process, None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None  # field 22 of the whole line


def current_owner() -> Owner:
    pid = os.getpid()
    start = process_start(pid) or "unknown"
    return Owner(pid, start, _boot_id(), _token(socket.gethostname()), _pid_namespace())


def gone(owner: Owner) -> bool:
    """Whether the process that wrote `owner` is known to have ended: this host rebooted since,
    or, in this boot and PID namespace, no process has its PID and start time. An owner this
    process cannot see (another host, another PID namespace) is not known to have ended."""
    me = current_owner()
    if owner.host != me.host or "unknown" in (owner.boot, me.boot):
        return False
    if owner.boot != me.boot:
        return True
    if owner.pid_namespace != me.pid_namespace or me.pid_namespace == "unknown":
        return False
    return process_start(owner.pid) != owner.start


def make_scratch(prefix: str, parent: Path | None = None) -> Path:
    """A new private directory (mode 0700) with an owner file. OSError as mkdtemp raises it."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        (path / OWNER_FILE).write_text(current_owner().line())
    except OSError:
        shutil.rmtree(path, ignore_errors=True)  # a full disk: leave nothing behind
        raise
    return path


def disown(path: Path) -> None:
    """Keep `path` for good (--keep-servers-dir): no later chperf removes it."""
    (path / OWNER_FILE).unlink(missing_ok=True)


def sweep(prefix: str, parent: Path | None = None) -> list[Path]:
    """Remove this user's directories `parent`/`prefix`* whose owner process is gone; the
    ones removed. Anything unreadable or unexpected is left alone."""
    base = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    removed = []
    try:
        candidates = [p for p in base.iterdir() if p.name.startswith(prefix)]
    except OSError:
        return []
    for path in candidates:
        try:
            if path.is_symlink() or not path.is_dir() or path.stat().st_uid != os.getuid():
                continue
            owner = Owner.parse((path / OWNER_FILE).read_text(errors="replace")[:200])
        except OSError:
            continue  # no owner file: not ours to remove
        if owner is None or not gone(owner):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed
