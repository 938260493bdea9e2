"""Size limits of test files (runner/substitution.py, runner/testdef.py): a test that would
expand past 1,000 queries or 64 MiB of SQL, or that includes a file larger than that, is an
error naming file:line, found before anything is expanded or read whole."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.substitution import MAX_EXPANDED_CHARS, MAX_QUERIES_PER_TEST
from runner.testdef import TestDefError, load_test, parse_test
from tests.conftest import REPO
from tests.fuzz import memory_cap


def substitutions(sizes: dict[str, list[str]]) -> str:
    items = "".join(
        f"<substitution><name>{name}</name><values>"
        + "".join(f"<value>{v}</value>" for v in values)
        + "</values></substitution>"
        for name, values in sizes.items()
    )
    return f"<substitutions>{items}</substitutions>"


def product_test(names: str, values: int) -> str:
    """A test whose query (line 3) expands over len(names) substitutions of `values` each."""
    declared = substitutions({n: [str(i) for i in range(values)] for n in names})
    used = " + ".join(f"{{{n}}}" for n in names)
    return f"<test>\n{declared}\n<query>SELECT {used}</query>\n</test>\n"


@pytest.mark.parametrize(
    ("names", "values", "count"),
    [("abcd", 10, "10,000"), ("abcd", 1000, "1,000,000,000,000"), ("ab", 32, "1,024")],
)
def test_a_query_expanding_past_the_limit_is_an_error_naming_file_and_line_before_expanding(
    names: str, values: int, count: str
) -> None:
    with memory_cap(), pytest.raises(TestDefError) as caught:
        parse_test(Path("big.xml"), product_test(names, values).encode())
    factors = " × ".join(f"{n}: {values:,} values" for n in names)
    assert str(caught.value).splitlines() == [
        f"big.xml:3: <query> expands to {count} queries ({factors}): over the limit of 1,000 "
        "queries per test",
        "hint: use fewer values, or split the test into several files",
    ]


def test_a_test_of_exactly_the_limit_parses_and_the_limit_is_a_parameter() -> None:
    data = product_test("abc", 10).encode()
    assert len(parse_test(Path("t.xml"), data).queries) == MAX_QUERIES_PER_TEST == 1000
    with pytest.raises(TestDefError, match="over the limit of 999 queries per test"):
        parse_test(Path("t.xml"), data, max_queries=999)


def test_setup_queries_count_toward_the_limit_and_the_message_says_how_many() -> None:
    declared = substitutions({"a": [str(i) for i in range(30)], "b": [str(i) for i in range(20)]})
    text = (
        f"<test>{declared}\n<create_query>CREATE TABLE t{{a}}{{b}} (x UInt8) ENGINE = Memory"
        "</create_query>\n<query>SELECT {a} + {b}</query>\n</test>"
    )
    with pytest.raises(TestDefError) as caught:
        parse_test(Path("setup.xml"), text.encode())
    assert caught.value.location.line == 3
    assert "expands to 600 queries (a: 30 values × b: 20 values, 600 before it)" in str(
        caught.value
    )


def test_expanded_sql_past_the_size_limit_is_an_error_before_expanding() -> None:
    # 200 KB of input: a 100,000-character value in 1,000 queries is 100 MB of SQL.
    declared = substitutions({"a": ["x" * 100_000, "y" * 100_000], "b": list(map(str, range(500)))})
    text = f"<test>{declared}\n<query>SELECT '{{a}}', {{b}}</query>\n</test>"
    with memory_cap(), pytest.raises(TestDefError) as caught:
        parse_test(Path("wide.xml"), text.encode())
    assert caught.value.location.line == 2
    assert f"over the limit of {MAX_EXPANDED_CHARS:,}" in str(caught.value)
    assert "expands to 1,000 queries (a: 2 values × b: 500 values)" in str(caught.value)


def test_an_included_file_larger_than_the_limit_is_an_error_not_read_whole(
    tmp_path: Path,
) -> None:
    big = tmp_path / "big.sql"
    with big.open("wb") as f:
        f.truncate(MAX_EXPANDED_CHARS + 1)  # sparse: no disk space taken
    path = tmp_path / "endless.xml"
    path.write_text('<test>\n<query file="big.sql"/>\n</test>\n')
    with memory_cap(), pytest.raises(TestDefError) as caught:
        load_test(path)
    assert caught.value.location.line == 2
    assert f"big.sql: larger than {MAX_EXPANDED_CHARS:,} bytes" in str(caught.value)


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "directory"])
def test_an_included_fifo_device_or_directory_is_an_error_at_once(
    tmp_path: Path, special: str
) -> None:
    """A FIFO would block the run until something writes to it; a device may never end."""
    if special == "fifo":
        os.mkfifo(tmp_path / "q.sql")
        name = "q.sql"
    elif special == "directory":
        (tmp_path / "q.sql").mkdir()
        name = "q.sql"
    else:
        name = special
    path = tmp_path / "special.xml"
    path.write_text(f'<test>\n<query file="{name}"/>\n</test>\n')
    with pytest.raises(TestDefError) as caught:
        load_test(path)  # returns at once: the FIFO is never waited on
    assert caught.value.location.line == 2
    assert str(caught.value).endswith(f"{name}: not a regular file"), str(caught.value)


def test_a_test_file_that_is_a_fifo_is_an_error_at_once(tmp_path: Path) -> None:
    path = tmp_path / "fifo.xml"
    os.mkfifo(path)
    with pytest.raises(TestDefError) as caught:
        load_test(path)
    assert "cannot read test file: not a regular file" in str(caught.value)


def test_lint_names_the_file_and_line_of_a_test_over_the_limit(tmp_path: Path) -> None:
    (tmp_path / "big.xml").write_text(product_test("abcd", 10))
    done = subprocess.run(
        [sys.executable, "-m", "chperf", "lint", "big.xml"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    problem, count = done.stderr.splitlines()
    assert problem.endswith(
        "big.xml:3: <query> expands to 10,000 queries (a: 10 values × b: 10 values × c: 10 "
        "values × d: 10 values): over the limit of 1,000 queries per test (remedy: use fewer "
        "values, or split the test into several files)"
    ), problem
    assert count == "chperf lint: 1 problem"
