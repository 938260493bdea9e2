"""The artifact contract between stages: TSV tables and the run.json manifest.

Every stage reads and writes these files only, so each stage can be rerun from its inputs.
TSV files use ClickHouse's TabSeparatedWithNames escaping (backslash escapes for tab,
newline and backslash; ``\\N`` for NULL) so chDB can read them directly.

Format history (bump ``SCHEMA_VERSION`` on incompatible changes):
  1 — first version: queries, runs, query_log, profile_events, errors, tests tables;
      stops.tsv (why each query's measurement ended) added compatibly: readers treat a
      missing stops.tsv as "not recorded".
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

from chperf.errors import ChperfError

SCHEMA_VERSION = 1
MANIFEST = "run.json"

# Stages in errors.tsv: where a problem happened.
STAGE_PARSE = "parse"  # the test file could not be read
STAGE_SETUP = "setup"  # create/fill queries
STAGE_PREWARM = "prewarm"
STAGE_RUN = "run"
STAGE_TEARDOWN = "teardown"  # drop queries after the test
STAGE_SERVER = "server"  # a server died, hung or was restarted
STAGE_QUERY_LOG = "query_log"  # reading system.query_log after the runs

# Sides. The test-level pseudo side for problems that concern both servers.
REFERENCE = "reference"
PATCHED = "patched"
BOTH = "both"
SIDES = (REFERENCE, PATCHED)

# query_index used in errors.tsv for a problem of the whole test (parse, setup).
WHOLE_TEST = -1


@dataclass(frozen=True)
class QueryRow:
    test: str
    query_index: int
    query: str
    max_ignored_relative_change: float | None


@dataclass(frozen=True)
class RunRow:
    test: str
    query_index: int
    server: str
    run: int
    query_id: str
    client_time: float  # seconds, wall time around the run with the result fully received
    process: int = 0  # which server process of its side ran it (runner/schedule.server_set)


@dataclass(frozen=True)
class QueryLogRow:
    test: str
    query_index: int
    server: str
    run: int
    query_id: str
    server_time: float  # seconds (query_duration_ms / 1000)
    read_rows: int
    read_bytes: int
    memory_usage: int


@dataclass(frozen=True)
class ProfileEventRow:
    query_id: str
    server: str
    event: str
    value: int


@dataclass(frozen=True)
class ErrorRow:
    test: str
    query_index: int  # WHOLE_TEST for problems of the whole test
    server: str  # reference, patched or both
    stage: str
    error_code: int  # ClickHouse error code, 0 when there is none
    message: str


@dataclass(frozen=True)
class TestRow:
    test: str
    file: str
    status: str  # ran, skipped, error
    reason: str
    wall_time: float  # seconds spent on the test, setup and teardown included


@dataclass(frozen=True)
class StopRow:
    """Why the measurement of a query ended (adaptive mode; fixed mode: "fixed N runs")."""

    test: str
    query_index: int
    runs: int  # measured runs per side when it stopped
    reason: str


Row = QueryRow | RunRow | QueryLogRow | ProfileEventRow | ErrorRow | TestRow | StopRow
R = TypeVar("R", QueryRow, RunRow, QueryLogRow, ProfileEventRow, ErrorRow, TestRow, StopRow)


@dataclass(frozen=True)
class Table(Generic[R]):
    file: str
    row_type: type[R]

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self.row_type))

    def chdb_structure(self) -> str:
        """The column list for chDB's file()/table functions, e.g. 'test String, run UInt32'."""
        return ", ".join(f"{f.name} {_CH_TYPES[str(f.type)]}" for f in fields(self.row_type))


_CH_TYPES = {
    "str": "String",
    "int": "Int64",
    "float": "Float64",
    "float | None": "Nullable(Float64)",
}

QUERIES = Table("queries.tsv", QueryRow)
RUNS = Table("runs.tsv", RunRow)
QUERY_LOG = Table("query_log.tsv", QueryLogRow)
PROFILE_EVENTS = Table("profile_events.tsv", ProfileEventRow)
ERRORS = Table("errors.tsv", ErrorRow)
TESTS = Table("tests.tsv", TestRow)
STOPS = Table("stops.tsv", StopRow)
ALL_TABLES: tuple[Table[Any], ...] = (
    QUERIES,
    RUNS,
    QUERY_LOG,
    PROFILE_EVENTS,
    ERRORS,
    TESTS,
    STOPS,
)


# --- escaping -----------------------------------------------------------------------------

_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\0": "\\0"}
_UNESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r", "0": "\0", "'": "'", "b": "\b"}


def escape(value: str) -> str:
    return "".join(_ESCAPES.get(c, c) for c in value)


def unescape(value: str) -> str:
    if "\\" not in value:
        return value
    out: list[str] = []
    chars = iter(value)
    for c in chars:
        if c == "\\":
            nxt = next(chars, "")
            out.append(_UNESCAPES.get(nxt, nxt))
        else:
            out.append(c)
    return "".join(out)


