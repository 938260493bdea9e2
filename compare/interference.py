"""Which measured runs coincided with interference: other work on the machine (foreign CPU)
or the hypervisor taking the CPU (steal), from the environment monitor's samples
(monitor.tsv) and each run's start time and length (runs.tsv). A verdict's reason then says
so ("runs 5-8 coincided with up to 0.62 cores of foreign CPU"): docs/method.md, "The
environment monitor"."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

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
    ordered = sorted(samples, key=lambda s: s.time)
    ends = np.array([s.time for s in ordered])
    starts = ends - np.array([s.seconds for s in ordered])
    foreign = np.array([s.foreign_cpu for s in ordered])
    steal = np.array([s.steal for s in ordered])
    runs = read_columns(out, RUNS.file, _RUN_COLUMNS[:4], _RUN_COLUMNS, _run).rows
    per_query: dict[QueryKey, dict[int, tuple[float, float]]] = defaultdict(dict)
    for test, index, run, length, start in runs:
        if start <= 0:
            continue  # written before runs had a start time
        first = int(np.searchsorted(ends, start, side="right"))
        last = int(np.searchsorted(starts, start + length))
        if first >= last:
            continue
        seen = per_query[(test, index)].get(run, (0.0, 0.0))
        per_query[(test, index)][run] = (
            max(seen[0], float(foreign[first:last].max())),
            max(seen[1], float(steal[first:last].max())),
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
