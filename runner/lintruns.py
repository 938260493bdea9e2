"""`chperf lint` on whole files and with what runs measured: `--timings` estimates from an
earlier run's artifacts (time limits, varying results), `--measure` judges an A/A run of each
query against the limits below. The static checks are runner/lint.py's."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from artifacts.errors import ChperfError
from artifacts.tables import ERRORS, RUNS, TESTS
from artifacts.tsv import read_table
from compare.results import varying_results
from runner.budget import Limits
from runner.lint import LintProblem, lint_test
from runner.testdef import Location, TestDef, TestDefError, discover, load_test


def lint_paths(paths: Sequence[Path], earlier: Path | None = None) -> list[LintProblem]:
    """Lint test files (or directories of them), with the timings of an earlier run when
    given. Raises ChperfError for a missing path; a file that cannot be read (a dangling
    symlink, a FIFO, no permission) is a problem like any other, and the rest are linted."""
    problems: list[LintProblem] = []
    tests: list[TestDef] = []
    for path in discover(paths):
        try:
            test = load_test(path)
        except TestDefError as e:
            problems.append(LintProblem(e.location, e.reason, e.hint or "fix the test file"))
            continue
        tests.append(test)
        problems += lint_test(test)
    if earlier is not None:
        problems += timing_problems(tests, earlier) + result_problems(tests, earlier)
    return problems


def result_problems(tests: Sequence[TestDef], earlier: Path) -> list[LintProblem]:
    """Queries whose result varied on one side in the run in `earlier` (results.tsv): their
    results cannot be compared between the servers (docs/method.md, "Result equality")."""
    varying = varying_results(earlier)
    return [
        LintProblem(
            q.location,
            f"query {q.index} in {earlier}: {varying[(t.name, q.index)]}",
            "order by a unique key, fill tables with deterministic data (intHash64(number), "
            "not rand()), and leave out rand() and now(), or accept that its result is not "
            "compared",
        )
        for t in tests
        for q in t.queries
        if (t.name, q.index) in varying
    ]


# --measure: an A/A run of the installed server against itself, with the CI defaults.
MEDIAN_FLOOR_S = 0.010  # below ~10 ms client overhead dominates the time
MEDIAN_CEILING_S = 2.0  # slower queries make the suite too slow to run per commit
AA_THRESHOLD_CEILING = 0.10  # the unstable threshold: T above it cannot see a 10% change


@dataclass(frozen=True)
class MeasuredQuery:
    test: str
    query_index: int
    verdict: str
    reason: str
    reference_median: float | None  # seconds
    threshold: float | None  # T as a fraction of the reference median


def measured_problems(
    measured: Sequence[MeasuredQuery], locations: dict[tuple[str, int], Location]
) -> list[LintProblem]:
    """Pure part of --measure: judge A/A results against the limits above."""
    problems: list[LintProblem] = []
    for m in measured:
        where = locations.get((m.test, m.query_index))
        if where is None:
            continue
        problems += _judge_measured(m, where)
    return problems


def _judge_measured(m: MeasuredQuery, where: Location) -> Iterable[LintProblem]:
    name = f"query {m.query_index}"
    if m.reference_median is None or m.threshold is None:
        yield LintProblem(
            where, f"{name} was not measured: {m.reason}", "make it run on the installed server"
        )
        return
    median_ms = m.reference_median * 1000
    if m.reference_median < MEDIAN_FLOOR_S:
        yield LintProblem(
            where,
            f"{name} runs {median_ms:.1f} ms, below the {MEDIAN_FLOOR_S * 1000:.0f} ms floor: "
            "client overhead dominates",
            "make it heavier (more rows, or a costlier expression)",
        )
    if m.reference_median > MEDIAN_CEILING_S:
        yield LintProblem(
            where,
            f"{name} runs {median_ms:.0f} ms, above the {MEDIAN_CEILING_S:.0f} s ceiling",
            "make it lighter (fewer rows)",
        )
    if m.threshold > AA_THRESHOLD_CEILING:
        yield LintProblem(
            where,
            f"{name} is unstable against itself: A/A threshold T {m.threshold:.1%} is above "
            f"{AA_THRESHOLD_CEILING:.0%}",
            "remove sources of noise (tiny or huge runtimes, memory-bound work, "
            "nondeterministic data) or make the query heavier",
        )


DEFAULT_LIMITS = Limits()


# --timings: what an earlier run of the same tests says about the time limits.
def timing_problems(
    tests: Sequence[TestDef], earlier: Path, limits: Limits = DEFAULT_LIMITS
) -> list[LintProblem]:
    """Queries that were too long, or whose runs took longer than their limit, in the run
    whose artifacts are in `earlier`; tests that took longer than the test budget there."""
    runs = read_table(earlier, RUNS)
    errors = read_table(earlier, ERRORS)
    walls = {t.test: t.wall_time for t in read_table(earlier, TESTS).rows}
    if runs.missing and errors.missing:
        raise ChperfError(
            f"{earlier}: no runs.tsv or errors.tsv", hint="--timings takes a run's --out directory"
        )
    times: dict[tuple[str, int], list[float]] = {}
    for row in runs.rows:
        times.setdefault((row.test, row.query_index), []).append(row.client_time)
    too_long = {(e.test, e.query_index): e.message for e in errors.rows if e.stage == "too long"}
    problems: list[LintProblem] = []
    for test in tests:
        limit = limits.for_test(test.max_query_seconds).run_seconds
        for query in test.queries:
            key = (test.name, query.index)
            if key in too_long:
                problems.append(
                    LintProblem(
                        query.location,
                        f"query {query.index} was too long in {earlier}: {too_long[key]}",
                        "make it lighter, or set max_query_seconds on the test if it must run "
                        "this long",
                    )
                )
            elif key in times and statistics.median(times[key]) > limit:
                problems.append(
                    LintProblem(
                        query.location,
                        f"query {query.index} took {statistics.median(times[key]):.1f} s a run "
                        f"in {earlier}, over its {limit:g} s limit",
                        "make it lighter, or set max_query_seconds on the test",
                    )
                )
        wall = walls.get(test.name)
        budget = limits.test_seconds
        if wall is not None and budget is not None and wall > budget:
            problems.append(
                LintProblem(
                    Location(test.path, 1),
                    f"the test took {wall:.0f} s in {earlier}, over the {budget:.0f} s test budget",
                    "split it, or make its queries or its fill lighter",
                )
            )
    return problems
