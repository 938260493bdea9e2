"""Unit tests of the test-definition parser (runner/testdef.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from artifacts.errors import ChperfError
from runner.substitution import expand
from runner.testdef import (
    TestDefError,
    check_unique_names,
    discover,
    load_test,
    parse_test,
)
from runner.testelements import ram_shortfall
from tests.conftest import REPO

FULL = """<test max_ignored_relative_change="0.2">
    <settings>
        <max_threads>1</max_threads>
        <max_block_size>8192</max_block_size>
    </settings>
    <substitutions>
        <substitution>
            <name>table</name>
            <values><value>t1</value><value>t2</value></values>
        </substitution>
        <substitution>
            <name>func</name>
            <values><value>sum</value><value>avg</value><value>max</value></values>
        </substitution>
    </substitutions>
    <create_query>CREATE TABLE {table} (x UInt64) ENGINE = MergeTree ORDER BY x</create_query>
    <fill_query>INSERT INTO {table} SELECT number FROM numbers(10)</fill_query>
    <query>SELECT {func}(x) FROM {table}</query>
    <query>SELECT count() FROM t1</query>
    <drop_query>DROP TABLE IF EXISTS {table}</drop_query>
    <tags><tag>long</tag></tags>
</test>
"""


def test_full_example_expands_every_section() -> None:
    test = parse_test(Path("dir/example.xml"), FULL.encode())
    assert test.name == "example"
    assert test.settings == (("max_threads", "1"), ("max_block_size", "8192"))
    assert test.create_queries == (
        "CREATE TABLE t1 (x UInt64) ENGINE = MergeTree ORDER BY x",
        "CREATE TABLE t2 (x UInt64) ENGINE = MergeTree ORDER BY x",
    )
    assert test.fill_queries[1] == "INSERT INTO t2 SELECT number FROM numbers(10)"
    assert test.drop_queries == ("DROP TABLE IF EXISTS t1", "DROP TABLE IF EXISTS t2")
    assert test.max_ignored_relative_change == 0.2
    assert test.is_long
    assert test.warnings == ()


def test_query_indices_iterate_placeholders_in_sorted_name_order() -> None:
    # Names sorted: func before table; the last name (table) varies fastest.
    test = parse_test(Path("example.xml"), FULL.encode())
    assert [(q.index, q.sql) for q in test.queries] == [
        (0, "SELECT sum(x) FROM t1"),
        (1, "SELECT sum(x) FROM t2"),
        (2, "SELECT avg(x) FROM t1"),
        (3, "SELECT avg(x) FROM t2"),
        (4, "SELECT max(x) FROM t1"),
        (5, "SELECT max(x) FROM t2"),
        (6, "SELECT count() FROM t1"),
    ]
    assert {q.location.line for q in test.queries[:6]} == {18}
    assert test.queries[6].location.line == 19


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("SELECT 1", ["SELECT 1"]),
        ("{b} {a}", ["1 x", "2 x", "1 y", "2 y"]),
        ("{a}{a}", ["xx", "yy"]),
        ("SELECT map('k', 1), {{'literal'}}", ["SELECT map('k', 1), {'literal'}"]),
        ("SELECT {p:UInt32}, '{\"j\": 1}'", ["SELECT {p:UInt32}, '{\"j\": 1}'"]),
        ("{{a}} {a}", ["{a} x", "{a} y"]),
    ],
)
def test_expand_substitutes_declared_placeholders_only(template: str, expected: list[str]) -> None:
    assert expand(template, {"a": ["x", "y"], "b": ["1", "2"]}) == expected


BAD_CASES = [
    ("<test><query>SELECT 1</query>", 1, "malformed XML"),
    ("<test>\n<query>SELECT 1</qery>\n</test>", 2, "malformed XML"),
    ("<tset><query>SELECT 1</query></tset>", 1, "not <test>"),
    ("<test>\n<query>\nSELECT\n  {nope}</query>\n</test>", 4, "unknown placeholder {nope}"),
    (
        "<test>\n<substitutions>\n<substitution><name>x</name>\n<values>\n</values>"
        "</substitution></substitutions><query>SELECT {x}</query></test>",
        4,
        "substitution {x} has no values",
    ),
    (
        "<test>\n<create_query>CREATE TABLE t (x UInt8) ENGINE = Memory</create_query>\n</test>",
        1,
        "no <query>",
    ),
    ("<test>\n\n<query>  </query></test>", 3, "empty <query>"),
    ('<test max_ignored_relative_change="big"><query>SELECT 1</query></test>', 1, "not a non-neg"),
    ('<test max_ignored_relative_change="-0.1"><query>SELECT 1</query></test>', 1, "not a non-neg"),
    ('<test max_query_seconds="0"><query>SELECT 1</query></test>', 1, "not a positive number"),
    ('<test max_query_seconds="inf"><query>SELECT 1</query></test>', 1, "not a positive number"),
    (
        "<test><substitutions>\n<substitution><name>x</name><values><value>1</value></values>"
        "</substitution>\n<substitution><name>x</name><values><value>2</value></values>"
        "</substitution></substitutions><query>SELECT {x}</query></test>",
        3,
        "declared twice",
    ),
    ("<test>\n<settings>\n<a><b>1</b></a></settings><query>SELECT 1</query></test>", 3, "child"),
]


@pytest.mark.parametrize(("text", "line", "message"), BAD_CASES)
def test_bad_test_file_is_an_error_naming_file_and_line(text: str, line: int, message: str) -> None:
    with pytest.raises(TestDefError) as caught:
        parse_test(Path("bad.xml"), text.encode())
    assert caught.value.location.line == line
    assert message in caught.value.reason
    assert str(caught.value).startswith(f"bad.xml:{line}: ")


def test_legacy_and_unknown_elements_are_warnings_with_lines() -> None:
    text = """<test>
    <type>loop</type>
    <stop_conditions><any_of><iterations>10</iterations></any_of></stop_conditions>
    <main_metric><min_time/></main_metric>
    <preconditions><table_exists>hits_100m</table_exists></preconditions>
    <metrics><max_rows_per_second/></metrics>
    <frobnicate/>
    <query short="1">SELECT 1</query>
    <query colour="red">SELECT 2</query>
