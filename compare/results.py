"""Result equality, the judging half: results.tsv (runner/results.py) to one ResultCheck per
query, and what that does to its verdict and to the check.

- non-deterministic: some side gave two different results (two executions on one server, or
  the side's two server processes), or the sides differ and the test fills its tables with
  random data (tests.tsv random_fill: each server holds its own): whatever the patched side
  returns cannot be told from chance. Reported, never failing.
- wrong result: each side gave one result in every execution, at least two executions a
  side, and the sides differ. Fails the check, whatever the timing verdict.
- unconfirmed: the sides differ but a side ran the query once (its recheck failed or a
  budget ran out): reported, not failing; that query's verdict already says why it stopped.
- equal: every execution agreed.

A wrong result is a problem attached to the query, not a verdict: the timing verdict stays
(a patch that makes a query faster by returning less is "faster" *and* a wrong result).
Rules and cost: docs/method.md, "Result equality".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Any

from artifacts.results import RESULTS, ResultRow, SideResult
from artifacts.tables import PATCHED, REFERENCE, TESTS
from artifacts.tsv import read_table
from compare.verdict import QueryVerdict

# Executions a side needs before a difference between the sides counts as a wrong result:
# two agreeing executions are the evidence that the side's result does not vary.
CONFIRMING_EXECUTIONS = 2


class ResultStatus(Enum):
    EQUAL = "equal"
    WRONG = "wrong result"
    NON_DETERMINISTIC = "non-deterministic"
    UNCONFIRMED = "unconfirmed"


@dataclass(frozen=True)
class ResultCheck:
    test: str
    query_index: int
    status: ResultStatus
    reference: tuple[SideResult, ...]  # the side's distinct results, in execution order
    patched: tuple[SideResult, ...]
    executions: tuple[int, int]  # hashed executions, reference and patched
    varies: str = ""  # for non-deterministic: where the results differed

    @property
    def reason(self) -> str:
        sides = f"reference {_listed(self.reference)}; patched {_listed(self.patched)}"
        if self.status is ResultStatus.WRONG:
            return f"wrong result: {sides}"
        if self.status is ResultStatus.NON_DETERMINISTIC:
            return f"non-deterministic result: differs {self.varies} ({sides})"
        if self.status is ResultStatus.UNCONFIRMED:
            runs = f"{self.executions[0]} reference and {self.executions[1]} patched executions"
            return f"results differ, not confirmed ({runs}): {sides}"
        return f"equal results ({_listed(self.reference)})"


@dataclass(frozen=True)
class ResultsEvidence:
    checks: dict[tuple[str, int], ResultCheck]
    problems: tuple[str, ...]  # damaged lines of results.tsv
    recorded: bool  # results.tsv exists: the run hashed results


def gather_results(out: Path, manifest: Mapping[str, Any] | None = None) -> ResultsEvidence:
    """results.tsv judged; nothing recorded when run.json says the run did not hash results
    (--no-result-check: the file has its header only)."""
    options = (manifest or {}).get("options")
    if isinstance(options, dict) and options.get("check_results") is False:
        return ResultsEvidence({}, (), False)
    contents = read_table(out, RESULTS)
    # A missing file is a run that hashed nothing (--no-result-check, or an older chperf).
    problems = () if contents.missing else tuple(str(p) for p in contents.problems)
    # tests.tsv's own damage is compare's to report (compare/evidence.py).
    random = {t.test: t.random_fill for t in read_table(out, TESTS).rows if t.random_fill}
    return ResultsEvidence(check_results(contents.rows, random), problems, not contents.missing)


def check_results(
    rows: Iterable[ResultRow], random_fill: Mapping[str, str] | None = None
) -> dict[tuple[str, int], ResultCheck]:
    """One check per query hashed on both sides, in key order; `random_fill`: per test, where
    its setup draws random data."""
    grouped: dict[tuple[str, int], list[ResultRow]] = {}
    for row in rows:
        grouped.setdefault((row.test, row.query_index), []).append(row)
    checks = {}
    for key in sorted(grouped):
        check = _check(key, grouped[key], (random_fill or {}).get(key[0], ""))
        if check is not None:
            checks[key] = check
    return checks


def _check(key: tuple[str, int], rows: Sequence[ResultRow], random_fill: str) -> ResultCheck | None:
    by_side = {side: [r for r in rows if r.server == side] for side in (REFERENCE, PATCHED)}
    if not all(by_side.values()):
        return None
    reference, patched = (_distinct(by_side[s]) for s in (REFERENCE, PATCHED))
    executions = (len(by_side[REFERENCE]), len(by_side[PATCHED]))
    varies = _where_it_varies(by_side)
    if not varies and reference != patched and random_fill:
        varies = (
            f"between the servers: the test fills its tables with random data ({random_fill}), "
            "so each server holds its own"
        )
    if varies:
        status = ResultStatus.NON_DETERMINISTIC
    elif reference == patched:
        status = ResultStatus.EQUAL
    elif min(executions) >= CONFIRMING_EXECUTIONS:
        status = ResultStatus.WRONG
    else:
        status = ResultStatus.UNCONFIRMED
    return ResultCheck(key[0], key[1], status, reference, patched, executions, varies)


def _distinct(rows: Sequence[ResultRow]) -> tuple[SideResult, ...]:
    return tuple(dict.fromkeys(SideResult(r.hash, r.rows) for r in rows))


def _where_it_varies(by_side: Mapping[str, Sequence[ResultRow]]) -> str:
    """Where the results of a side differed; "" when each side always gave one result."""
    for side, rows in by_side.items():
        per_server: dict[int, set[SideResult]] = {}
        for r in rows:
            per_server.setdefault(r.process, set()).add(SideResult(r.hash, r.rows))
        if any(len(found) > 1 for found in per_server.values()):
            return f"between executions on one {side} server"
        if len({result for found in per_server.values() for result in found}) > 1:
            return (
                f"between the {side} side's server processes (each has its own copy of the "
                "test's data: random fill data differs between them)"
            )
    return ""


def _listed(results: Sequence[SideResult]) -> str:
    return " or ".join(str(r) for r in results)


def with_results(
    verdicts: Sequence[QueryVerdict], checks: Mapping[tuple[str, int], ResultCheck]
) -> list[QueryVerdict]:
    """A wrong result fails its query and leads its reason; a non-deterministic or
    unconfirmed one is noted at the end of the reason."""
    found = []
    for v in verdicts:
        check = checks.get((v.test, v.query_index))
        if check is None or check.status is ResultStatus.EQUAL:
            found.append(v)
        elif check.status is ResultStatus.WRONG:
            found.append(replace(v, fails_check=True, reason=f"{check.reason}; {v.reason}"))
        else:
            found.append(replace(v, reason=f"{v.reason}; {check.reason}"))
    return found


def results_message(message: str, checks: Mapping[tuple[str, int], ResultCheck]) -> str:
    """summary.json's message with the wrong results first and the rest as a note."""
    counts = _counts(checks.values())
    wrong = counts[ResultStatus.WRONG.value]
    notes = [
        f"{counts[s.value]} {s.value} result{'s' if counts[s.value] != 1 else ''}"
        for s in (ResultStatus.NON_DETERMINISTIC, ResultStatus.UNCONFIRMED)
        if counts[s.value]
    ]
    if wrong:
        message = f"{wrong} wrong result{'s' if wrong != 1 else ''}, {message}"
    if notes:
        message = f"{message}; note: {', '.join(notes)}"
    return message


