"""Server-side metrics per query: server_time and every ProfileEvent that varies across runs.

They get the same D and T as client_time (randomization.py) and go to metrics.tsv, so the
report can show which counters moved with the time. They never decide a verdict.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from artifacts.tables import (
    PATCHED,
    PROFILE_EVENTS,
    QUERY_LOG,
    REFERENCE,
    SIDES,
    ProfileEventRow,
    QueryLogRow,
)
from artifacts.tsv import read_table
from compare.randomization import Samples

SERVER_TIME = "server_time"  # the metric name of query_log's query_duration_ms, in seconds

MetricKey = tuple[str, int, str]  # (test, query_index, metric)


@dataclass(frozen=True)
class MetricSeries:
    series: dict[MetricKey, Samples]
    problems: tuple[str, ...]  # unreadable lines of query_log.tsv / profile_events.tsv


def gather_metrics(out: Path, min_runs: int) -> MetricSeries:
    """Series of every query with at least `min_runs` query_log rows on each side."""
    log = read_table(out, QUERY_LOG)
    events = read_table(out, PROFILE_EVENTS)
    problems = tuple(str(p) for p in (*log.problems, *events.problems) if not _missing(p.line))
    by_query = _runs_by_query(log.rows)
    counters = _counters(events.rows)
    shared = _shared_events(events.rows)
    series: dict[MetricKey, Samples] = {}
    for (test, query_index), sides in sorted(by_query.items()):
        if min(len(sides[REFERENCE]), len(sides[PATCHED])) < min_runs:
            continue
        for metric, samples in _query_series(sides, counters, shared).items():
            series[(test, query_index, metric)] = samples
    return MetricSeries(series, problems)


def _missing(line: int) -> bool:
    # a missing query_log/profile_events file (line 0) only means no metrics: old servers
    # without query_log, or a run that measured nothing
    return line == 0


_Runs = dict[str, list[QueryLogRow]]  # side -> query_log rows sorted by run


def _runs_by_query(rows: tuple[QueryLogRow, ...]) -> dict[tuple[str, int], _Runs]:
    by_query: dict[tuple[str, int], _Runs] = defaultdict(lambda: {s: [] for s in SIDES})
    for row in sorted(rows, key=lambda r: (r.test, r.query_index, r.server, r.run)):
        if row.server in SIDES:
            by_query[(row.test, row.query_index)][row.server].append(row)
    return by_query


def _counters(rows: tuple[ProfileEventRow, ...]) -> dict[tuple[str, str], dict[str, int]]:
    """(query_id, server) -> event -> value."""
    counters: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for row in rows:
        counters[(row.query_id, row.server)][row.event] = row.value
    return counters


def _shared_events(rows: tuple[ProfileEventRow, ...]) -> frozenset[str]:
    """The events both sides reported somewhere in the run. Two server versions know
    different events: one the other never reports is not a change of this query."""
    seen: dict[str, set[str]] = {side: set() for side in SIDES}
    for row in rows:
        if row.server in seen:
            seen[row.server].add(row.event)
    return frozenset(seen[REFERENCE] & seen[PATCHED])


def _query_series(
    sides: _Runs, counters: dict[tuple[str, str], dict[str, int]], shared: frozenset[str]
) -> dict[str, Samples]:
    def values(side: str, metric: str) -> tuple[float, ...]:
        if metric == SERVER_TIME:
            return tuple(r.server_time for r in sides[side])
        # ClickHouse lists only the events that happened: an absent event counted 0
        return tuple(float(counters[(r.query_id, side)].get(metric, 0)) for r in sides[side])

    events = {
        event
        for side in SIDES
        for r in sides[side]
        for event in counters.get((r.query_id, side), {})
        if event in shared
    }
    result: dict[str, Samples] = {}
    for metric in [SERVER_TIME, *sorted(events)]:
        samples = Samples(values(REFERENCE, metric), values(PATCHED, metric))
        if len(set(samples.reference) | set(samples.patched)) > 1:
            result[metric] = samples
    return result
