"""TabSeparatedWithNames files of typed rows, with ClickHouse's escaping so chDB reads them. A
row type is a frozen dataclass whose fields are the columns, in order; columns are only ever
appended, with a default, so a reader takes files written before a column existed."""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import MISSING, dataclass, fields
from functools import cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Generic, TypeVar

from artifacts.errors import ChperfError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")
T = TypeVar("T")


@dataclass(frozen=True)
class Table(Generic[R]):
    file: str
    row_type: type[R]
    # A row from its fields, with builtins only, for a large table's fast path (_read_clean).
    parse_clean: Callable[[list[str]], R] | None = None

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
    "int | None": "Nullable(Int64)",
    "str | None": "Nullable(String)",
}

_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\0": "\\0"}
_UNESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r", "0": "\0", "'": "'", "b": "\b"}


_ESCAPE_TABLE = str.maketrans(_ESCAPES)


def escape(value: str) -> str:
    return value.translate(_ESCAPE_TABLE)


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
    kind = type(value)
    if kind is float:
        return repr(value)
    if kind is int:
        return str(value)
    if kind is str:
        return str.translate(value, _ESCAPE_TABLE)  # type: ignore[arg-type]
    if isinstance(value, float):
        return repr(value)
    return escape(str(value))


def _text(text: str) -> str:
    return unescape(text) if "\\" in text else text


def _finite(text: str) -> float:
    """A float column never holds inf or nan: no writer of ours produces one, so one in a
    file is damage (or a hand edit) and must not pass as a measurement."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite number")
    return value


def _optional(parse: Callable[[str], object]) -> Callable[[str], object]:
    return lambda text: None if text == "\\N" else parse(text)


_PARSERS: dict[str, Callable[[str], object]] = {
    "str": _text,
    "int": int,
    "float": _finite,
    "float | None": _optional(_finite),
    "int | None": _optional(int),
    "str | None": _optional(_text),
}


@cache
def _column_parsers(row_type: type) -> tuple[Callable[[str], object], ...]:
    """The parser of each column of a row type, in field order, looked up once per type."""
    found = []
    for column in fields(row_type):
        parse = _PARSERS.get(str(column.type))
        if parse is None:
            raise AssertionError(f"unsupported column type {column.type}")
        found.append(parse)
    return tuple(found)


def format_row(row: DataclassInstance) -> str:
    return "\t".join(_format_value(getattr(row, f.name)) for f in fields(row)) + "\n"


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
    fast = _read_clean(path, table)
    if fast is not None:
        return TableContents(fast, (), False)
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


# Converters of the fast path: builtins, for files without escapes, NULLs or damage.
_CLEAN: dict[str, Callable[[str], object]] = {"str": str, "int": int, "float": float}


def _read_clean(path: Path, table: Table[R]) -> tuple[R, ...] | None:
    """The rows of an undamaged file with every column present, parsed with builtins (a
    third of the time of the checked path on a run's 100,000 runs); None when anything
    needs the checked path: an escape, a NULL, a missing column, a bad value, a truncated
    line, a non-finite float. Same rows as the checked path."""
    names = [str(c.type) for c in fields(table.row_type)]
    if any(n not in _CLEAN for n in names):
        return None
    text = path.read_text(encoding="utf-8", errors="replace")
    header, _, body = text.partition("\n")
    if header.split("\t") != list(table.columns) or "\\" in body:
        return None
    if body and not body.endswith("\n"):
        return None
    lowered = body.lower()
    if "inf" in lowered or "nan" in lowered:
        return None  # maybe a non-finite float (or just a name holding the letters)
    converters = [_CLEAN[name] for name in names]
    parse = table.parse_clean or (
        lambda values: table.row_type(*(c(v) for c, v in zip(converters, values, strict=True)))
    )
    rows = []
    try:
        for line in body[:-1].split("\n") if body else ():
            values = line.split("\t")
            if len(values) != len(names):
                return None
            rows.append(parse(values))
    except ValueError:
        return None
    return tuple(rows)


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
    parsers = _column_parsers(table.row_type)[:present]
    if len(values) != len(parsers):
        problems.append(
            ReadProblem(table.file, number, f"expected {len(parsers)} columns, found {len(values)}")
        )
        return None
    try:
        # Positionally, in field order: the leading `present` fields (the rest default).
        parsed = [parse(v) for parse, v in zip(parsers, values, strict=True)]
    except ValueError as e:
        problems.append(ReadProblem(table.file, number, f"bad value: {e}"))
        return None
    return table.row_type(*parsed)


NULL = "\\N"


@dataclass(frozen=True)
class Columns(Generic[T]):
    """Rows read by column name, and what could not be read (never raised)."""

    file: str
    rows: tuple[T, ...]
    problems: tuple[ReadProblem, ...]
    missing: bool  # the file does not exist

    def strict(self, directory: Path, hint: str) -> tuple[T, ...]:
        """The rows, or a ChperfError naming the first unreadable line (exit 2)."""
        if self.problems and not self.missing:
            raise ChperfError(f"{directory / self.file}: {self.problems[0]}", hint=hint)
        return self.rows


def read_columns(
    directory: Path,
    file: str,
    required: Sequence[str],
    columns: Sequence[str],
    make: Callable[[Sequence[str]], T],
) -> Columns[T]:
    """Rows of `file` as make(the raw values of `columns`, in that order). Columns in
    `required` must be in the header; the others read as NULL when the header lacks them.
    Only the wanted columns are picked, positionally: ~10x faster than full rows on 100k."""
    path = directory / file
    if not path.exists():
        return Columns(file, (), (ReadProblem(file, 0, "file is missing"),), True)
    rows: list[T] = []
    problems: list[ReadProblem] = []
    with path.open(encoding="utf-8", errors="replace", newline="\n") as f:
        header = f.readline().rstrip("\n").split("\t")
        absent = [c for c in required if c not in header]
        if absent:
            message = f"header lacks the columns {', '.join(absent)}"
            return Columns(file, (), (ReadProblem(file, 1, message),), False)
        width = len(header)
        # An absent column points one past the end, where a NULL is appended.
        positions = [header.index(c) if c in header else width for c in columns]
        select = operator.itemgetter(*positions)
        for number, line in enumerate(f, start=2):
            values = line[:-1].split("\t")
            if not line.endswith("\n"):
                problems.append(ReadProblem(file, number, "truncated line (no end of line)"))
                continue
            if len(values) != width:
                message = f"expected {width} columns, found {len(values)}"
                problems.append(ReadProblem(file, number, message))
                continue
            values.append(NULL)
            try:
                rows.append(make(select(values)))
            except ValueError as e:
                problems.append(ReadProblem(file, number, f"bad value: {e}"))
    return Columns(file, tuple(rows), tuple(problems), False)


def optional_float(text: str) -> float | None:
    if text == NULL or text == "":
        return None
    value = float(text)
    return None if math.isnan(value) else value


def optional_int(text: str) -> int | None:
    return None if text in (NULL, "") else int(text)


def optional_text(text: str) -> str:
    return "" if text == NULL else unescape(text)


def write_rows(path: Path, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> Path:
    """A whole file at once, atomically: readers never see half of it."""
    lines = ["\t".join(columns) + "\n"]
    lines.extend("\t".join(_format_value(v) for v in row) + "\n" for row in rows)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(lines), encoding="utf-8")
    tmp.replace(path)
    return path
