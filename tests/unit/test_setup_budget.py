"""A setup statement the server stopped at a budget's limit (runner/testsetup.py): the budget
ran out, which is "not run", not an error of the test."""

from __future__ import annotations

from artifacts import tables
from artifacts.tables import ErrorRow
from runner.budget import Clock, Limits
from runner.testsetup import _cut_by_budget

# 26.9's answer when a fill runs into max_execution_time.
TIMEOUT = "Code: 159. DB::Exception: Timeout exceeded: elapsed 20318.926 ms, maximum: 20000.000 ms."


def _clock(elapsed: list[float]) -> Clock:
    clock = Clock(Limits(test_seconds=20.0), now=lambda: elapsed[0])
    clock.start_test()
    return clock


def _fill_error(code: int, message: str) -> ErrorRow:
    return ErrorRow("t", tables.WHOLE_TEST, tables.REFERENCE, tables.STAGE_SETUP, code, message)


def test_a_fill_stopped_at_the_test_budget_is_not_run_with_the_budget_named() -> None:
    elapsed = [0.0]
    clock = _clock(elapsed)
    elapsed[0] = 15.0
    cap = clock.cap(180.0)  # 5 s left of the test's 20 s
    assert cap.by_budget
    elapsed[0] = 20.4
    row = _cut_by_budget(_fill_error(159, TIMEOUT), cap, clock)
    assert row.stage == tables.STAGE_NOT_RUN
    assert row.message == (
        f"the test budget of 20 s ran out: the statement was stopped at 5 s ({TIMEOUT})"
    )


def test_other_failures_and_timeouts_of_the_statements_own_limit_stay_setup_errors() -> None:
    elapsed = [0.0]
    clock = _clock(elapsed)
    own = clock.cap(10.0)  # the statement's own limit, well within the budget
    assert not own.by_budget
    timeout = _fill_error(159, TIMEOUT)
    assert _cut_by_budget(timeout, own, clock) == timeout
    elapsed[0] = 15.0
    cut = clock.cap(180.0)
    memory = _fill_error(241, "Code: 241. DB::Exception: (total) memory limit exceeded")
    assert _cut_by_budget(memory, cut, clock) == memory