</test>"""
    test = parse_test(Path("legacy.xml"), text.encode())
    assert [str(w) for w in test.warnings] == [
        "legacy.xml:2: legacy <type>, <stop_conditions>, <main_metric>, <metrics> ignored: run "
        "counts and time limits are chperf's own (adaptive runs, --max-query-seconds, "
        "--query-budget, --test-budget, --budget)",
        "legacy.xml:7: unknown element <frobnicate> ignored",
        "legacy.xml:9: unknown attribute colour ignored",
    ]
    assert [q.sql for q in test.queries] == ["SELECT 1", "SELECT 2"]
    assert test.required_tables == ("hits_100m",)


def test_name_and_comment_are_no_legacy_run_control() -> None:
    """ClickHouse's files carry a <name> and <comment> as documentation: a <name> that is not
    the file's own is noted (the file name is what chperf calls the test), a <comment> is
    silent, and neither is called a run-count setting."""
    same = parse_test(Path("agg.xml"), b"<test><name>agg</name><query>SELECT 1</query></test>")
    assert same.warnings == ()
    text = b"<test>\n<comment>why</comment>\n<name>agg_with_state</name><query>SELECT 1</query>"
    other = parse_test(Path("agg.xml"), text + b"</test>")
    assert [str(w) for w in other.warnings] == [
        "agg.xml:3: <name> agg_with_state ignored: the test is named agg"
    ]


def test_unused_substitution_is_a_warning() -> None:
    text = (
        "<test><substitutions><substitution><name>x</name><values><value>1</value></values>"
        "</substitution></substitutions><query>SELECT 1</query></test>"
    )
    test = parse_test(Path("u.xml"), text.encode())
    assert [w.message for w in test.warnings] == ["substitution {x} is never used"]


def test_substitution_values_keep_their_spaces() -> None:
    # ClickHouse's trim_numbers.xml: the value's trailing space separates FROM from the column
    text = (
        "<test><substitutions><substitution><name>func</name><values><value>trim(</value>"
        "<value>trim(BOTH '0' FROM </value></values></substitution></substitutions>"
        "<query>SELECT ignore({func}toString(number)) FROM numbers(9)</query></test>"
    )
    test = parse_test(Path("t.xml"), text.encode())
    assert [q.sql for q in test.queries] == [
        "SELECT ignore(trim(toString(number)) FROM numbers(9)",
        "SELECT ignore(trim(BOTH '0' FROM toString(number)) FROM numbers(9)",
    ]


@pytest.mark.parametrize(
    ("tags", "is_long"),
    [("", False), ("<tags><tag>long</tag></tags>", True), ("<tags><tag>short</tag></tags>", False)],
)
def test_long_tag_marks_test_long(tags: str, is_long: bool) -> None:
    test = parse_test(Path("t.xml"), f"<test>{tags}<query>SELECT 1</query></test>".encode())
    assert test.is_long is is_long
    assert test.max_ignored_relative_change is None


def test_create_and_fill_keep_document_order_in_statements() -> None:
    text = """<test>
