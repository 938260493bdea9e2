"""What a server chperf started wrote to its logs: the tail, for messages, and the lines since
its latest start, read while it starts for the errors that end a start (a fatal error, a port
that another program took)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

LOG_TAIL_LINES = 20
TAIL_BYTES = 64 * 1024
SINCE_START_BYTES = 1 << 20  # a start writes a few KiB; more is a loop, not worth reading
ADDRESS_IN_USE = "Address already in use"
# How a ClickHouse server says its start failed: the exception that ends it (18.16 and modern
# servers log it as `<Error> Application: ...`), a fatal signal (`<Fatal>`), or the modern
# engine's top-level `Code: N. DB::Exception` on stderr.
_FATAL = re.compile(r"<(?:Error|Fatal)> Application: |<Fatal> |^Code: \d+\. DB::Exception")


def tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - TAIL_BYTES))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


@dataclass(frozen=True)
class LogMark:
    """Where each of a server's log files ended when it was (re)started."""

    offsets: tuple[tuple[Path, int], ...]

    @classmethod
    def at_end_of(cls, paths: Iterable[Path]) -> LogMark:
        return cls(tuple((path, _size(path)) for path in paths))

    def lines_since(self) -> list[str]:
        """The lines written to the logs since the mark, file by file."""
        lines: list[str] = []
        for path, offset in self.offsets:
            try:
                with path.open("rb") as f:
                    f.seek(offset)
                    text = f.read(SINCE_START_BYTES).decode("utf-8", errors="replace")
            except OSError:
                continue
            lines.extend(text.splitlines())
        return lines


def fatal_lines(lines: Iterable[str]) -> list[str]:
    return [line for line in lines if _FATAL.search(line)]


def port_taken(lines: Iterable[str]) -> bool:
    """The server could not bind a port chperf chose for it: another program took it between
    chperf's choice and the server's bind."""
    return any(ADDRESS_IN_USE in line for line in lines)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
