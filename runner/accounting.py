"""Which tests and queries a run has accounted for in tests.tsv, queries.tsv and errors.tsv,
so that every selected test gets its row, also when the run stops early (a signal, a server
failure, a budget): a test never started is "not run" as a whole, and of a started test each
query whose measurement did not end is.
"""

from __future__ import annotations

from artifacts.console import console_text
from artifacts.errors import ChperfError, Terminated
from artifacts.tables import (
    BOTH,
    STAGE_NOT_RUN,
    STAGE_PARSE,
    TEST_NOT_RUN,
    TEST_RAN,
    TEST_SKIPPED,
    WHOLE_TEST,
    ErrorRow,
    QueryRow,
    TestRow,
)
from runner.options import RunOptions
from runner.results import random_fill
from runner.selection import LoadedTests, selected_queries
from runner.testdef import TestDef, TestQuery
from runner.writers import Writers


class Accounts:
    def __init__(self, writers: Writers, options: RunOptions) -> None:
        self.writers = writers
        self.options = options
        self._accounted: set[str] = set()  # tests with their row in tests.tsv
        self._listed: set[str] = set()  # tests with their rows in queries.tsv
        self.ended: set[tuple[str, int]] = set()  # queries whose measurement ended

    def list_queries(self, test: TestDef) -> tuple[TestQuery, ...]:
        queries = selected_queries(test, self.options)
        if test.name not in self._listed:
            self._listed.add(test.name)
            if test.load is not None:
                return queries  # a load test's verdicts come from load_blocks.tsv
            for q in queries:
                self.writers.queries.write(
                    QueryRow(test.name, q.index, q.sql, test.max_ignored_relative_change, q.name)
                )
        return queries

    def test_row(self, test: TestDef, status: str, reason: str, wall: float) -> None:
        self._accounted.add(test.name)
        self.writers.tests.write(
            TestRow(
                test.name,
                str(test.path),
                status,
                reason,
                wall,
                test.max_ignored_relative_change,
                random_fill(test),
            )
        )

    def not_run(self, test: TestDef, reason: str) -> None:
        """Account for a test the run did not finish: never started, it is "not run" as a
        whole; started, each of its queries whose measurement did not end is."""
        if test.name in self._accounted:
            return
        queries = self.list_queries(test)
        if test.is_long and not self.options.long:
            self.test_row(test, TEST_SKIPPED, "tagged long; pass --long to run it", 0.0)
            return
        if not queries:
            return  # --query-index left nothing of this test
        if test.skip_reason:
            self.test_row(test, TEST_SKIPPED, test.skip_reason, 0.0)
            return
        ended = [q for q in queries if (test.name, q.index) in self.ended]
        if not ended:
            self.test_row(test, TEST_NOT_RUN, reason, 0.0)
            return
        for q in queries:
            if (test.name, q.index) not in self.ended:
                self.writers.errors.write(
                    ErrorRow(test.name, q.index, BOTH, STAGE_NOT_RUN, 0, reason)
                )
        self.test_row(test, TEST_RAN, f"{len(ended)} of {len(queries)} queries: {reason}", 0.0)

    def parse_problems(self, loaded: LoadedTests) -> None:
        for name, path, error in loaded.problems:
            self.writers.errors.write(ErrorRow(name, WHOLE_TEST, BOTH, STAGE_PARSE, 0, str(error)))
            self.writers.tests.write(TestRow(name, str(path), "error", error.reason, 0.0))


def stop_reason(error: BaseException | None) -> str:
    """Why the queries a run did not reach are "not run"."""
    if isinstance(error, KeyboardInterrupt):
        return "interrupted (SIGINT)"
    if isinstance(error, Terminated):
        return "terminated (SIGTERM)"
    if error is not None:
        what = error.message if isinstance(error, ChperfError) else str(error)  # not the hint
        return f"the run stopped: {console_text(what, 200)}"
    return "the run ended before it"