<create_query>CREATE TABLE a (x UInt8) ENGINE = Memory</create_query>
<fill_query>INSERT INTO a VALUES (1)</fill_query>
<create_query>CREATE TABLE b (x UInt8) ENGINE = Memory</create_query>
<query>SELECT 1</query>
<drop_query>DROP TABLE IF EXISTS a</drop_query>
</test>"""
    test = parse_test(Path("o.xml"), text.encode())
    assert [(s.kind, s.location.line) for s in test.statements] == [
        ("create_query", 2),
        ("fill_query", 3),
        ("create_query", 4),
        ("query", 5),
        ("drop_query", 6),
    ]


def test_cdata_and_entities_are_query_text() -> None:
    text = "<test><query><![CDATA[SELECT 1 < 2]]> AND 3 &gt; 2</query></test>"
    test = parse_test(Path("c.xml"), text.encode())
    assert test.queries[0].sql == "SELECT 1 < 2 AND 3 > 2"


def test_load_test_names_an_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(TestDefError, match="cannot read test file"):
        load_test(tmp_path / "missing.xml")


def test_discover_sorts_and_deduplicates(tmp_path: Path) -> None:
    for name in ["b.xml", "a.xml", "notes.txt"]:
        (tmp_path / name).write_text("<test/>")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.xml").write_text("<test/>")
    found = discover([tmp_path, tmp_path / "a.xml", tmp_path / "sub" / "c.xml"])
    assert found == [tmp_path / "a.xml", tmp_path / "b.xml", tmp_path / "sub" / "c.xml"]


def test_discover_keeps_an_unreadable_entry_for_load_to_name(tmp_path: Path) -> None:
    (tmp_path / "good.xml").write_text("<test><query>SELECT 1</query></test>")
    (tmp_path / "dangling.xml").symlink_to(tmp_path / "gone.xml")
    (tmp_path / "folder.xml").mkdir()
    found = discover([tmp_path])
    assert found == [tmp_path / "dangling.xml", tmp_path / "good.xml"]
    with pytest.raises(TestDefError, match="cannot read test file"):
        load_test(found[0])


def test_discover_rejects_a_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ChperfError, match="no such test file or directory"):
        discover([tmp_path / "nope"])


def test_two_files_with_one_test_name_are_an_error() -> None:
    check_unique_names([Path("a/x.xml"), Path("a/y.xml")])
    with pytest.raises(TestDefError, match=r"also the name of a/x\.xml"):
        check_unique_names([Path("a/x.xml"), Path("b/x.xml")])


def test_repository_suite_parses_without_errors() -> None:
    suite = REPO / "perf_tests"
    for path in discover([suite]):
        load_test(path)


def test_clickhouse_attributes_and_files_of_the_real_format(tmp_path: Path) -> None:
    (tmp_path / "queries").mkdir()
    (tmp_path / "queries" / "q1.sql").write_text("SELECT ';' -- not a separator;\n;\n")
    (tmp_path / "settings.json").write_text('{"max_threads": 4, "use_uncompressed_cache": true}')
    path = tmp_path / "real.xml"
    path.write_text(
        """<test run_all_queries="1" profile_all_queries="1" max_query_seconds="60"
      max_ignored_relative_change="1.0">
    <settings file="settings.json"><max_threads>1</max_threads></settings>
    <substitutions><substitution><name>n</name><value>10</value><value>20</value></substitution>
    </substitutions>
    <query tag="sum of {n}" short="{n} &lt; 15">SELECT sum(number) FROM numbers({n})</query>
    <query file="queries/q1.sql" tag="from a file"/>
    <create_query do_not_check_in_pr="1">CREATE TABLE t (x UInt8) ENGINE = Memory</create_query>
