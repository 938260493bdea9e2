"""Which of ClickHouse's dataset tables a test reads without creating them."""

from __future__ import annotations

from pathlib import Path

from runner.datasets import dataset_tables
from runner.testdef import parse_test


def tables(*lines: str) -> tuple[str, ...]:
    text = "<test>\n" + "\n".join(lines) + "\n</test>"
    return dataset_tables(parse_test(Path("t.xml"), text.encode()))


def test_queries_and_fills_reading_datasets_name_them_once_in_order() -> None:
    assert tables(
        "<fill_query>INSERT INTO t SELECT * FROM test.hits LIMIT 10</fill_query>",
        "<query>SELECT count() FROM hits_10m_single</query>",
        "<query>SELECT count() FROM `hits_10m_single` AS a JOIN hits_100m_single b USING x</query>",
    ) == ("test.hits", "hits_10m_single", "hits_100m_single")


def test_a_structure_copy_needs_its_source() -> None:
    create = "<create_query>CREATE TABLE hits_wide AS hits_10m_single ENGINE = Log</create_query>"
    assert tables(create, "<query>SELECT count() FROM hits_wide</query>") == ("hits_10m_single",)


def test_tables_the_test_creates_literals_and_other_names_are_not_datasets() -> None:
    assert (
        tables(
            "<create_query>CREATE TABLE hits_local (x UInt8) ENGINE = Memory</create_query>",
            "<create_query>CREATE TABLE t2 AS SELECT 1 AS hits FROM numbers(3)</create_query>",
            "<query>SELECT count() FROM hits_local WHERE s = 'FROM hits_10m_single'</query>",
            "<query>SELECT count() FROM numbers(10) AS hits</query>",
            "<query>SELECT count() FROM hitsx</query>",
        )
        == ()
    )


def test_substitutions_expand_before_the_names_are_read() -> None:
    assert tables(
        "<substitutions><substitution><name>t</name>"
        "<values><value>hits_10m_single</value><value>hits_100m_single</value></values>"
        "</substitution></substitutions>",
        "<query>SELECT count() FROM {t}</query>",
    ) == ("hits_10m_single", "hits_100m_single")
