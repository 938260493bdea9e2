"""The query_log rows of a test's measured runs: read from every server after the test, in
parallel, and written to query_log.tsv and profile_events.tsv."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from artifacts.tables import STAGE_QUERY_LOG, ErrorRow, ProfileEventRow, QueryLogRow
from runner.control import QueryLogEntry
from runner.servers import ServerPair
from runner.writers import Writers

QUERY_LOG_ATTEMPTS = 10
QUERY_LOG_RETRY_S = 0.2


@dataclass
class MeasuredRuns:
    """query_id -> (query_index, run) of successful runs, per (process set, side)."""

    by_server: dict[tuple[int, str], dict[str, tuple[int, int]]] = field(default_factory=dict)

    def add(self, process: int, side: str, qid: str, index: int, run: int) -> None:
        self.by_server.setdefault((process, side), {})[qid] = (index, run)


def collect_query_log(
    sets: Sequence[ServerPair], measured: MeasuredRuns, writers: Writers, test: str
) -> None:
    """Flush and read system.query_log for this test's runs, all servers in parallel; a server
    that cannot answer gets an errors.tsv row, and its runs are kept."""
    servers = sorted(key for key, wanted in measured.by_server.items() if wanted)

    def read(key: tuple[int, str]) -> list[QueryLogEntry] | Exception:
        process, side = key
        try:
            return read_query_log(sets[process], side, sorted(measured.by_server[key]))
        except Exception as e:  # a driver or network error: record it, keep the runs
            return e

    with ThreadPoolExecutor(max_workers=max(len(servers), 1)) as pool:
        results = list(pool.map(read, servers))
    for key, found in zip(servers, results, strict=True):
        side, wanted = key[1], measured.by_server[key]
        entries = found if isinstance(found, list) else []
        if isinstance(found, Exception):
            writers.errors.write(
                ErrorRow(test, -1, side, STAGE_QUERY_LOG, 0, f"reading query_log: {found}")
            )
        write_query_log(writers, test, side, wanted, entries)
        missing = len(wanted) - len({e.query_id for e in entries})
        if missing and entries:
            message = f"{missing} of {len(wanted)} runs have no query_log row"
            writers.errors.write(ErrorRow(test, -1, side, STAGE_QUERY_LOG, 0, message))
        wanted.clear()


def read_query_log(pair: ServerPair, side: str, query_ids: list[str]) -> list[QueryLogEntry]:
    """A server logs a query a moment after its last byte reached the client, so rows of the
    last runs may be missing from the first flush: flush again for those."""
    server = pair.side(side)
    found: dict[str, QueryLogEntry] = {}
    for attempt in range(QUERY_LOG_ATTEMPTS):
        if attempt:
            time.sleep(QUERY_LOG_RETRY_S)
        server.control.flush_logs()
        missing = [q for q in query_ids if q not in found]
        for entry in server.control.query_log(missing, server.capabilities):
            found[entry.query_id] = entry
        if len(found) == len(query_ids):
            break
    return list(found.values())


def write_query_log(
    writers: Writers,
    test: str,
    side: str,
    wanted: dict[str, tuple[int, int]],
    entries: list[QueryLogEntry],
) -> None:
    for entry in entries:
        query_index, run = wanted[entry.query_id]
        writers.query_log.write(
            QueryLogRow(
                test,
                query_index,
                side,
                run,
                entry.query_id,
                entry.server_time,
                entry.read_rows,
                entry.read_bytes,
                entry.memory_usage,
            )
        )
        writers.profile_events.write_all(
            ProfileEventRow(entry.query_id, side, name, value)
            for name, value in entry.profile_events
        )
