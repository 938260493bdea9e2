from __future__ import annotations

import json
from pathlib import Path

import pytest

from artifacts.errors import ChperfError
from artifacts.manifest import read_manifest
from artifacts.tables import QUERIES, RUNS, QueryRow, RunRow
from artifacts.tsv import escape, read_table, unescape, write_table


@pytest.mark.parametrize("text", ["plain", "tab\there", "new\nline", "back\\slash", "\\N", ""])
def test_escaping_round_trips(text: str) -> None:
    assert unescape(escape(text)) == text
    assert "\t" not in escape(text) and "\n" not in escape(text)


def test_rows_round_trip_through_tsv(tmp_path: Path) -> None:
    rows = [QueryRow("t", 0, "SELECT 1\n\tFORMAT Null", None), QueryRow("t", 1, "x", 0.2)]
    write_table(tmp_path, QUERIES, rows)
    contents = read_table(tmp_path, QUERIES)
    assert contents.rows == tuple(rows) and not contents.problems


def test_truncated_line_is_a_recorded_problem_not_an_exception(tmp_path: Path) -> None:
    write_table(tmp_path, RUNS, [RunRow("t", 0, "reference", 0, "t.0.run0", 0.5)])
    with (tmp_path / RUNS.file).open("a") as f:
        f.write("t\t0\tpatched\t0\tt.0.ru")
    contents = read_table(tmp_path, RUNS)
    assert len(contents.rows) == 1
    assert [str(p) for p in contents.problems] == ["runs.tsv:3: truncated line (no end of line)"]


def test_missing_table_is_reported_as_missing(tmp_path: Path) -> None:
    contents = read_table(tmp_path, RUNS)
    assert contents.missing and contents.rows == ()


def test_unknown_manifest_version_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps({"schema_version": 99}))
    with pytest.raises(ChperfError, match="schema_version 99, this chperf reads 1"):
        read_manifest(tmp_path)


def test_runs_written_before_the_process_column_read_as_process_0(tmp_path: Path) -> None:
    (tmp_path / RUNS.file).write_text(
        "test\tquery_index\tserver\trun\tquery_id\tclient_time\nt\t0\treference\t0\tt.0.run0\t0.5\n"
    )
    contents = read_table(tmp_path, RUNS)
    assert contents.rows == (RunRow("t", 0, "reference", 0, "t.0.run0", 0.5, 0),)
    assert not contents.problems


def test_a_header_missing_a_required_column_is_still_a_problem(tmp_path: Path) -> None:
    (tmp_path / RUNS.file).write_text("test\tquery_index\tserver\trun\tquery_id\n")
    contents = read_table(tmp_path, RUNS)
    assert contents.rows == ()
    assert "header is not the columns" in str(contents.problems[0])