def results_summary(
    evidence: ResultsEvidence, verdicts: Sequence[QueryVerdict]
) -> dict[str, Any] | None:
    """summary.json's `results` (artifacts/results.py): None when the run hashed nothing."""
    if not evidence.recorded:
        return None
    checks = evidence.checks
    queries = {(v.test, v.query_index) for v in verdicts if v.query_index >= 0}
    return {
        "counts": _counts(checks.values()),
        "not_compared": len(queries - set(checks)),
        "queries": [
            {
                "test": c.test,
                "query_index": c.query_index,
                "result": c.status.value,
                "reason": c.reason,
                "reference": [{"hash": r.hash, "rows": r.rows} for r in c.reference],
                "patched": [{"hash": r.hash, "rows": r.rows} for r in c.patched],
            }
            for c in checks.values()
            if c.status is not ResultStatus.EQUAL
        ],
    }


def _counts(checks: Iterable[ResultCheck]) -> dict[str, int]:
    found = {s.value: 0 for s in ResultStatus}
    for c in checks:
        found[c.status.value] += 1
    return found


def varying_results(out: Path) -> dict[tuple[str, int], str]:
    """The queries of the run in `out` whose result varied on one side, with the reason: the
    runtime evidence `chperf lint` reports."""
    checks = gather_results(out).checks
    return {k: c.reason for k, c in checks.items() if c.status is ResultStatus.NON_DETERMINISTIC}
