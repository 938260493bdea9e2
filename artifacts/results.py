"""Result equality's files: results.tsv (one row per hashed execution, written by the runner,
runner/results.py) and summary.json's `results` section (written by compare,
compare/results.py; read here for the report and the PR comment).

Format history:
  results.tsv 1 -- test, query_index, server, process, execution, rows, hash, bytes,
                   hash_seconds.
  summary.json `results` -- counts per result status and, for every query whose results
                   were not equal, its status, reason and the distinct (hash, rows) of each side.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from artifacts.manifest import read_json
from artifacts.tsv import Table

RESULTS_SECTION = "results"  # the key in summary.json


@dataclass(frozen=True)
class ResultRow:
    """The hash of one execution's result (runner/results.py; judged by compare/results.py)."""

    test: str
    query_index: int
    server: str
    process: int  # the server process set that ran it
    execution: str  # "prewarm", or "recheck": once more after the servers disagreed
    rows: int
    hash: str  # 32 hex digits: the sum of the rows' 128-bit digests, in any order
    bytes: int  # the result's size as received
    hash_seconds: float  # the client's time spent hashing, included in the execution's time


RESULTS = Table("results.tsv", ResultRow)


@dataclass(frozen=True)
class SideResult:
    """One distinct result of one side."""

    hash: str
    rows: int

    def __str__(self) -> str:
        return f"{self.rows} rows, hash {self.hash}"


@dataclass(frozen=True)
class ResultProblem:
    """A query whose results were not equal: a wrong result, non-deterministic, unconfirmed."""

    test: str
    query_index: int
    status: str  # compare.results.ResultStatus value
    reason: str
    reference: tuple[SideResult, ...]
    patched: tuple[SideResult, ...]


def read_result_problems(out: Path) -> tuple[ResultProblem, ...]:
    """summary.json's result problems; () when it has none, lacks the section or is unreadable
    (whoever reads summary.json reports that)."""
    data = read_json(out / "summary.json").data
    section = data.get(RESULTS_SECTION) if isinstance(data, dict) else None
    queries = section.get("queries") if isinstance(section, dict) else None
    if not isinstance(queries, list):
        return ()
    return tuple(p for p in (_problem(q) for q in queries) if p is not None)


def _problem(raw: Any) -> ResultProblem | None:
    if not isinstance(raw, dict):
        return None
    try:
        return ResultProblem(
            test=str(raw["test"]),
            query_index=int(raw["query_index"]),
            status=str(raw["result"]),
            reason=str(raw.get("reason", "")),
            reference=_sides(raw.get("reference")),
            patched=_sides(raw.get("patched")),
        )
    except (KeyError, TypeError, ValueError, OverflowError):
        return None


def _sides(raw: Any) -> tuple[SideResult, ...]:
    if not isinstance(raw, list):
        return ()
    return tuple(
        SideResult(str(r["hash"]), int(r["rows"]))
        for r in raw
        if isinstance(r, dict) and "hash" in r and isinstance(r.get("rows"), int)
    )
