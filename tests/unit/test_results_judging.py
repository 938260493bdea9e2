"""Table-driven tests of result equality's judgement (compare/results.py) and of what it does
to a verdict, the summary message, summary.json and the PR comment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from artifacts.results import RESULTS, ResultRow, read_result_problems
from artifacts.summary import write_summary
from artifacts.tsv import write_table
from ci.check import CheckSummary
from ci.links import ReportLinks
from ci.markdown import comment
from compare.results import (
    ResultStatus,
    check_results,
    gather_results,
    results_message,
    results_summary,
    varying_results,
    with_results,
)
from compare.verdict import QueryVerdict, Verdict

A, B, C = "a" * 32, "b" * 32, "c" * 32


def row(
    side: str, process: int, digest: str, rows: int = 10, execution: str = "prewarm"
) -> ResultRow:
    return ResultRow("t", 0, side, process, execution, rows, digest, rows * 4, 0.001)


R, P = "reference", "patched"


@pytest.mark.parametrize(
    ("rows", "status"),
    [
        # two processes a side, all agree: equal
        ([row(R, 0, A), row(P, 0, A), row(P, 1, A), row(R, 1, A)], ResultStatus.EQUAL),
        # one process a side, no recheck needed: equal on one execution a side
        ([row(R, 0, A), row(P, 0, A)], ResultStatus.EQUAL),
        # sides differ, each confirmed by a second execution: wrong result
        (
            [row(R, 0, A), row(P, 0, B), row(P, 0, B, execution="recheck"),
             row(R, 0, A, execution="recheck")],
            ResultStatus.WRONG,
        ),
        # same hash, other row count: still another result
        ([row(R, 0, A), row(R, 1, A), row(P, 0, A, 9), row(P, 1, A, 9)], ResultStatus.WRONG),
        # one server gave two results: non-deterministic, whatever the other side did
        (
            [row(R, 0, A), row(P, 0, B), row(P, 0, C, execution="recheck"),
             row(R, 0, A, execution="recheck")],
            ResultStatus.NON_DETERMINISTIC,
        ),
        # each server consistent, the side's two processes not: non-deterministic
        ([row(R, 0, A), row(R, 1, B), row(P, 0, A), row(P, 1, B)], ResultStatus.NON_DETERMINISTIC),
        # the sides differ but the recheck never ran: cannot tell
        ([row(R, 0, A), row(P, 0, B)], ResultStatus.UNCONFIRMED),
    ],
    ids=[
        "equal",
        "equal, one execution a side",
        "wrong result",
        "row count differs",
        "varies on one server",
        "varies between processes",
        "unconfirmed",
    ],
)  # fmt: skip
def test_result_status(rows: list[ResultRow], status: ResultStatus) -> None:
    (check,) = check_results(rows).values()
    assert check.status is status


def test_a_query_hashed_on_one_side_only_is_not_checked() -> None:
    assert check_results([row(R, 0, A), row(R, 1, A)]) == {}


def test_wrong_result_names_both_hashes_and_row_counts() -> None:
    (check,) = check_results([row(R, 0, A, 300), row(R, 1, A, 300), row(P, 0, B, 7),
                              row(P, 1, B, 7)]).values()  # fmt: skip
    assert check.reason == f"wrong result: reference 300 rows, hash {A}; patched 7 rows, hash {B}"


def test_non_deterministic_says_where_it_varied() -> None:
    rows = [row(R, 0, A), row(R, 1, B), row(P, 0, A), row(P, 1, B)]
    (check,) = check_results(rows).values()
    assert "between the reference side's server processes" in check.reason
    rows = [row(R, 0, A), row(R, 0, B, execution="recheck"), row(P, 0, A)]
    (check,) = check_results(rows).values()
    assert "between executions on one reference server" in check.reason


def test_sides_that_differ_over_random_fill_data_are_non_deterministic_not_wrong(
    tmp_path: Path,
) -> None:
    confirmed = [row(R, 0, A), row(P, 0, B), row(P, 0, B, execution="recheck"),
                 row(R, 0, A, execution="recheck")]  # fmt: skip
    (check,) = check_results(confirmed, {"t": "t.xml:4 rand()"}).values()
    assert check.status is ResultStatus.NON_DETERMINISTIC
    assert "random data (t.xml:4 rand()), so each server holds its own" in check.reason
    # another test's random fill changes nothing; equal results stay equal
    assert check_results(confirmed, {"other": "o.xml:1 rand()"})[("t", 0)].status is (
        ResultStatus.WRONG
    )
    equal = [row(R, 0, A), row(P, 0, A)]
    assert check_results(equal, {"t": "t.xml:4 rand()"})[("t", 0)].status is ResultStatus.EQUAL
    # from the artifacts: tests.tsv says where the test draws random data
    write_table(tmp_path, RESULTS, confirmed)
    (tmp_path / "tests.tsv").write_text(
        "test\tfile\tstatus\treason\twall_time\tmax_ignored_relative_change\trandom_fill\n"
        "t\tt.xml\tran\t\t1.0\t\\N\tt.xml:4 rand()\n"
    )
    (found,) = gather_results(tmp_path).checks.values()
    assert found.status is ResultStatus.NON_DETERMINISTIC
    # a tests.tsv written before the column existed: a wrong result, as before
    (tmp_path / "tests.tsv").write_text(
        "test\tfile\tstatus\treason\twall_time\tmax_ignored_relative_change\n"
        "t\tt.xml\tran\t\t1.0\t\\N\n"
    )
    (found,) = gather_results(tmp_path).checks.values()
    assert found.status is ResultStatus.WRONG


def verdict(kind: Verdict = Verdict.FASTER) -> QueryVerdict:
    return QueryVerdict("t", 0, "SELECT 1", kind, f"{kind.value}: D -40%", False, 7, 7, None)


def test_a_wrong_result_fails_a_faster_query_and_leads_its_reason() -> None:
    checks = check_results([row(R, 0, A), row(R, 1, A), row(P, 0, B), row(P, 1, B)])
    (found,) = with_results([verdict()], checks)
    assert found.verdict is Verdict.FASTER  # the timing verdict stays
    assert found.fails_check
    assert found.reason.startswith("wrong result: reference 10 rows") and "faster" in found.reason


def test_a_non_deterministic_result_does_not_fail_the_query() -> None:
    checks = check_results([row(R, 0, A), row(R, 1, B), row(P, 0, A), row(P, 1, B)])
    (found,) = with_results([verdict(Verdict.UNCHANGED)], checks)
    assert not found.fails_check
    assert found.reason.startswith("unchanged") and "non-deterministic result" in found.reason


def test_equal_results_leave_the_verdict_alone() -> None:
    checks = check_results([row(R, 0, A), row(P, 0, A)])
    assert with_results([verdict()], checks) == [verdict()]


def test_message_puts_wrong_results_first_and_non_deterministic_in_a_note() -> None:
    wrong = check_results([row(R, 0, A), row(R, 1, A), row(P, 0, B), row(P, 1, B)])
    (check,) = check_results([row(R, 0, A), row(R, 1, B), row(P, 0, A)]).values()
    varying = {("u", 1): check}
    message = results_message("1 faster, 2 unchanged", {**wrong, **varying})
    assert message == "1 wrong result, 1 faster, 2 unchanged; note: 1 non-deterministic result"
    assert results_message("3 unchanged", {}) == "3 unchanged"


def test_summary_section_round_trips_through_the_report_reader(tmp_path: Path) -> None:
    write_table(tmp_path, RESULTS, [row(R, 0, A), row(R, 1, A), row(P, 0, B, 3), row(P, 1, B, 3)])
    evidence = gather_results(tmp_path)
    section = results_summary(evidence, [verdict()])
    assert section is not None
    assert section["counts"]["wrong result"] == 1 and section["not_compared"] == 0
    write_summary(tmp_path, {"schema_version": 1, "results": section})
    (problem,) = read_result_problems(tmp_path)
    assert (problem.status, problem.reference[0].hash, problem.patched[0].rows) == (
        "wrong result", A, 3,
    )  # fmt: skip


def test_a_run_without_results_tsv_has_no_results_section(tmp_path: Path) -> None:
    evidence = gather_results(tmp_path)
    assert not evidence.recorded and results_summary(evidence, [verdict()]) is None


def test_a_damaged_line_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    write_table(tmp_path, RESULTS, [row(R, 0, A), row(P, 0, A)])
    with (tmp_path / RESULTS.file).open("a") as f:
        f.write("t\tnot a number\treference\n")
    evidence = gather_results(tmp_path)
    assert evidence.problems and evidence.checks[("t", 0)].status is ResultStatus.EQUAL


def test_damaged_summary_sections_read_as_no_problems(tmp_path: Path) -> None:
    sections: list[object] = [{"queries": "x"}, {"queries": [{"test": "t"}, 3]}, [], None]
    for section in sections:
        (tmp_path / "summary.json").write_text(json.dumps({"results": section}))
        assert read_result_problems(tmp_path) == ()


def test_varying_results_are_what_lint_reports(tmp_path: Path) -> None:
    write_table(tmp_path, RESULTS, [row(R, 0, A), row(R, 0, B, execution="recheck"), row(P, 0, A)])
    assert list(varying_results(tmp_path)) == [("t", 0)]


def test_pr_comment_shows_both_hashes_and_row_counts(tmp_path: Path) -> None:
    write_table(tmp_path, RESULTS, [row(R, 0, A, 300), row(R, 1, A, 300), row(P, 0, B, 7),
                                    row(P, 1, B, 7)])  # fmt: skip
    section = results_summary(gather_results(tmp_path), [verdict()])
    write_summary(tmp_path, {"schema_version": 1, "results": section})
    summary = CheckSummary(
        "failure", 1, "1 wrong result, 1 faster", (), (), (), "",
        wrong_results=read_result_problems(tmp_path),
    )  # fmt: skip
    text = comment(summary, ReportLinks())
    assert f"| t query 0 | 300 rows, hash {A} | 7 rows, hash {B} |" in text


def test_a_run_with_no_result_check_compares_nothing(tmp_path: Path) -> None:
    write_table(tmp_path, RESULTS, [])  # the runner writes the header only
    assert gather_results(tmp_path).recorded  # an empty file alone: every query not compared
    evidence = gather_results(tmp_path, {"options": {"check_results": False}})
    assert not evidence.recorded and results_summary(evidence, [verdict()]) is None
