"""Fuzzing the test parser (runner/testdef.py): whatever the bytes of a test file, parsing gives
a test or a TestDefError naming file:line (a bad test is an error of that test, exit 2 where
it stops a command), never another exception, and never unbounded memory."""

from __future__ import annotations

import sys
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import pytest
from hypothesis import given
from hypothesis import strategies as st

from artifacts.errors import ChperfError
from runner.substitution import MAX_QUERIES_PER_TEST
from runner.testdef import TEST_ATTRIBUTES, parse_test
from runner.testdef import TestDef as Definition
from tests.conftest import DATA, REPO
from tests.fuzz import FUZZ, memory_cap, mutated, tokens

PATH = Path("fuzz.xml")
SAMPLES = tuple(
    p.read_bytes()
    for directory in (REPO / "perf_tests", DATA / "clickhouse_style", DATA / "bad_tests")
    for p in sorted(directory.glob("*.xml"))
)


def parse_or_error(data: bytes) -> Definition | ChperfError:
    """The parse's outcome; any exception but a ChperfError fails the calling test."""
    with memory_cap():
        try:
            test = parse_test(PATH, data)
        except ChperfError as e:
            return e
    return test


def assert_clean(outcome: Definition | ChperfError) -> None:
    if isinstance(outcome, ChperfError):
        message = str(outcome)
        assert message.startswith(f"{PATH}:"), message  # file:line
        assert all(line.isprintable() for line in message.splitlines()), repr(message)
        return
    assert outcome.queries, "a test without queries must be an error"
    assert len(outcome.statements) <= MAX_QUERIES_PER_TEST


@FUZZ
@given(st.binary(max_size=4096))
def test_random_bytes_give_a_test_or_an_error_naming_file_and_line(data: bytes) -> None:
    assert_clean(parse_or_error(data))


@FUZZ
@given(mutated(SAMPLES))
def test_mutated_real_tests_give_a_test_or_an_error_naming_file_and_line(data: bytes) -> None:
    assert_clean(parse_or_error(data))


# --- Generated documents: well-formed more often, so the checks after the XML are reached. ---

_NAMES = ("a", "b", "x", "table", "1bad", "")
_FRAGMENTS = (
    "SELECT ", "{a}", "{b}", "{x}", "{table}", "{nope}", "{{", "}}", "{", "}", "{x:UInt8}", ";",
    "'", "'; SELECT 2", "--", "/*", "*/", " FROM numbers(10)", "CREATE TEMPORARY TABLE t ",
    "\n", "\x1b[31m", "::error::", "1",
)  # fmt: skip
_NUMBERS = ("0", "1", "-1", "0.5", "1e400", "nan", "inf", "-0", "x", "", "yes", "true")
_STATEMENTS = ("create_query", "fill_query", "query", "drop_query")


def _text(draw: st.DrawFn, parts: tuple[str, ...], max_size: int = 6) -> str:
    return "".join(draw(st.lists(st.sampled_from(parts), max_size=max_size)))


def _substitutions(draw: st.DrawFn) -> str:
    items = []
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(_NAMES))
        values = draw(st.lists(st.sampled_from(("1", "t1", "{a}", "", "x y", "{{")), max_size=4))
        wrapped = draw(st.booleans())
        cells = "".join(f"<value>{escape(v)}</value>" for v in values)
        body = f"<values>{cells}</values>" if wrapped else cells
        items.append(f"<substitution><name>{name}</name>{body}</substitution>")
    return f"<substitutions>{''.join(items)}</substitutions>"


def _statement(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(_STATEMENTS))
    attrs = ""
    for name in draw(st.lists(st.sampled_from(("tag", "short", "type", "file", "odd")))):
        value = draw(st.sampled_from(("{a}", "shell", "1", "missing.sql", "", "\n::error::x.sql")))
        attrs += f" {name}={quoteattr(value)}"
    text = _text(draw, _FRAGMENTS)
    body = f"<![CDATA[{text}]]>" if draw(st.booleans()) and "]]>" not in text else escape(text)
    return f"<{kind}{attrs}>{body}</{kind}>"


def _other(draw: st.DrawFn) -> str:
    return draw(
        st.sampled_from((
            "<settings><max_threads>1</max_threads></settings>",
            "<settings><a><b>1</b></a></settings>",
            '<settings file="missing.json"/>',
            '<settings file="&#10;::error::x&#9;.json"/>',
            "<tags><tag>long</tag><tag>x</tag></tags>",
            "<preconditions><table_exists>hits</table_exists><other/></preconditions>",
            "<type>loop</type>", "<frobnicate/>", '<include file="x.xml"/>', "",
        ))
    )  # fmt: skip


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    """A <test> of known elements and attributes, with texts and values that stress them."""
    children = [_substitutions(draw)] if draw(st.booleans()) else []
    children += [_statement(draw) for _ in range(draw(st.integers(0, 5)))]
    children += [_other(draw) for _ in range(draw(st.integers(0, 3)))]
    order = draw(st.permutations(children))
    names = draw(st.lists(st.sampled_from([*sorted(TEST_ATTRIBUTES), "odd"]), unique=True))
    attrs = "".join(f" {n}={quoteattr(draw(st.sampled_from(_NUMBERS)))}" for n in names)
    root = draw(st.sampled_from(("test", "test", "tset")))
    return f"<{root}{attrs}>{''.join(order)}</{root}>".encode()


@FUZZ
@given(documents())
def test_generated_tests_give_a_test_or_an_error_naming_file_and_line(data: bytes) -> None:
    assert_clean(parse_or_error(data))


@FUZZ
@given(tokens(max_size=60))
def test_markup_soup_gives_a_test_or_an_error_naming_file_and_line(data: bytes) -> None:
    assert_clean(parse_or_error(b"<test>" + data + b"</test>"))


# --- The shapes a fuzzer takes long to find: depth, width and expansion. ---


@pytest.mark.parametrize("depth", [sys.getrecursionlimit() * 2, 100_000])
@pytest.mark.parametrize("tag", ["a", "tags"])
def test_deep_nesting_is_a_test_with_warnings_not_a_recursion_error(depth: int, tag: str) -> None:
    data = f"<test>{f'<{tag}>' * depth}{f'</{tag}>' * depth}<query>SELECT 1</query></test>"
    outcome = parse_or_error(data.encode())
    assert isinstance(outcome, Definition), outcome
    assert [q.sql for q in outcome.queries] == ["SELECT 1"]


def _entities(levels: int, width: int) -> str:
    """A DTD whose entity eN expands to width**N copies of "lol"."""
    lines = ['<!ENTITY e0 "lol">']
    for level in range(1, levels + 1):
        lines.append(f'<!ENTITY e{level} "{f"&e{level - 1};" * width}">')
    return f"<!DOCTYPE test [{''.join(lines)}]>"


def test_billion_laughs_is_a_malformed_xml_error_not_gigabytes() -> None:
    data = f"{_entities(9, 10)}<test><query>SELECT '&e9;'</query></test>"
    outcome = parse_or_error(data.encode())
    assert isinstance(outcome, ChperfError)
    assert "fuzz.xml:1: malformed XML: limit on input amplification" in str(outcome)


def test_a_megabyte_attribute_and_text_are_read_as_written() -> None:
    big = "x" * (1 << 20)
    data = f'<test odd="{big}"><query tag="{big}">SELECT \'{big}\'</query></test>'
    outcome = parse_or_error(data.encode())
    assert isinstance(outcome, Definition), outcome
    assert len(outcome.queries[0].sql) == len(big) + 9 and outcome.queries[0].name == big
