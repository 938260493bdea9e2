"""The parsed form of a test file (runner/testdef.py parses it) and its error, which names
file:line. Everything user-supplied in a message (paths, values) is made safe for the console
here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from artifacts.console import console_text
from artifacts.errors import ChperfError
from runner.loaddef import LoadSpec
from runner.protocols import ProtocolSpec

# Paths and messages as shown: long enough for any real path, bounded for a hostile one.
MAX_SHOWN_PATH_CHARS = 1000
MAX_MESSAGE_CHARS = 2000


@dataclass(frozen=True)
class Location:
    path: Path
    line: int

    def __str__(self) -> str:
        return f"{console_text(str(self.path), MAX_SHOWN_PATH_CHARS)}:{self.line}"


@dataclass(frozen=True)
class Diagnostic:
    """A warning about a test file (an unknown legacy element, say) that does not stop it."""

    location: Location
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {console_text(self.message, MAX_MESSAGE_CHARS)}"


@dataclass(frozen=True)
class TestQuery:
    index: int  # position after substitution; (test, index) is the query's identity
    sql: str
    location: Location  # the <query> element it came from
    name: str = ""  # its tag="..." attribute, substituted: a display name


@dataclass(frozen=True)
class Statement:
    """One expanded statement of any kind, with the element it came from (for the linter)."""

    kind: str  # "create_query", "fill_query", "query" or "drop_query"
    sql: str
    location: Location
    name: str = ""  # a <query>'s tag="..." attribute, substituted


@dataclass(frozen=True)
class TestDef:
    name: str  # file stem, e.g. "sum" for sum.xml
    path: Path
    settings: tuple[tuple[str, str], ...]  # session settings, document order
    create_queries: tuple[str, ...]  # substituted, document order
    fill_queries: tuple[str, ...]
    drop_queries: tuple[str, ...]
    queries: tuple[TestQuery, ...]
    tags: frozenset[str]
    max_ignored_relative_change: float | None  # 1.0 or more: never fails the check
    warnings: tuple[Diagnostic, ...]
    # Every expanded statement in document order, create/fill interleaved as written.
    statements: tuple[Statement, ...] = ()
    max_query_seconds: float | None = None  # limit of each prewarm and measured run
    required_tables: tuple[str, ...] = ()  # <preconditions><table_exists>: else skipped
    required_ram_bytes: int | None = None  # <preconditions><ram_size>: else skipped
    profile_all_queries: bool = False  # profile every query, not only the changed ones
    skip_reason: str = ""  # needs what chperf does not provide (requires_s3): skipped
    load: LoadSpec | None = None  # <load>: the queries are a mix run by concurrent clients
    protocols: ProtocolSpec | None = None  # <protocols>: also timed per interface and phase

    @property
    def is_long(self) -> bool:
        return "long" in self.tags


class TestDefError(ChperfError):
    """A test file that cannot be used; names file:line."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, location: Location, message: str, hint: str = "") -> None:
        message = console_text(message, MAX_MESSAGE_CHARS)  # it may quote paths and values
        super().__init__(f"{location}: {message}", hint=hint)
        self.location = location
        self.reason = message
