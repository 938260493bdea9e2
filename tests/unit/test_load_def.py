"""The <load> element (runner/loaddef.py through runner/testdef.py), the block order and the
percentiles of runner/load.py and runner/loadclients.py, and what the linter and pinning make
of load tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from artifacts.tables import PATCHED, REFERENCE
from runner.lint import lint_test
from runner.load import block_order
from runner.loadclients import percentile
from runner.pinning import AUTO, resolve
from runner.testdef import TestDefError, load_test, parse_test
from tests.conftest import REPO

PATH = Path("/suite/mix.xml")


def _test(load: str, query: str = "SELECT 1") -> bytes:
    return f"<test>\n{load}\n<query>{query}</query>\n</test>\n".encode()


def test_the_example_load_tests_parse() -> None:
    select = load_test(REPO / "perf_tests" / "load_select_mix.xml")
    insert = load_test(REPO / "perf_tests" / "load_insert.xml")
    assert select.load is not None and insert.load is not None
    assert select.load.concurrency == (1, 2, 4) and not select.load.is_insert
    assert (select.load.block_seconds, select.load.blocks) == (0.5, 12)
    assert len(select.queries) == 4
    assert insert.load.insert_table == "load_insert_t" and insert.load.concurrency == (1, 2)
    # measured time, both sides, every level: inside the README's minute a test
    assert select.load.seconds() == 36.0 and insert.load.seconds() == 24.0


def test_a_test_without_load_has_none() -> None:
    assert parse_test(PATH, _test("")).load is None


def test_defaults_apply_to_omitted_elements() -> None:
    spec = parse_test(PATH, _test("<load><concurrency>2</concurrency></load>")).load
    assert spec is not None
    assert (spec.concurrency, spec.block_seconds, spec.blocks, spec.insert_table) == (
        (2,),
        1.0,
        8,
        "",
    )


@pytest.mark.parametrize(
    ("load", "line", "words"),
    [
        ("<load><concurrency>1 x</concurrency></load>", 2, "<concurrency>"),
        ("<load><concurrency>4 1</concurrency></load>", 2, "not increasing"),
        ("<load><concurrency>0</concurrency></load>", 2, "<concurrency>"),
        ("<load><concurrency>65</concurrency></load>", 2, "<concurrency>"),
        ("<load><concurrency>1 1</concurrency></load>", 2, "not increasing"),
        ("<load><block_seconds>1</block_seconds></load>", 2, "without <concurrency>"),
        ("<load>\n<concurrency>1</concurrency>\n<blocks>5</blocks></load>", 4, "<blocks>"),
        ("<load><concurrency>1</concurrency><blocks>2x</blocks></load>", 2, "<blocks>"),
        ("<load><concurrency>1</concurrency><block_seconds>nan</block_seconds></load>", 2, "block"),
        ("<load><concurrency>1</concurrency><block_seconds>0.1</block_seconds></load>", 2, "block"),
        ("<load><concurrency>1</concurrency><insert_table>a;b</insert_table></load>", 2, "table"),
        ("<load><concurrency>1</concurrency><clients>1</clients></load>", 2, "unknown"),
        (
            "<load><concurrency>1</concurrency><blocks>6</blocks><blocks>7</blocks></load>",
            2,
            "twice",
        ),
        ("<load><concurrency>1</concurrency></load>\n<load/>", 3, "second <load>"),
    ],
)
def test_a_bad_load_element_names_its_line(load: str, line: int, words: str) -> None:
    with pytest.raises(TestDefError) as e:
        parse_test(PATH, _test(load))
    assert e.value.location.line == line
    assert words in e.value.reason
    assert e.value.hint  # says what is expected


def test_blocks_follow_the_runs_order() -> None:
    order = block_order(4, (REFERENCE, PATCHED))
    assert [(s.pair, s.side[0]) for s in order] == [
        (0, "r"), (0, "p"), (1, "r"), (1, "p"), (2, "p"), (2, "r"), (3, "p"), (3, "r"),
    ]  # fmt: skip
    assert [s.side for s in block_order(2, (PATCHED,))] == [PATCHED, PATCHED]


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([], 0.5, None),
        ([3.0], 0.99, 3.0),
        ([4.0, 1.0, 3.0, 2.0], 0.5, 2.0),
        ([float(i) for i in range(1, 101)], 0.9, 90.0),
        ([float(i) for i in range(1, 101)], 0.99, 99.0),
        ([float(i) for i in range(1, 11)], 0.99, 10.0),
    ],
)
def test_percentiles_are_nearest_rank(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == expected


def test_the_insert_table_counts_as_reset_for_the_linter() -> None:
    insert = load_test(REPO / "perf_tests" / "load_insert.xml")
    assert not [p for p in lint_test(insert) if "merges are not stopped" in p.message]


def test_load_tests_alone_are_not_pinned_and_do_not_unpin_a_suite() -> None:
    select = load_test(REPO / "perf_tests" / "load_select_mix.xml")
    single = parse_test(
        Path("/suite/one.xml"),
        b"<test><settings><max_threads>1</max_threads></settings><query>SELECT 1</query></test>",
    )
    assert resolve(AUTO, [select], {0, 1}).cpus == ()
    assert resolve(AUTO, [select, single], {0, 1}).cpus == (1,)
