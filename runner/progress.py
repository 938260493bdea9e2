"""Progress on stderr: test, query, runs done, elapsed and ETA; redrawn in place on a terminal
(the CLI decides), else one line per query (CI logs). The ETA counts the profile runs still
to come: they come after each test's measured runs and can take most of a run."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TextIO

from artifacts.console import console_text

# A test name as shown on the progress line: a terminal's width is the useful maximum.
MAX_SHOWN_TEST_CHARS = 100


def format_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


@dataclass(frozen=True)
class ProfileForecast:
    """What the profile runs may cost, from the options, until the ones made tell better."""

    seconds_per_query: float  # at most: the profile seconds of each side together
    budget_seconds: float  # of all profile runs of the run
    every_query: bool  # every measured query is profiled, not only changed ones


@dataclass(frozen=True)
class Workload:
    """Where the run is, for the ETA."""

    total: int  # queries of the run
    done: int  # queries measured or skipped
    measuring_seconds: float  # elapsed, less the profile runs
    profiling_seconds: float = 0.0
    profiled: int = 0  # queries given profile runs
    decided: int = 0  # queries whose test chose which of them to profile
    chosen: int = 0  # of those, the queries chosen
    pending: int = 0  # chosen in the current test and not profiled yet


def remaining_seconds(work: Workload, forecast: ProfileForecast | None) -> float | None:
    """The measuring still to do at the rate so far, plus the profile runs still to come."""
    if work.done == 0:
        return None
    measuring = work.measuring_seconds / work.done * (work.total - work.done)
    if forecast is None:
        return measuring
    return measuring + profiling_left(work, forecast)


def profiling_left(work: Workload, forecast: ProfileForecast) -> float:
    """The chosen queries not yet profiled, and the share of the undecided ones that earlier
    tests chose (all with --profile-all; none known before a test has chosen), at the cost of
    a profiled query so far (the options' maximum before the first), within the budget."""
    if work.profiled:
        each = work.profiling_seconds / work.profiled
    else:
        each = forecast.seconds_per_query
    if forecast.every_query:
        share = 1.0
    else:
        share = work.chosen / work.decided if work.decided else 0.0
    undecided = max(0, work.total - work.decided)
    expected = (work.pending + share * undecided) * each
    return min(expected, max(0.0, forecast.budget_seconds - work.profiling_seconds))


class Progress:
    def __init__(
        self,
        total_queries: int,
        runs: int,
        stream: TextIO | None = None,
        redraw: bool = False,
        profile: ProfileForecast | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total_queries
        self.runs = runs
        self.done = 0
        self.stream = stream or sys.stderr
        self.tty = redraw  # redraw one line in place: a terminal, and NO_COLOR unset
        self.profile = profile  # None: no profile runs in this run
        self.clock = clock
        self.start = clock()
        self.current = ""
        self.work = Workload(total_queries, 0, 0.0)  # the profile runs' part of it

    def start_query(self, test: str, query_index: int, name: str = "") -> None:
        label = f" ({console_text(name, 60)})" if name else ""
        self.current = f"{console_text(test, MAX_SHOWN_TEST_CHARS)} query {query_index}{label}"
        self._draw("running")

    def end_query(self, note: str = "") -> None:
        self.done += 1
        self._draw(note or "done", final=not self.tty)

    def activity(self, what: str, state: str) -> None:
        """Work between measured queries (profile runs): shown without counting a query."""
        self.current = console_text(what, MAX_SHOWN_TEST_CHARS)
        self._draw(state, final=not self.tty)

    def skip_queries(self, count: int) -> None:
        self.done += count

    @contextlib.contextmanager
    def profile_phase(self, chosen: int, measured: int) -> Iterator[None]:
        """A test's profile runs: `chosen` of its `measured` queries get them."""
        w = self.work
        self.work = replace(
            w, decided=w.decided + measured, chosen=w.chosen + chosen, pending=chosen
        )
        try:
            yield
        finally:
            self.work = replace(self.work, pending=0)  # ended early: a budget ran out

    @contextlib.contextmanager
    def profiling(self, what: str, state: str) -> Iterator[None]:
        """One query's profile runs, shown and timed."""
        self.activity(what, state)
        start = self.clock()
        try:
            yield
        finally:
            w = self.work
            self.work = replace(
                w,
                profiling_seconds=w.profiling_seconds + self.clock() - start,
                profiled=w.profiled + 1,
                pending=max(0, w.pending - 1),
            )

    def eta(self) -> float | None:
        elapsed = self.clock() - self.start
        measuring = elapsed - self.work.profiling_seconds
        work = replace(self.work, done=self.done, measuring_seconds=measuring)
        return remaining_seconds(work, self.profile)

    def line(self, state: str) -> str:
        elapsed = self.clock() - self.start
        eta = self.eta()
        eta_text = format_duration(eta) if eta is not None else "?"
        return (
            f"[{self.done}/{self.total}] {self.current}: {state}"
            f" | elapsed {format_duration(elapsed)}, ETA {eta_text}"
        )

    def _draw(self, state: str, final: bool = False) -> None:
        text = self.line(state)
        if self.tty:
            self.stream.write("\r\033[K" + text)
        elif final:
            self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\n")
        elapsed = format_duration(self.clock() - self.start)
        self.stream.write(f"chperf: {self.done}/{self.total} queries in {elapsed}\n")
        self.stream.flush()
