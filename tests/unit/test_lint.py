"""Unit tests of the static test linter (runner/lint.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from artifacts.errors import ChperfError
from chperf.lint import lint_main, measure_problems
from runner.lint import (
    MeasuredQuery,
    _returns_large_result,
    lint_paths,
    lint_test,
    measured_problems,
)
from runner.testdef import Location, parse_test
from tests.conftest import REPO

SUITE = REPO / "perf_tests"

CLEAN = """<test>
    <create_query>CREATE TABLE c_t (x UInt64) ENGINE = MergeTree ORDER BY x</create_query>
    <fill_query>INSERT INTO c_t SELECT intHash64(number) FROM numbers(1000)</fill_query>
    <fill_query>OPTIMIZE TABLE c_t FINAL</fill_query>
    <query>SELECT sum(x) FROM c_t</query>
    <query>SELECT x FROM c_t ORDER BY x LIMIT 10</query>
    <drop_query>DROP TABLE IF EXISTS c_t</drop_query>
</test>"""


def lint_text(text: str) -> list[str]:
    return [str(p) for p in lint_test(parse_test(Path("t.xml"), text.encode()))]


def test_clean_test_has_no_problems() -> None:
    assert lint_text(CLEAN) == []


def with_lines(*statements: str) -> str:
    """A test whose statements start at line 2, one per line."""
    return "<test>\n" + "\n".join(statements) + "\n</test>"


CREATE = "<create_query>CREATE TABLE t1 (x UInt64) ENGINE = Memory</create_query>"
DROP = "<drop_query>DROP TABLE IF EXISTS t1</drop_query>"
QUERY = "<query>SELECT count() FROM t1</query>"

BAD = [
    (
        with_lines(
            CREATE,
            "<fill_query>INSERT INTO t1 SELECT rand() FROM numbers(9)</fill_query>",
            QUERY,
            DROP,
        ),
        3,
        "nondeterministic rand()",
    ),
    (
        with_lines(
            CREATE,
            "<fill_query>INSERT INTO t1 SELECT toUInt64(now()) FROM numbers(9)</fill_query>",
            QUERY,
            DROP,
        ),
        3,
        "nondeterministic now()",
    ),
    (
        with_lines(
            CREATE,
            "<fill_query>INSERT INTO t1 SELECT number FROM numbers(9) LIMIT 5</fill_query>",
            QUERY,
            DROP,
        ),
        3,
        "LIMIT without ORDER BY in <fill_query>",
    ),
    (
        with_lines(CREATE, "<query>SELECT x FROM t1 LIMIT 5</query>", DROP),
        3,
        "LIMIT without ORDER BY in <query>",
    ),
    (with_lines(CREATE, QUERY, QUERY, DROP), 4, "query 1 repeats query 0"),
    (
        with_lines(CREATE, "<query>SELECT x, x + 1 FROM t1 WHERE x > 3</query>", DROP),
        3,
        "may return a large result",
    ),
    (with_lines(CREATE, QUERY), 2, "t1 is created but no <drop_query> drops it"),
    (
        with_lines(
            "<create_query>CREATE TABLE t1 (x UInt64) ENGINE = MergeTree ORDER BY x</create_query>",
            "<fill_query>INSERT INTO t1 SELECT number FROM numbers(9)</fill_query>",
            QUERY,
            DROP,
        ),
        3,
        "filled without OPTIMIZE TABLE t1 FINAL",
    ),
    (with_lines("<main_metric/>", QUERY), 2, "legacy <main_metric> ignored"),
]


@pytest.mark.parametrize(("text", "line", "message"), BAD)
def test_problem_names_file_line_message_and_remedy(text: str, line: int, message: str) -> None:
    problems = lint_text(text)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"t.xml:{line}: ")
    assert message in problems[0]
    assert "(remedy: " in problems[0]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count() FROM t",
        "SELECT x FROM t FORMAT Null",
        "SELECT x FROM t ORDER BY x LIMIT 10",
        "SELECT k, count() FROM t GROUP BY k",
        "SELECT max(c) FROM (SELECT k, count() AS c FROM t GROUP BY k)",
        "SELECT sumIf(x, x > 1), uniqExact(y) FROM t",
        "SELECT 1",
        "SELECT 'FROM' AS f",
        "INSERT INTO t SELECT number FROM numbers(10)",
        "WITH 1 AS a SELECT a + count() FROM t",
    ],
)
def test_small_results_are_not_flagged(sql: str) -> None:
    assert not _returns_large_result(sql)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT x FROM t",
        "SELECT DISTINCT x FROM t WHERE y IN (SELECT count() FROM u)",
        "SELECT * FROM t WHERE x = 'LIMIT 5'",
        "SELECT arrayJoin(a) FROM (SELECT groupArray(x) AS a FROM t)",
    ],
)
def test_row_per_row_results_are_flagged(sql: str) -> None:
    assert _returns_large_result(sql)


def test_nondeterministic_function_in_string_literal_is_not_flagged() -> None:
    fill = "<fill_query>INSERT INTO t1 SELECT 'rand()' FROM numbers(9)</fill_query>"
    assert lint_text(with_lines(CREATE, fill, QUERY, DROP)) == []


def test_write_path_with_stopped_merges_is_settled() -> None:
    text = with_lines(
        "<create_query>CREATE TABLE t1 (x UInt64) ENGINE = MergeTree ORDER BY x</create_query>",
        "<fill_query>SYSTEM STOP MERGES t1</fill_query>",
        "<query>INSERT INTO t1 SELECT number FROM numbers(9)</query>",
        DROP,
    )
    assert lint_text(text) == []


def test_unknown_placeholder_is_a_problem_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "p.xml").write_text("<test>\n<query>SELECT {nope}</query>\n</test>")
    problems = lint_paths([tmp_path])
    assert [(p.location.line, p.message) for p in problems] == [
        (2, "unknown placeholder {nope} in <query>")
    ]


def test_two_tests_sharing_a_table_name_are_a_problem(tmp_path: Path) -> None:
    (tmp_path / "a.xml").write_text(CLEAN)
    (tmp_path / "b.xml").write_text(CLEAN)
    problems = lint_paths([tmp_path])
    assert len(problems) == 1
    assert problems[0].location.path == tmp_path / "b.xml"
    assert "also created by test a" in problems[0].message


def test_lint_main_exit_codes_and_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "good.xml").write_text(CLEAN)
    assert lint_main([tmp_path / "good.xml"], measure=False) == 0
    (tmp_path / "bad.xml").write_text(with_lines(CREATE, QUERY))
    assert lint_main([tmp_path / "bad.xml"], measure=False) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'bad.xml'}:2: t1 is created but no <drop_query> drops it" in err
    assert lint_main([tmp_path / "missing"], measure=False) == 2


def test_lint_paths_rejects_a_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ChperfError):
        lint_paths([tmp_path / "missing.xml"])


def test_repository_suite_lints_clean() -> None:
    assert [str(p) for p in lint_paths([SUITE])] == []


MEASURED = [
    (MeasuredQuery("t", 0, "unchanged", "", 0.050, 0.03), []),
    (MeasuredQuery("t", 0, "unchanged", "", 0.004, 0.03), ["below the 10 ms floor"]),
    (MeasuredQuery("t", 0, "unchanged", "", 2.5, 0.02), ["above the 2 s ceiling"]),
    (MeasuredQuery("t", 0, "unstable", "", 0.1, 0.25), ["A/A threshold T 25.0% is above 10%"]),
    (
        MeasuredQuery("t", 0, "error", "fails on both: Unknown function f", None, None),
        ["not measured: fails on both: Unknown function f"],
    ),
    (MeasuredQuery("other", 0, "unchanged", "", 0.001, 0.5), []),  # not a linted test
]


@pytest.mark.parametrize(("measured", "messages"), MEASURED)
def test_measured_problems_apply_the_limits(measured: MeasuredQuery, messages: list[str]) -> None:
    where = Location(Path("t.xml"), 3)
    problems = measured_problems([measured], {("t", 0): where})
    assert len(problems) == len(messages)
    for problem, message in zip(problems, messages, strict=True):
        assert message in problem.message
        assert problem.location == where


@pytest.mark.integration
def test_lint_measure_flags_a_query_too_short_to_measure(tmp_path: Path) -> None:
    (tmp_path / "short.xml").write_text(
        "<test>\n"
        "<query>SELECT count() FROM numbers(10)</query>\n"
        "<query>SELECT sum(cityHash64(number)) FROM numbers(5000000)</query>\n"
        "</test>"
    )
    problems = measure_problems([tmp_path])
    on_line = {line: [p.message for p in problems if p.location.line == line] for line in (2, 3)}
    assert any("below the 10 ms floor" in m for m in on_line[2]), problems
    assert not any("floor" in m or "ceiling" in m for m in on_line[3]), problems
