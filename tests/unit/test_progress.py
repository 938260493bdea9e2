"""Progress on stderr (runner/progress.py): one line per query in logs, profile runs shown
without counting as queries, ETA from the queries done."""

from __future__ import annotations

import io

import pytest

from runner.progress import ProfileForecast, Progress, Workload, format_duration, remaining_seconds


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


FORECAST = ProfileForecast(seconds_per_query=20.0, budget_seconds=600.0, every_query=False)


@pytest.mark.parametrize(
    ("work", "forecast", "eta"),
    [
        (Workload(10, 0, 0.0), FORECAST, None),  # nothing done: no rate yet
        (Workload(10, 5, 50.0), None, 50.0),  # no profile runs: measuring alone
        # --profile-all, none profiled yet: every query at the options' maximum
        (Workload(10, 5, 50.0), ProfileForecast(20.0, 600.0, True), 50.0 + 10 * 20.0),
        # the budget bounds the profile runs still to come
        (Workload(10, 5, 50.0), ProfileForecast(20.0, 100.0, True), 50.0 + 100.0),
        # all measured; 3 of the test's 10 queries chosen, 1 profiled in 15 s: 2 to go
        (Workload(10, 10, 90.0, 15.0, 1, 10, 3, 2), FORECAST, 2 * 15.0),
        # a second test to come: earlier tests chose 3 of 10, at 15 s each
        (Workload(20, 10, 90.0, 45.0, 3, 10, 3, 0), FORECAST, 90.0 + 0.3 * 10 * 15.0),
        # changed queries only, none chosen yet: nothing known to profile
        (Workload(10, 5, 50.0), FORECAST, 50.0),
    ],
    ids=["no-rate", "no-profiling", "all", "budget", "pending", "share", "unknown-share"],
)
def test_the_eta_adds_the_profile_runs_still_to_come(
    work: Workload, forecast: ProfileForecast | None, eta: float | None
) -> None:
    assert remaining_seconds(work, forecast) == pytest.approx(eta)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_eta_on_the_console_counts_the_profiling_of_the_queries_just_measured() -> None:
    """A run like one where profiling took 74% of the run: 4 queries measured in 92 s, then 2
    of them profiled at 133 s each. The ETA after the measurement is the profiling, not 0."""
    stream, clock = io.StringIO(), Clock()
    forecast = ProfileForecast(seconds_per_query=140.0, budget_seconds=600.0, every_query=False)
    progress = Progress(4, 15, stream=stream, profile=forecast, clock=clock)
    for index in range(4):
        progress.start_query("t", index)
        clock.now += 23
        progress.end_query()
    assert "ETA 0s" in stream.getvalue().splitlines()[-1]  # nothing chosen yet
    with progress.profile_phase(chosen=2, measured=4):
        with progress.profiling("t query 0", "profiling (slower, up to 70 s a side)"):
            assert "ETA 4m40s" in stream.getvalue().splitlines()[-1]  # 2 x 140 s
            clock.now += 133
        with progress.profiling("t query 3", "profiling (faster, up to 70 s a side)"):
            assert "ETA 2m13s" in stream.getvalue().splitlines()[-1]  # as long as the first
            clock.now += 133
    assert progress.eta() == 0
    progress.finish()
    assert stream.getvalue().splitlines()[-1] == "chperf: 4/4 queries in 5m58s"
