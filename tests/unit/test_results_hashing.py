"""The order-insensitive result hash of runner/results.py, fed as the HTTP client receives a
result: any chunking, any row order."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from runner.results import ResultDigest, RowHasher, disagree, discards_result, random_fill
from runner.testdef import parse_test


def digest(*chunks: bytes) -> ResultDigest:
    hasher = RowHasher()
    for chunk in chunks:
        hasher.feed(chunk)
    return hasher.finish()


ROWS = [b"%d\tvalue %d\\n with an escaped newline\n" % (n, n * 7) for n in range(2000)]
RESULT = b"".join(ROWS)


def test_rows_are_counted_and_sized() -> None:
    found = digest(RESULT)
    assert found.rows == 2000
    assert found.bytes == len(RESULT)
    assert len(found.digest) == 32 and int(found.digest, 16) > 0


def test_chunks_split_anywhere_give_the_same_digest() -> None:
    whole = digest(RESULT)
    rng = random.Random(7)
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(RESULT)), 15))
        chunks = [RESULT[a:b] for a, b in zip([0, *cuts], [*cuts, len(RESULT)], strict=True)]
        found = digest(*chunks)
        assert (found.rows, found.digest, found.bytes) == (whole.rows, whole.digest, whole.bytes)


def test_row_order_does_not_matter() -> None:
    shuffled = ROWS[:]
    random.Random(1).shuffle(shuffled)
    assert digest(b"".join(shuffled)).digest == digest(RESULT).digest


@pytest.mark.parametrize(
    "changed",
    [
        ROWS[:-1],  # a row missing
        [*ROWS, ROWS[0]],  # a row twice
        [ROWS[0].replace(b"value", b"valuE"), *ROWS[1:]],  # one byte of one row
        [b"1\t0\n", b"0\t1\n"],  # the same values in other columns
    ],
    ids=["row missing", "row duplicated", "one byte", "values swapped between rows"],
)
def test_any_other_result_gives_another_digest(changed: list[bytes]) -> None:
    assert digest(b"".join(changed)).digest != digest(RESULT).digest
    assert digest(b"0\t0\n1\t1\n").digest != digest(b"1\t0\n0\t1\n").digest


def test_duplicate_rows_do_not_cancel_out() -> None:
    """Digests are added, not xor-ed: two equal rows are not the same as none."""
    assert digest(b"a\na\n").digest != digest(b"").digest
    assert digest(b"a\na\n").rows == 2


def test_an_empty_result_has_no_rows_and_a_last_row_without_newline_counts() -> None:
    assert digest().rows == 0 and digest(b"").digest == "0" * 32
    assert digest(b"x\ny").rows == 2
    assert digest(b"x\ny").digest == digest(b"y\nx\n").digest


@pytest.mark.parametrize(
    ("sql", "discards"),
    [
        ("SELECT 1 FORMAT Null", True),
        ("SELECT 1\nFORMAT   null;", True),
        ("SELECT count() FROM t FORMAT Null  \n", True),
        ("SELECT 1", False),
        ("SELECT 1 FORMAT TSV", False),
        ("SELECT 'FORMAT Null' AS x", False),
        ("SELECT Nullable(1) FORMAT NullFormat", False),
    ],
)
def test_format_null_queries_have_nothing_to_compare(sql: str, discards: bool) -> None:
    assert discards_result(sql) is discards


def test_results_disagree_when_any_two_differ() -> None:
    same = [[("a", 1)], [("a", 1), ("a", 1)]]
    assert not disagree(same)
    assert disagree([[("a", 1)], [("a", 2)]])  # same hash, other row count: another result
    assert disagree([[("a", 1), ("b", 1)]])


def setup_of(*lines: str) -> str:
    text = "<test>\n" + "\n".join(lines) + "\n<query>SELECT count() FROM t</query>\n</test>"
    return random_fill(parse_test(Path("t.xml"), text.encode()))


def test_random_fill_names_the_first_random_call_of_the_setup() -> None:
    create = "<create_query>CREATE TABLE t (x UInt64) ENGINE = Memory</create_query>"
    assert (
        setup_of(create, "<fill_query>INSERT INTO t SELECT number FROM numbers(9)</fill_query>")
        == ""
    )
    fill = "<fill_query>INSERT INTO t SELECT rand(number) FROM numbers(9)</fill_query>"
    assert setup_of(create, fill) == "t.xml:3 rand()"
    assert (
        setup_of(create.replace("x UInt64", "x UInt64, d DateTime DEFAULT now()"))
        == "t.xml:2 now()"
    )
    as_select = (
        "<create_query>CREATE TABLE t ENGINE = Memory AS SELECT randomString(8) AS s</create_query>"
    )
    assert setup_of(as_select) == "t.xml:2 randomString()"


def test_names_and_literals_that_look_like_random_calls_are_not() -> None:
    named = "<create_query>CREATE TABLE rand (x UInt64) ENGINE = Memory</create_query>"
    into = "<fill_query>INSERT INTO now (x) SELECT number FROM numbers(9)</fill_query>"
    literal = "<fill_query>INSERT INTO t SELECT 'rand()' FROM numbers(9)</fill_query>"
    other = "<fill_query>INSERT INTO t SELECT my_rand(1), x.now() FROM numbers(9)</fill_query>"
    assert setup_of(named, into, literal, other) == ""
    seeded = (
        "<fill_query>INSERT INTO t SELECT * FROM generateRandom('x UInt64', 1) LIMIT 9</fill_query>"
    )
    assert setup_of(seeded) == ""
    assert setup_of(seeded.replace("', 1)", "')")) == "t.xml:2 generateRandom()"
    # a measured query may be random: that is the query's own non-determinism, not the data's
    assert (
        random_fill(parse_test(Path("t.xml"), b"<test><query>SELECT rand()</query></test>")) == ""
    )
