"""Progress on stderr (runner/progress.py): one line per query in logs, profile runs shown
without counting as queries, ETA from the queries done."""

from __future__ import annotations

import io

import pytest

from runner.progress import Progress, format_duration


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (59.9, "59s"), (61, "1m01s"), (3725, "1h02m"), (-3, "0s")]
)
def test_durations_read_as_seconds_minutes_or_hours(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_a_log_gets_one_line_per_query_and_per_profiled_query() -> None:
    stream = io.StringIO()  # not a terminal: one line per event, nothing redrawn
    progress = Progress(total_queries=2, runs=15, stream=stream)
    progress.start_query("t", 0)
    progress.end_query()
    progress.activity("t query 0", "profiling (slower, up to 10 s a side)")
    progress.start_query("t", 1)
    progress.end_query("error")
    progress.finish()
    lines = stream.getvalue().splitlines()
    assert [line.split(" | ")[0] for line in lines[:3]] == [
        "[1/2] t query 0: done",
        "[1/2] t query 0: profiling (slower, up to 10 s a side)",
        "[2/2] t query 1: error",
    ]
    assert "ETA 0s" in lines[2]
    assert lines[3].startswith("chperf: 2/2 queries in ")
    assert "\r" not in stream.getvalue()
