"""Result equality, the runner's half: every measured query's result is hashed while the client
receives it, in the prewarm on every server (never held whole: each chunk is hashed and
dropped), and written to results.tsv. When the hashes of a query disagree anywhere, each server
runs it once more (a "recheck"), so that compare can tell a query whose result differs between
two executions on one side (non-deterministic) from one whose sides disagree (a wrong result).
The judgement is compare/results.py's; the design and its cost: docs/method.md, "Result
equality".
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from artifacts.results import ResultRow
from artifacts.tsv import TableWriter
from runner.sqltext import without_strings
from runner.testtypes import TestDef

# The label (query_id `<test>.<index>.recheck`) of the extra execution on a disagreement.
RECHECK_LABEL = "recheck"

# Per-row digests of 128 bits added modulo 2**128: two different multisets of rows collide
# with probability about 2**-128 per pair, far below anything a run could meet.
ROW_DIGEST_BYTES = 16
_MODULUS = 1 << (8 * ROW_DIGEST_BYTES)

# A query that ends in FORMAT Null sends no rows: there is nothing to compare.
_FORMAT_NULL = re.compile(r"\bFORMAT\s+Null\s*;?\s*$", re.IGNORECASE)


# Functions whose value differs between two servers that run the same fill: random numbers,
# strings and tables, fresh UUIDs, the clock. A fill that calls one gives each server its own
# data, so the sides' results may differ with no patch at all.
_RANDOM_CALL = re.compile(
    r"(?<![\w.`\"])(rand(?:32|64|Constant|Canonical|Uniform|Normal|LogNormal|Exponential|"
    r"ChiSquared|StudentT|FisherF|Bernoulli|Binomial|NegativeBinomial|Poisson)?|canonicalRand|"
    r"random(?:String|FixedString|PrintableASCII|StringUTF8)|fuzzBits|generateRandom|"
    r"generateUUIDv[47]|generateSnowflakeID|generateSerialID|now|now64|nowInBlock|today|"
    r"yesterday)\s*\(",
    re.IGNORECASE,
)
# A table or view named like one of them: CREATE TABLE rand (...), INSERT INTO now (...).
_NAMED_OBJECT = re.compile(r"\b(?:TABLE|VIEW|DICTIONARY|INTO|EXISTS)\s+$", re.IGNORECASE)
# generateRandom('structure', seed, ...) with a seed gives every server the same rows.
_SEEDED = re.compile(r"\s*''\s*,\s*\d", re.IGNORECASE)
_SETUP_KINDS = ("create_query", "fill_query")


def random_fill(test: TestDef) -> str:
    """Where the test's setup first draws random data, as `file:line function()` (tests.tsv
    random_fill); "" when it does not."""
    for statement in test.statements:
        if statement.kind not in _SETUP_KINDS:
            continue
        code = without_strings(statement.sql)
        for found in _RANDOM_CALL.finditer(code):
            if found.group(1).lower() == "generaterandom" and _SEEDED.match(code, found.end()):
                continue
            # the few words before it: a statement may hold thousands of calls
            if not _NAMED_OBJECT.search(code[max(0, found.start() - 64) : found.start()]):
                where = f"{statement.location.path.name}:{statement.location.line}"
                return f"{where} {found.group(1)}()"
    return ""


def discards_result(sql: str) -> bool:
    """True for a query whose output format throws its rows away (`... FORMAT Null`)."""
    return _FORMAT_NULL.search(sql) is not None


@dataclass(frozen=True)
class ResultDigest:
    rows: int
    digest: str  # 32 hex digits, the same for the same rows in any order
    bytes: int  # the size of the result as received
    seconds: float  # time spent hashing, already part of the execution's wall time


class RowHasher:
    """An order-insensitive hash of a result in a line-per-row format (TabSeparated, the HTTP
    interface's default: a newline inside a value is escaped as `\\n`, so every line is one
    row). Each row is hashed on its own and the digests are added: parallel execution may
    send the same rows in another order, and a query's ORDER BY may leave ties in any order.
    Chunks may split a row anywhere; the unfinished row is carried to the next chunk."""

    def __init__(self) -> None:
        self._total = 0
        self._rows = 0
        self._bytes = 0
        self._partial = b""
        self._seconds = 0.0

    @property
    def seconds(self) -> float:
        return self._seconds

    def feed(self, chunk: bytes) -> None:
        start = time.perf_counter()
        self._bytes += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        self._add(lines)
        self._seconds += time.perf_counter() - start

    def finish(self) -> ResultDigest:
        """The digest of everything fed; a last row without a newline counts as a row."""
        if self._partial:
            self._add([self._partial])
            self._partial = b""
        return ResultDigest(self._rows, f"{self._total:032x}", self._bytes, self._seconds)

    def _add(self, lines: list[bytes]) -> None:
        blake2b = hashlib.blake2b
        total = sum(
            int.from_bytes(blake2b(line, digest_size=ROW_DIGEST_BYTES).digest(), "little")
            for line in lines
        )
        self._total = (self._total + total) % _MODULUS
        self._rows += len(lines)


@dataclass
class ResultRecorder:
    """The result hashes of the query being measured, per (server process set, side), each
    written to results.tsv as it is taken."""

    writer: TableWriter[ResultRow]
    _seen: dict[tuple[int, str], list[tuple[str, int]]] = field(default_factory=dict)

    def begin(self) -> None:
        """A new query: forget the previous one's hashes."""
        self._seen.clear()

    def hasher(self, sql: str) -> RowHasher | None:
        """A hasher for one execution of `sql`; None when its result cannot be compared."""
        return None if discards_result(sql) else RowHasher()

    def record(
        self,
        test: str,
        query_index: int,
        process: int,
        side: str,
        execution: str,
        hasher: RowHasher,
    ) -> None:
        found = hasher.finish()
        self._seen.setdefault((process, side), []).append((found.digest, found.rows))
        self.writer.write(
            ResultRow(
                test,
                query_index,
                side,
                process,
                execution,
                found.rows,
                found.digest,
                found.bytes,
                found.seconds,
            )
        )

    def to_recheck(self) -> list[tuple[int, str]]:
        """The servers to run the query on once more: all that hashed it, when their results
        disagree anywhere; none when they all agree."""
        return sorted(self._seen) if disagree(self._seen.values()) else []


def disagree(results: Iterable[Sequence[tuple[str, int]]]) -> bool:
    """More than one distinct (hash, rows) among the executions' results."""
    return len({r for executions in results for r in executions}) > 1
