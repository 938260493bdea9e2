"""The run's tables, open for appending while a run measures (formats: docs/formats.md)."""

from __future__ import annotations

from pathlib import Path

from artifacts.files import WriteFailed
from artifacts.loadblocks import LOAD_BLOCKS
from artifacts.protocols import PROTOCOL_PROBLEMS, PROTOCOL_RUNS
from artifacts.results import RESULTS
from artifacts.tables import (
    ERRORS,
    MONITOR,
    PROFILE_EVENTS,
    QUERIES,
    QUERY_LOG,
    RUNS,
    STOPS,
    TESTS,
)
from artifacts.tsv import TableWriter


class Writers:
    def __init__(self, out: Path) -> None:
        self.queries = TableWriter(out, QUERIES)
        self.runs = TableWriter(out, RUNS)
        self.query_log = TableWriter(out, QUERY_LOG)
        self.profile_events = TableWriter(out, PROFILE_EVENTS)
        self.errors = TableWriter(out, ERRORS)
        self.tests = TableWriter(out, TESTS)
        self.stops = TableWriter(out, STOPS)
        self.monitor = TableWriter(out, MONITOR)
        self.load_blocks = TableWriter(out, LOAD_BLOCKS)
        self.protocol_runs = TableWriter(out, PROTOCOL_RUNS)
        self.protocol_problems = TableWriter(out, PROTOCOL_PROBLEMS)
        self.results = TableWriter(out, RESULTS)

    def close(self) -> None:
        """Close every table, also when one fails (a full disk); then raise the first failure."""
        failed: WriteFailed | None = None
        for writer in (w for w in vars(self).values() if isinstance(w, TableWriter)):
            try:
                writer.close()
            except WriteFailed as e:
                failed = failed or e
        if failed is not None:
            raise failed