def _format_value(value: object) -> str:
    if value is None:
        return "\\N"
    if isinstance(value, float):
        return repr(value)
    return escape(str(value))


def _parse_value(text: str, type_name: str) -> object:
    if type_name == "str":
        return unescape(text)
    if type_name == "int":
        return int(text)
    if type_name == "float":
        return float(text)
    if type_name == "float | None":
        return None if text == "\\N" else float(text)
    raise AssertionError(f"unsupported column type {type_name}")


def format_row(row: Row) -> str:
    return "\t".join(_format_value(getattr(row, f.name)) for f in fields(row)) + "\n"


# --- writing ------------------------------------------------------------------------------


class TableWriter(Generic[R]):
    """Appends rows to one TSV file, flushed per row so a crash keeps what was measured."""

    def __init__(self, directory: Path, table: Table[R]) -> None:
        self.path = directory / table.file
        self.table: Table[R] = table
        self._file: IO[str] = self.path.open("w", encoding="utf-8")
        self._file.write("\t".join(table.columns) + "\n")
        self._file.flush()

    def write(self, row: R) -> None:
        self._file.write(format_row(row))
        self._file.flush()

    def write_all(self, rows: Iterable[R]) -> None:
        for row in rows:
            self._file.write(format_row(row))
        self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()


def write_table(directory: Path, table: Table[R], rows: Iterable[R]) -> Path:
    writer = TableWriter(directory, table)
    try:
        writer.write_all(rows)
    finally:
        writer.close()
    return writer.path


# --- reading ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadProblem:
    """A line of an artifact that could not be read; recorded, never raised."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass(frozen=True)
class TableContents(Generic[R]):
    rows: tuple[R, ...]
    problems: tuple[ReadProblem, ...]
    missing: bool  # the file does not exist


def read_table(directory: Path, table: Table[R]) -> TableContents[R]:
    path = directory / table.file
    if not path.exists():
        return TableContents((), (ReadProblem(table.file, 0, "file is missing"),), True)
    rows: list[R] = []
    problems: list[ReadProblem] = []
    with path.open(encoding="utf-8", errors="replace", newline="\n") as f:
        lines = iter(f)
        header = next(lines, None)
        present = _present_columns(table, header)
        if present is None:
            expected = " ".join(table.columns)
            problems.append(ReadProblem(table.file, 1, f"header is not the columns {expected}"))
            return TableContents((), tuple(problems), False)
        for number, line in enumerate(lines, start=2):
            row = _parse_line(table, present, line, number, problems)
            if row is not None:
                rows.append(row)
    return TableContents(tuple(rows), tuple(problems), False)


def _present_columns(table: Table[R], header: str | None) -> int | None:
    """How many of the table's columns the file has: all of them, or (a file written before
    a column with a default was added) a leading part that leaves out only such columns."""
    if header is None:
        return None
    names = header.rstrip("\n").split("\t")
    columns = fields(table.row_type)
    if names != list(table.columns)[: len(names)]:
        return None
    missing = columns[len(names) :]
    if any(c.default is MISSING for c in missing):
        return None
    return len(names)


def _parse_line(
    table: Table[R], present: int, line: str, number: int, problems: list[ReadProblem]
) -> R | None:
    if not line.endswith("\n"):
        problems.append(ReadProblem(table.file, number, "truncated line (no end of line)"))
        return None
    values = line[:-1].split("\t")
    columns = fields(table.row_type)[:present]
    if len(values) != len(columns):
        problems.append(
            ReadProblem(table.file, number, f"expected {len(columns)} columns, found {len(values)}")
        )
        return None
    try:
        parsed: dict[str, Any] = {
            c.name: _parse_value(v, str(c.type)) for c, v in zip(columns, values, strict=True)
        }
    except ValueError as e:
        problems.append(ReadProblem(table.file, number, f"bad value: {e}"))
        return None
    return table.row_type(**parsed)


# --- the manifest -------------------------------------------------------------------------


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    """Write run.json atomically (a crash never leaves half a manifest)."""
    data = {"schema_version": SCHEMA_VERSION, **manifest}
    tmp = directory / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=_json_default) + "\n")
    tmp.replace(directory / MANIFEST)


def _json_default(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot serialize {type(value).__name__}")


def read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    if not path.exists():
        raise ChperfError(
            f"{path}: no run manifest",
            hint="point at a directory written by `chperf run` (it holds run.json)",
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ChperfError(f"{path}: cannot read the run manifest: {e}") from e
    if not isinstance(data, dict):
        raise ChperfError(f"{path}: the run manifest is not a JSON object")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ChperfError(
            f"{path}: schema_version {version!r}, this chperf reads {SCHEMA_VERSION}",
            hint="rerun `chperf run` with this version of chperf, or use the chperf "
            "version that wrote these artifacts",
        )
    return data