</test>"""
    )
    test = load_test(path)
    assert test.warnings == ()
    assert [(q.index, q.sql, q.name) for q in test.queries] == [
        (0, "SELECT sum(number) FROM numbers(10)", "sum of 10"),
        (1, "SELECT sum(number) FROM numbers(20)", "sum of 20"),
        (2, "SELECT ';' -- not a separator;", "from a file"),
    ]
    # The file's settings first, the element's own after them: the last one wins.
    assert dict(test.settings) == {"max_threads": "1", "use_uncompressed_cache": "1"}
    assert test.max_query_seconds == 60.0 and test.profile_all_queries
    assert test.max_ignored_relative_change == 1.0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('<query file="missing.sql"/>', "missing.sql: No such file"),
        ('<query file="two.sql"/>', "holds several statements"),
        ('<query file="two.sql">SELECT 1</query>', "both file="),
        ('<query type="shell">clickhouse-client -q 1</query>', "shell queries"),
        (
            "<create_query>CREATE TEMPORARY TABLE x (a UInt8)</create_query><query>1</query>",
            "CREATE TEMPORARY TABLE",
        ),
        ('<include file="x.xml.inc"/><query>SELECT 1</query>', "x.xml.inc: No such file"),
        ('<settings file="bad.json"/><query>SELECT 1</query>', "not JSON"),
    ],
)
def test_parts_of_the_format_chperf_cannot_honour_are_errors_naming_file_and_line(
    tmp_path: Path, body: str, message: str
) -> None:
    (tmp_path / "two.sql").write_text("SELECT 1; SELECT 2")
    (tmp_path / "bad.json").write_text("{max_threads: 1")
    path = tmp_path / "bad.xml"
    path.write_text(f"<test>\n{body}\n</test>")
    with pytest.raises(TestDefError) as caught:
        load_test(path)
    assert message in str(caught.value)
    assert caught.value.location.line == 2


def test_a_test_that_needs_s3_is_skipped_with_the_reason() -> None:
    test = parse_test(Path("s3.xml"), b'<test requires_s3="1"><query>SELECT 1</query></test>')
    assert "needs S3 storage (requires_s3=1)" in test.skip_reason
    assert test.warnings == ()


def test_ram_size_precondition_is_parsed_and_not_warned_about() -> None:
    text = """<test>
    <preconditions>
        <ram_size>16000000000</ram_size>
        <ram_size>30000000000</ram_size>
        <table_exists>hits_100m_single</table_exists>
    </preconditions>
    <query>SELECT 1</query>
