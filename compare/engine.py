"""The narrow interface to chDB (clickhouse-local as a library), the only module importing it.
Statements come from compare/*.sql; values reach them as query parameters (`{name:Type}`) or
as input files whose path is a parameter, never pasted into the SQL text.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from chdb import session as chdb_session

from artifacts.errors import InfrastructureError
from artifacts.scratch import make_scratch, sweep

SQL_DIR = Path(__file__).resolve().parent
# The chDB session's files and compare's input files, under TMPDIR.
SCRATCH_PREFIX = "chperf-compare-"

Params = Mapping[str, str | int | float]


def sql_text(name: str) -> str:
    """The text of compare/<name> (a .sql file shipped as package data)."""
    return (SQL_DIR / name).read_text(encoding="utf-8")


class SqlEngine:
    """One chDB session with a private scratch directory for input files and tables."""

    def __init__(self) -> None:
        sweep(SCRATCH_PREFIX)  # left by a chperf that was killed (artifacts/scratch.py)
        self.scratch = make_scratch(SCRATCH_PREFIX)
        self._session = chdb_session.Session(str(self.scratch / "chdb"))  # type: ignore[no-untyped-call]
        # No JIT: compare's queries each run once over small data, and chDB compiles an
        # expression again in every new session once the process has seen it often enough,
        # which made the first blocked.sql of a session 3x slower (0.3 s against 0.1 s).
        self.execute(
            "SET compile_expressions = 0, compile_aggregate_expressions = 0, "
            "compile_sort_description = 0",
            source="engine.py",
        )

    def __enter__(self) -> SqlEngine:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._session.close()  # type: ignore[no-untyped-call]
        shutil.rmtree(self.scratch, ignore_errors=True)

    def execute(self, statement: str, params: Params | None = None, *, source: str) -> str:
        """Run one statement; `source` names the .sql file in error messages."""
        try:
            text_params = _as_strings(params or {})
            result = self._session.query(statement, "TSV", params=text_params)  # type: ignore[no-untyped-call]
        except Exception as e:  # chDB raises its own exception types for every SQL error
            raise InfrastructureError(
                f"chDB failed running compare/{source}: {_shorten(str(e))}",
                hint="this is a bug in chperf's compare SQL; rerun with -v and report it",
            ) from e
        return bytes(result.bytes()).decode("utf-8")

    def json_rows(self, name: str, params: Params | None = None) -> list[list[Any]]:
        """The rows of compare/<name> as JSON values (JSONCompactEachRow): arrays of numbers
        come back parsed by json's C decoder, not as text to split."""
        try:
            text_params = _as_strings(params or {})
            result = self._session.query(  # type: ignore[no-untyped-call]
                sql_text(name), "JSONCompactEachRow", params=text_params
            )
        except Exception as e:  # chDB raises its own exception types for every SQL error
            raise InfrastructureError(
                f"chDB failed running compare/{name}: {_shorten(str(e))}",
                hint="this is a bug in chperf's compare SQL; rerun with -v and report it",
            ) from e
        text = bytes(result.bytes()).decode("utf-8")
        return [json.loads(line) for line in text.splitlines() if line]

    def binary(self, name: str, params: Params | None = None) -> bytes:
        """The rows of compare/<name> in ClickHouse's RowBinary layout, for numpy to read."""
        try:
            result = self._session.query(  # type: ignore[no-untyped-call]
                sql_text(name), "RowBinary", params=_as_strings(params or {})
            )
        except Exception as e:  # chDB raises its own exception types for every SQL error
            raise InfrastructureError(
                f"chDB failed running compare/{name}: {_shorten(str(e))}",
                hint="this is a bug in chperf's compare SQL; rerun with -v and report it",
            ) from e
        return bytes(result.bytes())

    def rows(self, name: str, params: Params | None = None) -> list[list[str]]:
        """The TSV rows of compare/<name> as raw fields: `\\N` is NULL and strings still carry
        TSV escapes (artifacts/tsv.py unescape)."""
        text = self.execute(sql_text(name), params, source=name)
        return [line.split("\t") for line in text.splitlines()]

    def insert(self, table: str, name: str, params: Params | None = None) -> None:
        self.execute(f"INSERT INTO {table} {sql_text(name)}", params, source=name)

    def create_table(self, table: str, name: str, params: Params | None = None) -> None:
        self.execute(f"DROP TABLE IF EXISTS {table}", source=name)
        self.execute(
            f"CREATE TABLE {table} ENGINE = Memory AS {sql_text(name)}", params, source=name
        )


def _as_strings(params: Params) -> dict[str, str]:
    return {k: repr(v) if isinstance(v, float) else str(v) for k, v in params.items()}


def _shorten(message: str, limit: int = 1500) -> str:
    # chDB quotes the offending input in its messages, which can be megabytes long
    return message if len(message) <= limit else message[:limit] + " ... (truncated)"
