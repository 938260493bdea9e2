"""Which measured runs coincided with interference: other work on the machine (foreign CPU)
or the hypervisor taking the CPU (steal), from the environment monitor's samples
(monitor.tsv) and each run's start time and length (runs.tsv). A verdict's reason then says
so ("runs 5-8 coincided with up to 0.62 cores of foreign CPU"): docs/method.md, "The
environment monitor"."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from artifacts.columns import NULL, read_columns
from artifacts.tables import MONITOR, RUNS
from artifacts.tsv import read_table, unescape

# A quarter of a core of other work during a run: on a machine reserved for the check the
# rest of the system (kernel threads, the monitor itself) stays well below it.
FOREIGN_CPU = 0.25
# 5% of the machine's CPU time taken by the hypervisor for other guests.
STEAL = 0.05

QueryKey = tuple[str, int]
_RUN_COLUMNS = ("test", "query_index", "run", "client_time", "start_time")


@dataclass(frozen=True)
class Interference:
    runs: int  # run numbers placed among the monitor's samples
    disturbed: tuple[int, ...]  # run numbers during which either side was disturbed
    foreign_cpu: float  # the most foreign CPU (cores) any sample during the runs shows
    steal: float  # the most steal

    def note(self) -> str:
        """ "" when nothing disturbed the query's runs."""
        if not self.disturbed:
            return ""
        what = f"up to {self.foreign_cpu:.2f} cores of foreign CPU"
        if self.steal >= STEAL:
            what += f" and {self.steal:.0%} steal"
        return f"runs {_ranges(self.disturbed)} of {self.runs} coincided with {what}"


def interference(out: Path) -> dict[QueryKey, Interference]:
    """Per query, its runs against the monitor's samples; empty without samples (a run made
    before the monitor existed, or one without servers)."""
    samples = read_table(out, MONITOR).rows
    if not samples:
        return {}
    runs = read_columns(out, RUNS.file, _RUN_COLUMNS[:4], _RUN_COLUMNS, _run).rows
    return interference_of(samples, runs)


class Sample(Protocol):
    """What the rule reads of a monitor sample (a MonitorRow, or the report's MonitorSample)."""

    @property
    def time(self) -> float: ...
    @property
    def seconds(self) -> float: ...
    @property
    def foreign_cpu(self) -> float: ...
    @property
    def steal(self) -> float: ...


def interference_of(
    samples: Sequence[Sample], runs: Iterable[tuple[str, int, int, float, float]]
) -> dict[QueryKey, Interference]:
    """The same from rows already read (the report has them): the runs as (test,
    query_index, run, client_time, start_time)."""
    if not samples:
        return {}
    ordered = sorted(samples, key=lambda s: s.time)
    ends = np.array([s.time for s in ordered])
    starts = ends - np.array([s.seconds for s in ordered])
    foreign = np.array([s.foreign_cpu for s in ordered])
    steal = np.array([s.steal for s in ordered])
    timed = [r for r in runs if r[4] > 0]  # older files have no start times: not placed
    begin = np.array([r[4] for r in timed], dtype=float)
    firsts = np.searchsorted(ends, begin, side="right")
    lasts = np.searchsorted(starts, begin + np.array([r[3] for r in timed], dtype=float))
    placed = np.flatnonzero(firsts < lasts)
    if placed.size == 0:
        return {}
    # Each run's most over its samples [first, last), for all runs in one pass: reduceat over
    # the interleaved bounds (every other result is a run's; a sentinel makes len an index).
    bounds = np.column_stack((firsts[placed], lasts[placed])).ravel()
    most_foreign = np.maximum.reduceat(np.append(foreign, 0.0), bounds)[::2].tolist()
    most_steal = np.maximum.reduceat(np.append(steal, 0.0), bounds)[::2].tolist()
    per_query: dict[QueryKey, dict[int, tuple[float, float]]] = defaultdict(dict)
    for n, i in enumerate(placed.tolist()):
        test, index, run = timed[i][0], timed[i][1], timed[i][2]
        seen = per_query[(test, index)].get(run, (0.0, 0.0))
        per_query[(test, index)][run] = (
            max(seen[0], most_foreign[n]),
            max(seen[1], most_steal[n]),
        )
    return {key: _summarize(found) for key, found in per_query.items()}


def _run(values: Sequence[str]) -> tuple[str, int, int, float, float]:
    start = 0.0 if values[4] in (NULL, "") else float(values[4])
    return unescape(values[0]), int(values[1]), int(values[2]), float(values[3]), start


def _summarize(found: dict[int, tuple[float, float]]) -> Interference:
    disturbed = tuple(
        sorted(run for run, (cpu, steal) in found.items() if cpu >= FOREIGN_CPU or steal >= STEAL)
    )
    return Interference(
        runs=len(found),
        disturbed=disturbed,
        foreign_cpu=max(cpu for cpu, _ in found.values()),
        steal=max(steal for _, steal in found.values()),
    )


def _ranges(numbers: tuple[int, ...]) -> str:
    """(3, 4, 5, 8) -> "3-5, 8"."""
    parts: list[str] = []
    start = previous = numbers[0]
    for n in (*numbers[1:], None):
        if n is not None and n == previous + 1:
            previous = n
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if n is not None:
            start = previous = n
    return ", ".join(parts)
