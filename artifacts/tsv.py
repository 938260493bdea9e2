"""TabSeparatedWithNames files of typed rows, with ClickHouse's escaping so chDB reads them. A
row type is a frozen dataclass whose fields are the columns, in order; columns are only ever
appended, with a default, so a reader takes files written before a column existed."""

from __future__ import annotations

import contextlib
import errno
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import MISSING, Field, dataclass, fields
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from artifacts.files import WriteFailed, write_atomically
from artifacts.values import SECONDS, ImpossibleValue, impossible, seconds

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")


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
        return ", ".join(f"{f.name} {_CH_TYPES[_kind(f)]}" for f in fields(self.row_type))


_CH_TYPES = {
    "seconds": "Float64",
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


def _kind(column: Field[object]) -> str:
    """How a column is parsed: "seconds" for a time column, else by its type."""
    return "seconds" if column.metadata.get("unit") == SECONDS["unit"] else str(column.type)


def _parser(
    column: Field[object], known: dict[str, Callable[[str], object]]
) -> Callable[[str], object]:
    kind = _kind(column)
    if kind == "seconds":
        return partial(seconds, column=column.name)
    parse = known.get(kind)
    if parse is None:
        raise AssertionError(f"unsupported column type {column.type}")
    return parse


@cache
def _column_parsers(row_type: type) -> tuple[Callable[[str], object], ...]:
    """The parser of each column of a row type, in field order, looked up once per type."""
    return tuple(_parser(column, _PARSERS) for column in fields(row_type))


def format_row(row: DataclassInstance) -> str:
    return "\t".join(_format_value(getattr(row, f.name)) for f in fields(row)) + "\n"


class TableWriter(Generic[R]):
    """Appends rows to one TSV file as whole lines, each write straight to the file, so a crash
    keeps what was measured. A write that fails (a full disk) is cut back to the last whole
    line and raised as WriteFailed: a reader never finds half a row."""

    def __init__(self, directory: Path, table: Table[R]) -> None:
        self.path = directory / table.file
        self.table: Table[R] = table
        self._size = 0  # bytes of whole lines in the file
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC
            self._fd: int | None = os.open(self.path, flags, 0o666)
        except OSError as e:
            raise WriteFailed(self.path, e, hint=_TABLE_HINT) from e
        self._append("\t".join(table.columns) + "\n")

    def write(self, row: R) -> None:
        self._append(format_row(row))

    def write_all(self, rows: Iterable[R]) -> None:
        text = "".join(format_row(row) for row in rows)
        if text:
            self._append(text)

    def _append(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        try:
            if self._fd is None:
                raise OSError(errno.EBADF, "the table was closed")
            written = 0
            while written < len(data):  # a write to a nearly full disk may be short
                written += os.write(self._fd, data[written:])
        except OSError as e:
            self._cut_back()
            raise WriteFailed(self.path, e, hint=_TABLE_HINT) from e
        self._size += len(data)

    def _cut_back(self) -> None:
        """Drop the part of a line a failed write left; truncating needs no free space."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)

    def close(self) -> None:
        """fsync and close; safe to call twice, and after a failed write."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.fsync(fd)  # a file system that allocates late reports a full disk here
        except OSError as e:
            raise WriteFailed(self.path, e, hint=_TABLE_HINT) from e
        finally:
            os.close(fd)


_TABLE_HINT = (
    "free space on that file system (or make it writable); the rows written before are kept "
    "whole, and `chperf compare` on the directory judges them"
)


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
    """The rows, and the lines that could not be read as problems (a torn last line, a bad
    value). A value no measurement gives (ImpossibleValue) raises ChperfError naming
    file:line (exit 2)."""
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
            row = _parse_line(path, table, present, line, number, problems)
            if row is not None:
                rows.append(row)
    return TableContents(tuple(rows), tuple(problems), False)


# Converters of the fast path: builtins, for files without escapes, NULLs or damage.
_CLEAN: dict[str, Callable[[str], object]] = {"str": str, "int": int, "float": float}


def _read_clean(path: Path, table: Table[R]) -> tuple[R, ...] | None:
    """The rows of an undamaged file with every column present, parsed with builtins (a
    third of the time of the checked path on a run's 100,000 runs); None when anything
    needs the checked path: an escape, a NULL, a missing column, a bad value, a truncated
    line, a non-finite float, an impossible time. Same rows as the checked path."""
    columns = fields(table.row_type)
    if any(_kind(c) not in (*_CLEAN, "seconds") for c in columns):
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
    converters = [_parser(c, _CLEAN) for c in columns]
    parse = table.parse_clean or (
        lambda values: table.row_type(*(c(v) for c, v in zip(converters, values, strict=True)))
    )
    rows = []
    try:
        for line in body[:-1].split("\n") if body else ():
            values = line.split("\t")
            if len(values) != len(columns):
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
    path: Path, table: Table[R], present: int, line: str, number: int, problems: list[ReadProblem]
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
    except ImpossibleValue as e:
        raise impossible(path, number, e) from e
    except ValueError as e:
        problems.append(ReadProblem(table.file, number, f"bad value: {e}"))
        return None
    return table.row_type(*parsed)


def write_rows(path: Path, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> Path:
    """A whole file at once, atomically: readers never see half of it."""
    lines = ["\t".join(columns) + "\n"]
    lines.extend("\t".join(_format_value(v) for v in row) + "\n" for row in rows)
    return write_atomically(path, "".join(lines))
