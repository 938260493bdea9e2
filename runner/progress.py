"""Progress on stderr: test, query, runs done, elapsed and ETA; redrawn in place on a terminal
(the CLI decides), else one line per query (CI logs)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from artifacts.console import console_text


def format_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Progress:
    def __init__(
        self, total_queries: int, runs: int, stream: TextIO | None = None, redraw: bool = False
    ) -> None:
        self.total = total_queries
        self.runs = runs
        self.done = 0
        self.stream = stream or sys.stderr
        self.tty = redraw  # redraw one line in place: a terminal, and NO_COLOR unset
        self.start = time.monotonic()
        self.current = ""

    def start_query(self, test: str, query_index: int, name: str = "") -> None:
        label = f" ({console_text(name, 60)})" if name else ""
        self.current = f"{test} query {query_index}{label}"
        self._draw("running")

    def end_query(self, note: str = "") -> None:
        self.done += 1
        self._draw(note or "done", final=not self.tty)

    def activity(self, what: str, state: str) -> None:
        """Work between measured queries (profile runs): shown without counting a query."""
        self.current = what
        self._draw(state, final=not self.tty)

    def skip_queries(self, count: int) -> None:
        self.done += count

    def eta(self) -> float | None:
        if self.done == 0:
            return None
        elapsed = time.monotonic() - self.start
        return elapsed / self.done * (self.total - self.done)

    def line(self, state: str) -> str:
        elapsed = time.monotonic() - self.start
        eta = self.eta()
        eta_text = format_duration(eta) if eta is not None else "?"
        return (
            f"[{self.done}/{self.total}] {self.current}: {state}"
            f" | elapsed {format_duration(elapsed)}, ETA {eta_text}"
        )

    def _draw(self, state: str, final: bool = False) -> None:
        text = self.line(state)
        if self.tty:
            self.stream.write("\r\033[K" + text)
        elif final:
            self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\n")
        elapsed = format_duration(time.monotonic() - self.start)
        self.stream.write(f"chperf: {self.done}/{self.total} queries in {elapsed}\n")
        self.stream.flush()
