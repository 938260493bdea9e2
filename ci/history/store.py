"""The only module that talks to the history database. Every failure is an
InfrastructureError (exit 3) that names the server, never the password."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clickhouse_driver import Client
from clickhouse_driver import errors as driver_errors

from artifacts.errors import InfrastructureError
from ci.history.records import UploadBatch
from ci.history.target import HistoryTarget

SQL_DIR = Path(__file__).resolve().parent
CONNECT_TIMEOUT_S = 10
QUERY_TIMEOUT_S = 300
_FAILURES = (driver_errors.Error, OSError, EOFError)


def sql_text(name: str) -> str:
    return (SQL_DIR / name).read_text(encoding="utf-8")


def schema_statements() -> list[str]:
    lines = [line for line in sql_text("schema.sql").splitlines() if not line.startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


@dataclass(frozen=True)
class TableUpload:
    table: str
    rows: int
    skipped: bool  # the table already held rows of this run


class HistoryStore:
    def __init__(self, target: HistoryTarget) -> None:
        self.target = target
        self._client = self._connect(target.database)

    def _connect(self, database: str) -> Any:
        t = self.target
        return Client(
            host=t.host,
            port=t.port,
            user=t.user,
            password=t.password,
            database=database,
            secure=t.secure,
            connect_timeout=CONNECT_TIMEOUT_S,
            send_receive_timeout=QUERY_TIMEOUT_S,
            sync_request_timeout=CONNECT_TIMEOUT_S,
        )

    def close(self) -> None:
        self._client.disconnect()

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except _FAILURES as e:
            raise InfrastructureError(
                f"{self.target.describe()}: {what} failed: {_first_line(e)}",
                hint="check that the server is up and the URL, user and password are right; "
                "the check's own result does not depend on the history",
            ) from e

    def ensure_schema(self) -> None:
        with self._errors("connecting"):
            bootstrap = self._connect("default")
            try:
                # The name is validated as an identifier in target.parse_url.
                bootstrap.execute(f"CREATE DATABASE IF NOT EXISTS `{self.target.database}`")
            finally:
                bootstrap.disconnect()
        with self._errors("creating the tables"):
            for statement in schema_statements():
                self._client.execute(statement)

    def upload(self, batch: UploadBatch) -> list[TableUpload]:
        results = []
        for table, columns, rows in batch.tables:
            with self._errors(f"uploading to {table}"):
                if self._count(table, batch.run_id):
                    results.append(TableUpload(table, 0, skipped=True))
                    continue
                if rows:
                    self._client.execute(
                        f"INSERT INTO {table} ({', '.join(columns)}) VALUES", list(rows)
                    )
            results.append(TableUpload(table, len(rows), skipped=False))
        return results

    def _count(self, table: str, run_id: str) -> int:
        sql = sql_text("count_run.sql").format(table=table)
        return int(self._client.execute(sql, {"run_id": run_id})[0][0])

    def count_rows(self, table: str, run_id: str) -> int:
        with self._errors(f"counting {table}"):
            return self._count(table, run_id)

    def fetch(self, name: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        with self._errors("reading the history"):
            rows: list[tuple[Any, ...]] = self._client.execute(sql_text(name), params)
        return rows


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]