</test>"""
    test = parse_test(Path("big.xml"), text.encode())
    assert test.required_ram_bytes == 30_000_000_000
    assert test.required_tables == ("hits_100m_single",)
    assert test.warnings == ()
    plain = parse_test(Path("p.xml"), b"<test><query>SELECT 1</query></test>")
    assert plain.required_ram_bytes is None


@pytest.mark.parametrize(
    "value",
    ["16G", "-1", "", "1e9", "\u202e61", "\u00b2", pytest.param("9" * 5000, id="5000-digits")],
)
def test_a_ram_size_that_is_not_bytes_is_an_error_at_its_line(value: str) -> None:
    text = f"<test>\n<preconditions>\n<ram_size>{value}</ram_size>\n</preconditions>\n"
    text += "<query>SELECT 1</query></test>"
    with pytest.raises(TestDefError) as caught:
        parse_test(Path("r.xml"), text.encode())
    assert caught.value.location.line == 3
    assert "is not a whole number of bytes" in caught.value.reason
    assert "\u202e" not in str(caught.value)


def test_ram_shortfall_says_what_the_test_needs_and_what_the_machine_has() -> None:
    assert ram_shortfall(None, 8_000_000_000) == ""
    assert ram_shortfall(8_000_000_000, 8_000_000_000) == ""
    assert ram_shortfall(30_000_000_000, 25_300_000_000) == (
        "precondition not met: needs 30.0 GB of RAM (<ram_size>), this machine has 25.3 GB"
    )


def test_old_cache_reset_preconditions_are_legacy_notes() -> None:
    text = """<test>
    <preconditions>
        <flush_disk_cache/>
        <reset_cpu_cache/>
        <frobnicate/>
    </preconditions>
    <query>SELECT 1</query>
</test>"""
    test = parse_test(Path("old.xml"), text.encode())
    assert [str(w) for w in test.warnings] == [
        "old.xml:3: legacy precondition <flush_disk_cache> ignored: chperf measures every query "
        "warm, after a prewarm run on each server",
        "old.xml:4: legacy precondition <reset_cpu_cache> ignored: chperf measures every query "
        "warm, after a prewarm run on each server",
        "old.xml:5: unknown precondition <frobnicate> ignored",
    ]


def test_an_included_fragment_adds_its_elements_in_place_with_their_own_locations(
    tmp_path: Path,
) -> None:
    (tmp_path / "shared.xml.inc").write_text(
        "<fragment>\n"
        "    <!-- shared between tests -->\n"
        "    <query>SELECT count() FROM {table}</query>\n"
        "    <drop_query>DROP TABLE IF EXISTS {table}</drop_query>\n"
        "</fragment>\n"
    )
    path = tmp_path / "user.xml"
    path.write_text(
        "<test>\n"
        "    <substitutions><substitution><name>table</name>\n"
        "        <values><value>t1</value></values></substitution></substitutions>\n"
        "    <query>SELECT 1</query>\n"
        '    <include file="shared.xml.inc"/>\n'
        "    <query>SELECT 2</query>\n"
        "</test>\n"
    )
    test = load_test(path)
    assert [q.sql for q in test.queries] == ["SELECT 1", "SELECT count() FROM t1", "SELECT 2"]
    assert test.drop_queries == ("DROP TABLE IF EXISTS t1",)
    assert [str(q.location) for q in test.queries] == [
        f"{path}:4",
        f"{tmp_path / 'shared.xml.inc'}:3",
        f"{path}:6",
    ]
    assert test.warnings == ()


@pytest.mark.parametrize(
    ("fragment", "message", "line"),
    [
        ("<test><query>SELECT 1</query></test>", "root element is <test>, not <fragment>", 1),
        ("<fragment>\n<query>SELECT 1</query>\n</fragmen>", "malformed XML", 3),
        ('<fragment>\n<include file="other.xml.inc"/></fragment>', "inside an included", 2),
        ("<fragment>\n<query>SELECT {nope}</query></fragment>", "unknown placeholder {nope}", 2),
    ],
)
def test_a_bad_fragment_is_an_error_at_its_own_file_and_line(
    tmp_path: Path, fragment: str, message: str, line: int
) -> None:
    (tmp_path / "part.xml.inc").write_text(fragment)
    path = tmp_path / "user.xml"
    path.write_text('<test>\n<include file="part.xml.inc"/>\n<query>SELECT 1</query>\n</test>')
    with pytest.raises(TestDefError) as caught:
        load_test(path)
    assert message in str(caught.value)
    assert caught.value.location.path == tmp_path / "part.xml.inc"
    assert caught.value.location.line == line
