"""Control queries over the native protocol (clickhouse-driver): version, capabilities,
flushing and reading system.query_log. Test queries go through `runner.executor`."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clickhouse_driver import Client

from runner.server import Capabilities
from runner.serverconfig import LISTEN_HOST

CONTROL_TIMEOUT_S = 60.0
# Rows of query_log per request: keeps the IN list and the reply small.
QUERY_LOG_BATCH = 500
# query_log.type of a finished query: QueryFinish = 2 (a UInt8 on old servers, an Enum8 on
# new ones; toInt8 reads both).
QUERY_FINISH = 2

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
        events = "arrays" if "ProfileEvents.Names" in columns else "map"
        throw_if_noop = self.execute(
            "SELECT count() FROM system.settings WHERE name = 'optimize_throw_if_noop'"
        )
        return Capabilities(
            trace_log=self._has_table("trace_log"),
            profile_events=events,
            optimize_throw_if_noop=bool(throw_if_noop[0][0]),
        )

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
