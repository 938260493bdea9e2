"""Time limits of one run: of one execution (prewarm or measured run), of one query's
measured runs, of one test, and of the whole suite (docs/run.md "Time limits").

An execution is bounded on the server (max_execution_time) and on the client (a receive
timeout, then KILL QUERY); its limit is also cut to what is left of the test's and the
suite's budget, so no single statement can carry a run past them. Budgets are checked
between runs: what was measured is kept, and what is left is recorded "not run".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from compare.stopping import QUERY_BUDGET_S

# ClickHouse's own limits: a prewarm may take 3 minutes, a measured run 15 seconds; a test's
# max_query_seconds attribute replaces both.
PREWARM_SECONDS = 180.0
RUN_SECONDS = 15.0
TEST_BUDGET_S = 600.0
# A statement is never given less than this: max_execution_time counts whole seconds.
MIN_LIMIT_S = 1.0
# ClickHouse's error codes for a query stopped at max_execution_time (TIMEOUT_EXCEEDED) or
# given up because its estimated time exceeds it (TOO_SLOW).
TIMEOUT_CODES = frozenset({159, 160})


@dataclass(frozen=True)
class Limits:
    prewarm_seconds: float = PREWARM_SECONDS  # one prewarm run
    run_seconds: float = RUN_SECONDS  # one measured run
    query_seconds: float = QUERY_BUDGET_S  # the measured runs of one query, both sides
    test_seconds: float | None = TEST_BUDGET_S  # one test, setup and teardown included
    suite_seconds: float | None = None  # the whole run (--budget); None: unbounded

    def for_test(self, max_query_seconds: float | None) -> Limits:
        """A test's max_query_seconds bounds its prewarm and measured runs alike."""
        if max_query_seconds is None:
            return self
        return replace(self, prewarm_seconds=max_query_seconds, run_seconds=max_query_seconds)

    def as_json(self) -> dict[str, float | None]:
        return {
            "prewarm_seconds": self.prewarm_seconds,
            "run_seconds": self.run_seconds,
            "query_seconds": self.query_seconds,
            "test_seconds": self.test_seconds,
            "suite_seconds": self.suite_seconds,
        }


@dataclass(frozen=True)
class Cap:
    """The limit of one execution, and whether a budget (not the execution's own limit)
    set it: a statement stopped at a budget's limit was not too long, it was cut short."""

    seconds: float
    by_budget: bool


class Clock:
    """The deadlines of the suite and of the test in progress."""

    def __init__(self, limits: Limits, now: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self._now = now
        self._suite_start = now()
        self._test_start: float | None = None

    def start_test(self) -> None:
        self._test_start = self._now()

    def end_test(self) -> None:
        self._test_start = None

    def _left(self) -> tuple[float | None, str]:
        """Seconds left before the nearer deadline, and what that deadline is."""
        now = self._now()
        left: list[tuple[float, str]] = []
        if self.limits.suite_seconds is not None:
            left.append(
                (
                    self._suite_start + self.limits.suite_seconds - now,
                    f"the suite budget of {duration(self.limits.suite_seconds)} ran out",
                )
            )
        if self.limits.test_seconds is not None and self._test_start is not None:
            left.append(
                (
                    self._test_start + self.limits.test_seconds - now,
                    f"the test budget of {duration(self.limits.test_seconds)} ran out",
                )
            )
        if not left:
            return None, ""
        return min(left)

    def out_of_time(self) -> str | None:
        """Why nothing more may start, or None while there is time."""
        seconds, why = self._left()
        return why if seconds is not None and seconds <= 0 else None

    def cut_short(self, cap: Cap, what: str) -> str:
        """Why `what`, stopped at a budget's limit `cap`, did not finish."""
        why = self.out_of_time() or "a budget ran out"
        return f"{why}: {what} was stopped at {cap.seconds:.0f} s"

    def cap(self, limit: float) -> Cap:
        seconds, _ = self._left()
        if seconds is not None and seconds < limit:
            return Cap(max(MIN_LIMIT_S, seconds), True)
        return Cap(limit, False)


def duration(seconds: float) -> str:
    """900 -> "15m", 5400 -> "1h30m", 42 -> "42 s"."""
    if seconds < 60 or seconds % 60:
        return f"{seconds:g} s"
    minutes = int(seconds // 60)
    hours, minutes = divmod(minutes, 60)
    return (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes or not hours else "")


def parse_duration(text: str) -> float:
    """ "30m", "1h", "1h30m", "90s", "90" (seconds) -> seconds; ValueError otherwise."""
    raw = text.strip().lower()
    if not raw:
        raise ValueError("empty duration")
    units = {"h": 3600.0, "m": 60.0, "s": 1.0}
    total, number = 0.0, ""
    for char in raw:
        if char.isdigit() or char == ".":
            number += char
        elif char in units and number:
            total += float(number) * units[char]
            number = ""
        else:
            raise ValueError(f"not a duration: {text!r} (write e.g. 30m, 1h, 1h30m or 900s)")
    if number:
        total += float(number)
    if not total > 0:
        raise ValueError(f"a duration must be positive: {text!r}")
    return total
