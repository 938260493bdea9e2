"""A test's setup and teardown statements on every server process: create and fill before the
queries are measured, drop after. A server that stopped answering is restarted; each failure
becomes a row of errors.tsv.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import NamedTuple

from artifacts.tables import SIDES, STAGE_NOT_RUN, STAGE_SETUP, STAGE_TEARDOWN, WHOLE_TEST, ErrorRow
from runner.budget import TIMEOUT_CODES, Cap, Clock
from runner.measure import Measurer
from runner.statements import (
    DROP_KINDS,
    SETUP_KINDS,
    SETUP_TIMEOUT_S,
    on_every_server,
    statements,
)
from runner.testdef import Statement, TestDef, TestQuery
from runner.writers import Writers

# A drop's error codes for "nothing to drop": UNKNOWN_TABLE (tables, views, dictionaries) and
# UNKNOWN_DATABASE.
NOTHING_TO_DROP = frozenset({60, 81})


class Setup(NamedTuple):
    sides: tuple[str, ...]  # where create and fill worked
    message: str  # the first failure's message; "" when none failed
    failed: Mapping[str, int]  # side -> error code of its first failure


def set_up(
    measurer: Measurer,
    writers: Writers,
    clock: Clock,
    test: TestDef,
    queries: tuple[TestQuery, ...],
) -> Setup:
    """Create and fill on every server. A setup that fails on one side only (a setting or
    function that server lacks) is each query's failure on that side, and the queries run on
    the other: partial, not an error of the test."""
    errors = everywhere(measurer, clock, test, statements(test, SETUP_KINDS), STAGE_SETUP)
    first: dict[str, ErrorRow] = {}
    for error in errors:
        first.setdefault(error.server, error)
    sides = tuple(side for side in SIDES if side not in first)
    for error in first.values():
        if not sides:
            writers.errors.write(error)
            continue
        for q in queries:
            writers.errors.write(dataclasses.replace(error, query_index=q.index))
    message = next(iter(first.values())).message if first else ""
    return Setup(sides, message, {side: e.error_code for side, e in first.items()})


def tear_down(
    measurer: Measurer,
    writers: Writers,
    clock: Clock,
    test: TestDef,
    setup_failed: Mapping[str, int],
) -> None:
    """Every drop on every server. On a side whose setup failed (`setup_failed`: side -> its
    error code), a drop that finds nothing to drop or fails with the setup's own error code (a
    setting of the test that server lacks fails every statement) repeats what errors.tsv
    already says, and is not recorded again."""
    for error in everywhere(measurer, clock, test, statements(test, DROP_KINDS), STAGE_TEARDOWN):
        code = setup_failed.get(error.server)
        if code is not None and (error.error_code == code or error.error_code in NOTHING_TO_DROP):
            continue
        writers.errors.write(error)


def everywhere(
    measurer: Measurer,
    clock: Clock,
    test: TestDef,
    queries: tuple[Statement, ...],
    stage: str | None,
) -> list[ErrorRow]:
    """Setup/teardown statements on every server; servers that stopped answering are
    restarted. The failures, for the caller to record."""
    errors = []
    cap = clock.cap(SETUP_TIMEOUT_S)  # a budget cuts a long fill short
    for outcome in on_every_server(measurer.sets, test, queries, stage, cap.seconds):
        process, side = outcome.server
        if outcome.error is not None:
            errors.append(_cut_by_budget(outcome.error, cap, clock))
        if outcome.gone is not None:
            where = f"during {test.name} {stage or 'drop'} queries"
            measurer.recover(side, test.name, WHOLE_TEST, where, outcome.gone.message, process)
    return errors


def _cut_by_budget(error: ErrorRow, cap: Cap, clock: Clock) -> ErrorRow:
    """A statement the server stopped at a budget's limit did not fail: the budget ran out."""
    if not cap.by_budget or error.error_code not in TIMEOUT_CODES:
        return error
    message = f"{clock.cut_short(cap, 'the statement')} ({error.message})"
    return dataclasses.replace(error, stage=STAGE_NOT_RUN, message=message)
