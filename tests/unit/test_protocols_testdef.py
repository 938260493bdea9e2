"""Unit tests of the <protocols> opt-in (runner/protocols.py): parsing, its errors with
file:line, the order of the executions, and the linter's view of such a test."""

from __future__ import annotations

from pathlib import Path

import pytest

from artifacts.tables import PATCHED, REFERENCE
from runner.lint import lint_test
from runner.protocols import DEFAULT_RUNS, ProtocolSlot, run_order
from runner.testdef import TestDefError, load_test, parse_test
from tests.conftest import REPO

LARGE = "SELECT number, toString(number) FROM numbers(1000000)"


def _test(protocols: str) -> bytes:
    return f"<test>\n{protocols}\n<query>{LARGE}</query>\n</test>".encode()


def test_a_test_without_the_element_times_no_protocols() -> None:
    assert parse_test(Path("t.xml"), _test("")).protocols is None


@pytest.mark.parametrize(
    ("element", "protocols", "runs"),
    [
        ("<protocols>native http</protocols>", ("native", "http"), DEFAULT_RUNS),
        ("<protocols>HTTP</protocols>", ("http",), DEFAULT_RUNS),
        ("<protocols runs='8'>http, native</protocols>", ("http", "native"), 8),
        ("<protocols runs=' 40 '>\n  native\n</protocols>", ("native",), 40),
    ],
)
def test_the_element_names_protocols_in_order_and_pairs(
    element: str, protocols: tuple[str, ...], runs: int
) -> None:
    spec = parse_test(Path("t.xml"), _test(element)).protocols
    assert spec is not None
    assert (spec.protocols, spec.runs, spec.line) == (protocols, runs, 2)


@pytest.mark.parametrize(
    ("element", "message"),
    [
        ("<protocols></protocols>", "names no protocol"),
        ("<protocols>native grpc</protocols>", "unknown protocol 'grpc'"),
        ("<protocols>http http</protocols>", "names a protocol twice"),
        ("<protocols runs='5'>http</protocols>", "runs='5'> is out of range"),
        ("<protocols runs='many'>http</protocols>", "runs='many'> is out of range"),
        ("<protocols runs='41'>http</protocols>", "out of range"),
        ("<protocols runs='\u0661\u0660'>http</protocols>", "out of range"),  # Arabic-Indic 10
        ("<protocols every='1'>http</protocols>", "unknown attribute every"),
        ("<protocols><p>http</p></protocols>", "has a child element <p>"),
        ("<protocols>http</protocols><protocols>native</protocols>", "a second <protocols>"),
    ],
)
def test_a_bad_element_is_an_error_naming_file_and_line(element: str, message: str) -> None:
    with pytest.raises(TestDefError) as error:
        parse_test(Path("dir/t.xml"), _test(element))
    assert str(error.value.location) == "dir/t.xml:2"
    assert message in error.value.message


def test_the_element_is_no_unknown_element_warning() -> None:
    test = parse_test(Path("t.xml"), _test("<protocols>http</protocols>"))
    assert not test.warnings


def test_each_protocol_runs_its_own_pair_and_the_protocols_take_turns_first() -> None:
    both = [REFERENCE, PATCHED]
    sides = {"native": list(both), "http": list(both)}
    order = [
        [(s.protocol, s.side) for s in run_order(run, ("native", "http"), sides)]
        for run in range(4)
    ]
    r, p = REFERENCE, PATCHED
    assert order == [
        [("native", r), ("native", p), ("http", r), ("http", p)],
        [("http", r), ("http", p), ("native", r), ("native", p)],
        [("native", p), ("native", r), ("http", p), ("http", r)],
        [("http", p), ("http", r), ("native", p), ("native", r)],
    ]


def test_a_protocol_left_on_one_side_runs_there_alone_and_one_left_on_none_not_at_all() -> None:
    sides = {"native": [PATCHED], "http": []}
    assert run_order(0, ("native", "http"), sides) == [ProtocolSlot(0, "native", PATCHED)]


def test_the_linter_does_not_flag_the_large_result_a_protocols_test_exists_for() -> None:
    plain = parse_test(Path("t.xml"), _test(""))
    timed = parse_test(Path("t.xml"), _test("<protocols>native http</protocols>"))
    assert any("large source" in p.message for p in lint_test(plain))
    assert not any("large source" in p.message for p in lint_test(timed))


def test_the_example_test_times_both_protocols() -> None:
    test = load_test(REPO / "perf_tests" / "protocols_large_result.xml")
    assert test.protocols is not None and test.protocols.protocols == ("native", "http")
    assert not list(lint_test(test))
