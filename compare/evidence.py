"""The evidence for the verdicts: runs and errors per query, from the artifacts of `chperf run`.
Damage becomes a recorded problem, never an exception: of one query when the damaged line
names it, of the whole comparison otherwise. A time no measurement gives is not damage but
refused by the reader (artifacts/values.py, exit 2).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from artifacts.tables import (
    ERRORS,
    PATCHED,
    QUERIES,
    REFERENCE,
    RUNS,
    SIDES,
    STAGE_NOT_RUN,
    STAGE_PARSE,
    STAGE_PREWARM,
    STAGE_RUN,
    STAGE_SERVER,
    STAGE_SETUP,
    STAGE_TOO_LONG,
    STOPS,
    TEST_ERROR,
    TEST_NOT_RUN,
    TEST_SKIPPED,
    TESTS,
    WHOLE_TEST,
    ErrorRow,
    QueryRow,
    RunRow,
    TestRow,
)
from artifacts.tsv import ReadProblem, TableContents, read_table
from compare.engine import SqlEngine
from compare.grouped_runs import read_grouped
from compare.randomization import Samples
from compare.verdict import Failure, QueryEvidence

QueryKey = tuple[str, int]  # (test, query_index)

# From this size of runs.tsv on (about 20,000 runs), grouping it in chDB beats Python.
GROUPED_RUNS_BYTES = 2_000_000

# The errors.tsv stages that affect a verdict; teardown and query_log errors do not.
_TEST_STAGES = (STAGE_PARSE, STAGE_SETUP, STAGE_SERVER)
# A setup error of one query: the setup failed on one side only (runner/run.py).
_QUERY_STAGES = (STAGE_SETUP, STAGE_PREWARM, STAGE_RUN, STAGE_SERVER, STAGE_TOO_LONG, STAGE_NOT_RUN)


@dataclass(frozen=True)
class GlobalProblem:
    """Damage not attributable to one query: it goes into the summary message."""

    text: str
    fails_check: bool


@dataclass(frozen=True)
class Evidence:
    queries: tuple[QueryEvidence, ...]  # sorted by (test, query_index); stats not yet set
    client_time: dict[QueryKey, Samples]  # every query with runs on both sides
    problems: tuple[GlobalProblem, ...]
    runs_per_side: dict[str, int]


@dataclass
class _Query:
    """Mutable accumulator while reading; frozen into QueryEvidence at the end."""

    query: str = ""
    max_ignored_relative_change: float | None = None
    listed: bool = False  # present in queries.tsv
    runs: dict[str, dict[int, float]] = field(default_factory=lambda: {s: {} for s in SIDES})
    processes: dict[int, int] = field(default_factory=dict)  # run -> server process set
    # Set by the grouped reader instead of runs and processes: the query's samples as they are.
    samples: Samples | None = None
    failures: list[Failure] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    stop_reason: str | None = None  # stops.tsv: why its measuring ended


def gather(
    out: Path, engine: SqlEngine | None = None, grouped_from: int = GROUPED_RUNS_BYTES
) -> Evidence:
    """With an engine, runs.tsv is grouped by query in chDB when it is clean (a run's largest
    table: a third of compare's time in Python); otherwise, and whenever anything in it needs
    saying, line by line."""
    queries: dict[QueryKey, _Query] = defaultdict(_Query)
    problems: list[GlobalProblem] = []
    _add_queries(read_table(out, QUERIES), queries, problems)
    per_side = None
    if engine is not None:
        per_side = _add_runs_grouped(out, engine, queries, grouped_from)
    if per_side is None:
        runs = read_table(out, RUNS)
        _add_runs(out, runs, queries, problems)
        per_side = {s: sum(1 for r in runs.rows if r.server == s) for s in SIDES}
    _add_stops(out, queries, problems)
    errors = read_table(out, ERRORS)
    test_failures = _add_errors(errors, queries, problems)
    tests = read_table(out, TESTS)
    _note_problems(tests.problems, problems, fails_check=True)
    rows = _query_evidence(queries, test_failures, tests.rows)
    return Evidence(
        queries=rows,
        client_time=_client_time(queries),
        problems=tuple(problems),
        runs_per_side=per_side,
    )


def _add_runs_grouped(
    out: Path, engine: SqlEngine, queries: dict[QueryKey, _Query], grouped_from: int
) -> dict[str, int] | None:
    """runs.tsv through chDB (compare/grouped_runs.py); None, with `queries` untouched, when
    the file is missing, damaged or has anything the careful reader reports."""
    path = out / RUNS.file
    try:
        if path.stat().st_size < grouped_from:
            return None  # chDB's fixed cost (~0.15 s) is more than reading a small file
    except OSError:
        return None
    grouped = read_grouped(path, engine)
    if grouped is None:
        return None
    for key, samples in grouped.samples.items():
        queries[key].samples = samples
    return grouped.runs_per_side


def _add_stops(out: Path, queries: dict[QueryKey, _Query], problems: list[GlobalProblem]) -> None:
    """Why each measured query's runs ended: only said, so a damaged or missing stops.tsv
    (a run from before it existed) fails nothing."""
    if not (out / STOPS.file).exists():
        return
    table = read_table(out, STOPS)
    _note_problems(table.problems, problems, fails_check=False)
    for row in table.rows:
        if (row.test, row.query_index) in queries:
            queries[(row.test, row.query_index)].stop_reason = row.reason


def _note_problems(
    read_problems: Iterable[ReadProblem], problems: list[GlobalProblem], *, fails_check: bool
) -> None:
    problems.extend(GlobalProblem(str(p), fails_check) for p in read_problems)


def _add_queries(
    table: TableContents[QueryRow], queries: dict[QueryKey, _Query], problems: list[GlobalProblem]
) -> None:
    _note_problems(table.problems, problems, fails_check=True)
    for row in table.rows:
        entry = queries[(row.test, row.query_index)]
        if entry.listed:
            entry.problems.append(f"{QUERIES.file}: listed twice")
        entry.query, entry.listed = row.query, True
        entry.max_ignored_relative_change = row.max_ignored_relative_change


def _add_runs(
    out: Path,
    table: TableContents[RunRow],
    queries: dict[QueryKey, _Query],
    problems: list[GlobalProblem],
) -> None:
    for problem in table.problems:
        key = _key_of_line(out / RUNS.file, problem.line)
        if key is None:
            problems.append(GlobalProblem(str(problem), True))
        else:
            queries[key].problems.append(str(problem))
    for row in table.rows:
        entry = queries[(row.test, row.query_index)]
        if row.server not in SIDES:
            entry.problems.append(f"{RUNS.file}: unknown server {row.server!r}")
        elif row.run in entry.runs[row.server]:
            entry.problems.append(f"{RUNS.file}: {row.server} run {row.run} recorded twice")
        elif not row.client_time > 0:
            entry.problems.append(
                f"{RUNS.file}: {row.server} run {row.run} took {row.client_time} s"
            )
        elif entry.processes.setdefault(row.run, row.process) != row.process:
            entry.problems.append(
                f"{RUNS.file}: run {row.run} ran on process {entry.processes[row.run]} on one "
                f"side and {row.process} on the other"
            )
        else:
            entry.runs[row.server][row.run] = row.client_time


def _key_of_line(path: Path, line: int) -> QueryKey | None:
    """(test, query_index) of a damaged line, when its first two fields are readable."""
    if line < 2:
        return None
    with path.open(encoding="utf-8", errors="replace") as f:
        for number, text in enumerate(f, start=1):
            if number == line:
                fields = text.split("\t")
                if len(fields) >= 3 and fields[1].lstrip("-").isdigit():
                    return fields[0], int(fields[1])
                return None
    return None


def _add_errors(
    table: TableContents[ErrorRow], queries: dict[QueryKey, _Query], problems: list[GlobalProblem]
) -> dict[str, list[Failure]]:
    """Attach query errors; return the whole-test errors per test."""
    _note_problems(table.problems, problems, fails_check=True)
    test_failures: dict[str, list[Failure]] = defaultdict(list)
    for row in table.rows:
        failure = Failure(row.server, row.stage, row.message)
        if row.query_index == WHOLE_TEST:
            if row.stage in _TEST_STAGES:
                test_failures[row.test].append(failure)
        elif row.stage in _QUERY_STAGES:
            queries[(row.test, row.query_index)].failures.append(failure)
    return test_failures


def _query_evidence(
    queries: dict[QueryKey, _Query],
    test_failures: dict[str, list[Failure]],
    tests: tuple[TestRow, ...],
) -> tuple[QueryEvidence, ...]:
    status = {t.test: t for t in tests}
    rows = [_evidence(key, q) for key, q in queries.items()]
    covered = {key[0] for key in queries}
    for test in sorted((set(status) | set(test_failures)) - covered):
        rows.append(_test_row(test, status.get(test)))
    final = [_with_test_status(r, status.get(r.test), test_failures.get(r.test, [])) for r in rows]
    return tuple(sorted(final, key=lambda r: (r.test, r.query_index)))


def _evidence(key: QueryKey, q: _Query) -> QueryEvidence:
    problems = list(q.problems)
    if not q.listed:
        problems.append(f"{QUERIES.file}: this query has runs or errors but is not listed")
    return QueryEvidence(
        test=key[0],
        query_index=key[1],
        query=q.query,
        max_ignored_relative_change=q.max_ignored_relative_change,
        failures=tuple(q.failures),
        problems=tuple(problems),
        runs_reference=len(q.samples.reference) if q.samples else len(q.runs[REFERENCE]),
        runs_patched=len(q.samples.patched) if q.samples else len(q.runs[PATCHED]),
        stop_reason=q.stop_reason,
    )


def _test_row(test: str, row: TestRow | None) -> QueryEvidence:
    """The one verdict row of a test without queries (skipped, or failed before its queries)."""
    problems: tuple[str, ...] = ()
    if row is not None and row.status not in (TEST_SKIPPED, TEST_ERROR, TEST_NOT_RUN):
        problems = (f"{TESTS.file}: the test has status {row.status!r} but no queries",)
    return QueryEvidence(test, WHOLE_TEST, "", None, problems=problems)


def _with_test_status(
    evidence: QueryEvidence, test: TestRow | None, failures: list[Failure]
) -> QueryEvidence:
    if test is not None and test.status == TEST_SKIPPED:
        return replace(evidence, skipped_reason=test.reason or "no reason given")
    if test is not None and test.status == TEST_NOT_RUN:
        return replace(evidence, not_run_reason=test.reason or "no reason given")
    if test is not None and test.status == TEST_ERROR and not failures:
        failures = [Failure("both", "test", test.reason or "no reason given")]
    return replace(evidence, test_failures=tuple(failures)) if failures else evidence


def _client_time(queries: dict[QueryKey, _Query]) -> dict[QueryKey, Samples]:
    found = {}
    for key, q in queries.items():
        if q.samples is not None:
            if q.samples.reference and q.samples.patched:
                found[key] = q.samples
        elif q.runs[REFERENCE] and q.runs[PATCHED]:
            found[key] = Samples(
                _values(q.runs[REFERENCE]),
                _values(q.runs[PATCHED]),
                _pairs(q.runs[REFERENCE], q.runs[PATCHED]),
                _pair_processes(q),
            )
    return found


def _pair_processes(q: _Query) -> tuple[int, ...]:
    """The process set of each pair of _pairs, in the same order."""
    both = sorted(q.runs[REFERENCE].keys() & q.runs[PATCHED].keys())
    return tuple(q.processes[r] for r in both)


def _values(runs: dict[int, float]) -> tuple[float, ...]:
    return tuple(runs[r] for r in sorted(runs))


def _pairs(
    reference: dict[int, float], patched: dict[int, float]
) -> tuple[tuple[float, float], ...]:
    """(reference, patched) of every run number measured on both sides (the pairs)."""
    return tuple((reference[r], patched[r]) for r in sorted(reference.keys() & patched.keys()))
