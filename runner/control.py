"""Control queries over the native protocol (clickhouse-driver): version, capabilities,
flushing and reading system.query_log. Test queries go through `runner.executor`."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clickhouse_driver import Client
from clickhouse_driver.errors import ServerException

from runner.server import Capabilities
from runner.serverconfig import LISTEN_HOST

CONTROL_TIMEOUT_S = 60.0
# Rows of query_log per request: keeps the IN list and the reply small.
QUERY_LOG_BATCH = 500
# query_log.type of a finished query: QueryFinish = 2 (a UInt8 on old servers, an Enum8 on
# new ones; toInt8 reads both).
QUERY_FINISH = 2

# The columns of query_log chperf reads (ProfileEvents: as a Map or as Names/Values arrays).
QUERY_LOG_COLUMNS = ("query_duration_ms", "read_rows", "read_bytes", "memory_usage")
PROFILER_SETTINGS = frozenset(
    {"query_profiler_real_time_period_ns", "query_profiler_cpu_time_period_ns"}
)
# Settings chperf sets on some servers: those a server lacks are recorded with its capabilities.
USED_SETTINGS = PROFILER_SETTINGS | {
    "optimize_throw_if_noop",
    "allow_introspection_functions",
    "log_queries",
    "max_execution_time",
}
# A query of ~0.1-0.2 s profiled at 1 ms: a sampling profiler leaves dozens of rows.
PROBE_QUERY = "SELECT sum(cityHash64(number)) FROM numbers(20000000)"
PROBE_PERIOD_NS = 1_000_000

# The driver logs reconnects (after a server restart) as warnings on stderr; chperf records
# server incidents itself, with context, in errors.tsv.
logging.getLogger("clickhouse_driver").setLevel(logging.CRITICAL)


@dataclass(frozen=True)
class QueryLogEntry:
    query_id: str
    server_time: float
    read_rows: int
    read_bytes: int
    memory_usage: int
    profile_events: tuple[tuple[str, int], ...]


class ControlClient:
    def __init__(self, port: int) -> None:
        self._client = Client(
            host=LISTEN_HOST,
            port=port,
            connect_timeout=5,
            send_receive_timeout=CONTROL_TIMEOUT_S,
            sync_request_timeout=CONTROL_TIMEOUT_S,
        )

    def close(self) -> None:
        self._client.disconnect()

    def execute(
        self,
        sql: str,
        params: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
    ) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._client.execute(sql, params, settings=settings)
        return rows

    def version(self) -> str:
        return str(self.execute("SELECT version()")[0][0])

    def flush_logs(self) -> None:
        self.execute("SYSTEM FLUSH LOGS")

    def _columns(self, table: str) -> set[str]:
        rows = self.execute(
            "SELECT name FROM system.columns WHERE database = 'system' AND table = %(t)s",
            {"t": table},
        )
        return {str(r[0]) for r in rows}

    def _has_table(self, table: str) -> bool:
        rows = self.execute(
            "SELECT count() FROM system.tables WHERE database = 'system' AND name = %(t)s",
            {"t": table},
        )
        return bool(rows[0][0])

    def detect_capabilities(self) -> Capabilities:
        """Ask the server what it has; log tables appear after the first flush."""
        self.execute("SELECT 1")
        self.flush_logs()
        columns = self._columns("query_log")
        known = self._known_settings()
        trace_log = self._has_table("trace_log")
        return Capabilities(
            trace_log=trace_log,
            profile_events=profile_events_form(columns),
            optimize_throw_if_noop="optimize_throw_if_noop" in known,
            query_profiler=trace_log and PROFILER_SETTINGS <= known and self._profiler_samples(),
            asynchronous_metrics=self._has_table("asynchronous_metrics"),
            missing_query_log_columns=tuple(c for c in QUERY_LOG_COLUMNS if c not in columns),
            unknown_settings=tuple(sorted(USED_SETTINGS - known)),
        )

    def _known_settings(self) -> frozenset[str]:
        rows = self.execute(
            "SELECT name FROM system.settings WHERE name IN %(names)s",
            {"names": tuple(sorted(USED_SETTINGS))},
        )
        return frozenset(str(r[0]) for r in rows)

    def _profiler_samples(self) -> bool:
        """Whether the query profiler samples at all: some engines keep trace_log empty."""
        query_id = f"chperf-profiler-probe-{uuid.uuid4()}"
        settings = {
            "query_profiler_real_time_period_ns": PROBE_PERIOD_NS,
            "query_profiler_cpu_time_period_ns": PROBE_PERIOD_NS,
            "log_queries": 0,
            # an overlay's limits (tests of chperf use some) must not fail the probe
            "max_rows_to_read": 0,
            "max_bytes_to_read": 0,
        }
        try:
            self._client.execute(PROBE_QUERY, settings=settings, query_id=query_id)
        except ServerException:
            return False  # a profile that forbids it: no flame graphs from trace_log
        self.flush_logs()
        rows = self.execute(
            "SELECT count() FROM system.trace_log WHERE query_id = %(id)s", {"id": query_id}
        )
        return bool(rows[0][0])

    def query_log(
        self, query_ids: Sequence[str], capabilities: Capabilities
    ) -> list[QueryLogEntry]:
        entries: list[QueryLogEntry] = []
        for start in range(0, len(query_ids), QUERY_LOG_BATCH):
            batch = tuple(query_ids[start : start + QUERY_LOG_BATCH])
            entries.extend(self._query_log_batch(batch, capabilities))
        return entries

    def _query_log_batch(
        self, query_ids: tuple[str, ...], capabilities: Capabilities
    ) -> list[QueryLogEntry]:
        if capabilities.profile_events == "arrays":
            events = "ProfileEvents.Names, ProfileEvents.Values"
        else:
            events = "mapKeys(ProfileEvents), mapValues(ProfileEvents)"
        rows = self.execute(
            f"SELECT query_id, query_duration_ms, read_rows, read_bytes, memory_usage, {events} "
            "FROM system.query_log "
            "WHERE toInt8(type) = %(finish)s AND is_initial_query AND query_id IN %(ids)s",
            {"finish": QUERY_FINISH, "ids": query_ids},
        )
        return [
            QueryLogEntry(
                query_id=str(r[0]),
                server_time=int(r[1]) / 1000.0,
                read_rows=int(r[2]),
                read_bytes=int(r[3]),
                memory_usage=int(r[4]),
                profile_events=tuple(zip(map(str, r[5]), map(int, r[6]), strict=True)),
            )
            for r in rows
        ]


def profile_events_form(columns: set[str]) -> str:
    """ "map" when query_log has the ProfileEvents Map (modern servers also show
    ProfileEvents.Names/.Values beside it as ALIAS columns), else "arrays"."""
    if "ProfileEvents" in columns:
        return "map"
    return "arrays"
