"""Unit tests of the static test linter (runner/lint.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from artifacts.errors import ChperfError
from chperf.lint import lint_main, measure_problems
from runner.lint import _returns_large_result, lint_test
from runner.lintruns import MeasuredQuery, lint_paths, measured_problems
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
            "<fill_query>INSERT INTO t2 SELECT x FROM t1 LIMIT 5</fill_query>",
            QUERY,
            DROP,
        ),
        3,
        "LIMIT without ORDER BY over a table read by several threads in <fill_query>",
    ),
    (
        with_lines(CREATE, "<query>SELECT sum(x) FROM (SELECT x FROM t1 LIMIT 5)</query>", DROP),
        3,
        "LIMIT without ORDER BY over a table read by several threads in <query>",
    ),
    (with_lines(CREATE, QUERY, QUERY, DROP), 4, "query 1 repeats query 0"),
    (
        with_lines(
            CREATE,
            "<fill_query>INSERT INTO t1 SELECT number FROM numbers(5000000)</fill_query>",
            "<query>SELECT x, x + 1 FROM t1</query>",
            DROP,
        ),
        4,
        "returns one row per row of a large source",
    ),
    (
        with_lines(
            "<create_query>CREATE TABLE t1 (x UInt64) ENGINE = MergeTree ORDER BY x</create_query>",
            "<query>INSERT INTO t1 SELECT number FROM numbers(9)</query>",
            DROP,
        ),
        3,
        "inserts into MergeTree table t1 on every run and merges are not stopped",
    ),
    (
        with_lines(
            CREATE,
            "<query>INSERT INTO t1 SELECT number FROM numbers(9)</query>",
            QUERY,
            DROP,
        ),
        3,
        "inserts into t1, which query 1 reads",
    ),
    (with_lines(CREATE, QUERY), 2, "t1 is created but no <drop_query> drops it"),
    (
        with_lines(
            "<create_query>CREATE TABLE t1 (x UInt64) ENGINE = MergeTree ORDER BY x</create_query>",
            "<fill_query>INSERT INTO t1 SELECT number FROM numbers(9)</fill_query>",
            "<fill_query>INSERT INTO t1 SELECT number FROM numbers(9)</fill_query>",
            QUERY,
            DROP,
        ),
        3,
        "filled without OPTIMIZE TABLE t1 FINAL",
    ),
    (with_lines("<frobnicate/>", QUERY), 2, "unknown element <frobnicate> ignored"),
]


@pytest.mark.parametrize(("text", "line", "message"), BAD)
def test_problem_names_file_line_message_and_remedy(text: str, line: int, message: str) -> None:
    problems = lint_text(text)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"t.xml:{line}: ")
    assert message in problems[0]
    assert "(remedy: " in problems[0]


LARGE = {"t": 5_000_000, "small": 1000}


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count() FROM t",
        "SELECT x FROM t FORMAT Null",
        "SELECT x FROM t ORDER BY x LIMIT 10",
        "SELECT k, count() FROM t GROUP BY k",
        "SELECT max(c) FROM (SELECT k, count() AS c FROM t GROUP BY k)",
        "SELECT sumIf(x, x > 1), uniqExact(y) FROM t",
        "SELECT (argMax(x, y) - argMin(x, y)) / (max(x) - min(x)) FROM t",
        "SELECT boundingRatio(x, x) FROM t",
        "SELECT 1",
        "SELECT 'FROM' AS f",
        "INSERT INTO t SELECT number FROM numbers(10)",
        "WITH 1 AS a SELECT a + count() FROM t",
        # a filter or a join: how many rows come out cannot be told from the text
        "SELECT * FROM t WHERE x = 12345",
        "SELECT * FROM (SELECT 1 AS k FROM numbers_mt(756)) a LEFT JOIN t USING k",
        "SELECT DISTINCT x FROM t",
        # a small or unknown source
        "SELECT x FROM small",
        "SELECT x FROM unknown_table",
        "SELECT number FROM numbers(1000)",
    ],
)
def test_small_or_unknowable_results_are_not_flagged(sql: str) -> None:
    assert not _returns_large_result(sql, LARGE)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT x FROM t",
        "SELECT * FROM t FINAL",
        "SELECT number * 2 FROM numbers(10000000)",
        "SELECT URL FROM hits_100m_single",
        "SELECT arrayJoin(a) FROM t",
    ],
)
def test_row_per_row_results_of_a_large_source_are_flagged(sql: str) -> None:
    assert _returns_large_result(sql, LARGE)


@pytest.mark.parametrize(
    ("statement", "flagged"),
    [
        ("SELECT count() FROM (SELECT x FROM t1 LIMIT 5)", True),
        ("SELECT sum(number) FROM (SELECT number FROM numbers_mt(1000000000) LIMIT 10)", False),
        ("SELECT count() FROM t1 WHERE x IN (SELECT number FROM system.numbers LIMIT 5)", False),
        ("SELECT sum(x) FROM t1 GROUP BY x LIMIT 10", False),
        ("SELECT x FROM t1 ORDER BY x LIMIT 10", False),
        ("SELECT x FROM t1 LIMIT 1 BY x", False),
        ("CREATE TABLE t2 ENGINE = Memory AS SELECT x FROM t1 LIMIT 0", False),
        ("SELECT x FROM t1 LIMIT 5 SETTINGS max_threads = 1", False),
        ("SELECT x FROM ordered_view LIMIT 5", False),
    ],
)
def test_limit_without_order_by_is_flagged_only_where_the_rows_taken_vary(
    statement: str, flagged: bool
) -> None:
    view = "<create_query>CREATE VIEW ordered_view AS SELECT x FROM t1 ORDER BY x</create_query>"
    text = with_lines(CREATE, view, f"<query>{statement}</query>", DROP)
    problems = [p for p in lint_text(text) if "LIMIT without ORDER BY" in p]
    assert bool(problems) is flagged, problems


def test_a_test_reading_with_one_thread_takes_the_same_rows_every_time() -> None:
    text = with_lines(
        "<settings><max_threads>1</max_threads></settings>",
        CREATE,
        "<query>SELECT count() FROM (SELECT x FROM t1 LIMIT 5)</query>",
        DROP,
    )
    assert lint_text(text) == []


def test_a_problem_of_an_element_is_reported_once_for_all_its_expansions() -> None:
    text = with_lines(
        CREATE,
        "<substitutions><substitution><name>n</name><values><value>1</value><value>2</value>"
        "<value>3</value></values></substitution></substitutions>",
        "<query>SELECT count() FROM (SELECT x + {n} FROM t1 LIMIT 5)</query>",
        DROP,
    )
    problems = lint_text(text)
    assert len(problems) == 1, problems
    assert "(and 2 more expansions of this element)" in problems[0]


@pytest.mark.parametrize(
    "fill",
    [
        # Random data of one size and distribution costs the same to query on both servers:
        # ClickHouse's tests fill with rand() everywhere, and it does not hurt a comparison.
        "INSERT INTO t1 SELECT rand() FROM numbers(1000000)",
        "INSERT INTO t1 SELECT toUInt64(now()) - number FROM numbers(9)",
        # One insert of at most max_insert_block_size rows writes one part: nothing to merge.
        "INSERT INTO t1 SELECT number FROM numbers(1000000)",
    ],
)
def test_fills_that_are_fine_are_not_flagged(fill: str) -> None:
    create = "<create_query>CREATE TABLE t1 (x UInt64) ENGINE = MergeTree ORDER BY x</create_query>"
    assert lint_text(with_lines(create, f"<fill_query>{fill}</fill_query>", QUERY, DROP)) == []


def test_a_single_insert_larger_than_one_part_is_flagged_unsettled() -> None:
    create = "<create_query>CREATE TABLE t1 (x UInt64) ENGINE = MergeTree ORDER BY x</create_query>"
    fill = "<fill_query>INSERT INTO t1 SELECT number FROM numbers(5000000)</fill_query>"
    problems = lint_text(with_lines(create, fill, QUERY, DROP))
    assert len(problems) == 1 and "filled without OPTIMIZE TABLE t1 FINAL" in problems[0]


def test_create_table_as_select_fills_like_an_insert() -> None:
    create = (
        "<create_query>CREATE TABLE IF NOT EXISTS t1 ENGINE = MergeTree ORDER BY tuple() AS "
        "SELECT number AS x FROM numbers_mt(100000000)</create_query>"
    )
    (problem,) = lint_text(with_lines(create, QUERY, DROP))
    assert "filled without OPTIMIZE TABLE t1 FINAL" in problem
    optimize = "<fill_query>OPTIMIZE TABLE t1 FINAL</fill_query>"
    assert lint_text(with_lines(create, optimize, QUERY, DROP)) == []
    small = create.replace("100000000", "1000")
    assert lint_text(with_lines(small, QUERY, DROP)) == []
    empty = create.replace(" AS SELECT", " EMPTY  AS SELECT")
    assert lint_text(with_lines(empty, QUERY, DROP)) == []
    structure = "<create_query>CREATE TABLE t1 ENGINE = MergeTree ORDER BY x AS t0</create_query>"
    assert lint_text(with_lines(structure, QUERY, DROP)) == []


def test_a_view_left_behind_is_harmless_a_table_is_not() -> None:
    view = "<create_query>CREATE VIEW v1 AS SELECT 1</create_query>"
    assert lint_text(with_lines(view, QUERY)) == []
    assert "t1 is created but no <drop_query>" in lint_text(with_lines(CREATE, QUERY))[0]


def test_a_drop_naming_the_default_database_drops_the_unqualified_name() -> None:
    dictionary = (
        "<create_query>CREATE DICTIONARY dict1 (k UInt64, v UInt64) PRIMARY KEY k "
        "SOURCE(NULL()) LAYOUT(FLAT()) LIFETIME(0)</create_query>"
    )
    qualified = "<drop_query>DROP DICTIONARY IF EXISTS default.dict1</drop_query>"
    assert lint_text(with_lines(dictionary, QUERY, qualified)) == []
    table = CREATE.replace("TABLE t1", "TABLE default.t1")
    assert lint_text(with_lines(table, QUERY, DROP)) == []
    other = "<drop_query>DROP DICTIONARY IF EXISTS other.dict1</drop_query>"
    assert len(lint_text(with_lines(dictionary, QUERY, other))) == 1


def test_a_dropped_database_takes_its_tables_along_and_the_remedy_names_the_kind() -> None:
    database = "<create_query>CREATE DATABASE IF NOT EXISTS d1</create_query>"
    table = "<create_query>CREATE TABLE d1.t1 (x UInt8) ENGINE = Memory</create_query>"
    other = "<create_query>CREATE TABLE d2.t1 (x UInt8) ENGINE = Memory</create_query>"
    drop_database = "<drop_query>DROP DATABASE d1</drop_query>"
    assert lint_text(with_lines(database, table, QUERY, drop_database)) == []
    left = lint_text(with_lines(database, table, other, QUERY, drop_database))
    assert len(left) == 1 and "d2.t1 is created but no <drop_query>" in left[0]
    # a database whose name starts like it is another one
    longer = table.replace("d1.t1", "d10.t1")
    assert len(lint_text(with_lines(database, longer, QUERY, drop_database))) == 1
    dictionary = (
        "<create_query>CREATE DICTIONARY dict1 (k UInt64, v UInt64) PRIMARY KEY k "
        "SOURCE(NULL()) LAYOUT(FLAT()) LIFETIME(0)</create_query>"
    )
    (problem,) = lint_text(with_lines(dictionary, QUERY))
    assert "DROP DICTIONARY IF EXISTS dict1" in problem


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


def test_two_tests_sharing_a_table_name_are_fine_they_run_one_after_the_other(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.xml").write_text(CLEAN)
    (tmp_path / "b.xml").write_text(CLEAN)
    assert lint_paths([tmp_path]) == []


def test_legacy_elements_are_not_lint_problems() -> None:
    assert lint_text(with_lines("<main_metric/>", "<type>loop</type>", QUERY)) == []
    assert lint_text(with_lines("<name>another_name</name>", "<comment>c</comment>", QUERY)) == []


def test_timings_of_an_earlier_run_flag_queries_and_tests_over_their_limits(
    tmp_path: Path,
) -> None:
    from artifacts.tables import ERRORS, RUNS, TESTS, ErrorRow, RunRow, TestRow
    from artifacts.tsv import write_table

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "slow.xml").write_text(
        with_lines(*(f"<query>SELECT {i}</query>" for i in range(3)))
    )
    (tmp_path / "tests" / "ok.xml").write_text(
        '<test max_query_seconds="60">\n<query>SELECT 1</query>\n</test>'
    )
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    write_table(earlier, RUNS, [
        RunRow("slow", 0, side, n, f"q{n}", 20.0) for side in ("reference", "patched")
        for n in range(3)
    ] + [RunRow("ok", 0, "reference", 0, "q", 20.0)])  # fmt: skip
    write_table(earlier, ERRORS, [ErrorRow("slow", 1, "patched", "too long", 159, "stopped")])
    write_table(earlier, TESTS, [
        TestRow("slow", "slow.xml", "ran", "", 900.0), TestRow("ok", "ok.xml", "ran", "", 30.0),
    ])  # fmt: skip
    problems = lint_paths([tmp_path / "tests"], earlier)
    found = sorted((p.location.path.name, p.location.line, p.message) for p in problems)
    assert [(name, line) for name, line, _ in found] == [
        ("slow.xml", 1), ("slow.xml", 2), ("slow.xml", 3),
    ]  # fmt: skip
    assert "over the 600 s test budget" in found[0][2]
    assert "took 20.0 s a run" in found[1][2] and "over its 15 s limit" in found[1][2]
    assert "was too long" in found[2][2]


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


def test_lint_lists_unreadable_entries_and_lints_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "good.xml").write_text(CLEAN)
    (tmp_path / "bad.xml").write_text(with_lines(CREATE, QUERY))
    (tmp_path / "dangling.xml").symlink_to(tmp_path / "gone.xml")
    os.mkfifo(tmp_path / "pipe.xml")
    problems = lint_paths([tmp_path])
    unreadable = [p for p in problems if "cannot read test file" in p.message]
    assert sorted(p.location.path.name for p in unreadable) == ["dangling.xml", "pipe.xml"]
    assert all(p.remedy == "check the path and mode" for p in unreadable)
    assert any(p.location.path.name == "bad.xml" for p in problems)
    assert lint_main([tmp_path], measure=False) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'pipe.xml'}:0: cannot read test file: not a regular file" in err
    assert f"{tmp_path / 'bad.xml'}:2: t1 is created but no <drop_query> drops it" in err


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


@pytest.mark.parametrize(
    "stop",
    [
        "<create_query>SYSTEM STOP MERGES t1</create_query>",
        "<fill_query>SYSTEM STOP MERGES</fill_query>",
    ],
)
def test_merges_stopped_before_the_inserts_settle_the_table(stop: str) -> None:
    create = "<create_query>CREATE TABLE t1 (x UInt64) ENGINE = MergeTree ORDER BY x</create_query>"
    fills = ["<fill_query>INSERT INTO t1 SELECT number FROM numbers(9)</fill_query>"] * 2
    assert lint_text(with_lines(create, stop, *fills, QUERY, DROP)) == []
