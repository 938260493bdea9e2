"""Test definitions in ClickHouse's tests/performance XML format (METHOD.md §6).

INTERFACE (implementation pending): the dataclasses below are the contract the runner uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from chperf.errors import ChperfError


@dataclass(frozen=True)
class Location:
    path: Path
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Diagnostic:
    """A warning about a test file (an unknown legacy element, say) that does not stop it."""

    location: Location
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


@dataclass(frozen=True)
class TestQuery:
    index: int  # position after substitution; (test, index) is the query's identity
    sql: str
    location: Location  # the <query> element it came from


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
    max_ignored_relative_change: float | None
    warnings: tuple[Diagnostic, ...]

    @property
    def is_long(self) -> bool:
        return "long" in self.tags


class TestDefError(ChperfError):
    """A test file that cannot be used; names file:line."""

    def __init__(self, location: Location, message: str, hint: str = "") -> None:
        super().__init__(f"{location}: {message}", hint=hint)
        self.location = location
        self.reason = message
