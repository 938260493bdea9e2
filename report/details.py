"""Every query's details (a section of details/<test>-<n>.html): its run plot, the runs the
environment monitor saw disturbed, the machine while it ran, the ProfileEvents that moved most
and its flame graphs. Pure: no files, no processes."""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterable, Sequence

from markupsafe import Markup

from artifacts.stages import REPORT_FILE
from artifacts.tables import SIDES, MonitorSample
from artifacts.verdicts import MetricRow
from report import display, runplot, svg
from report.index import Key, QueryTables
from report.model import DetailPage, DetailView, Link, MetricView, QueryView

# A reader looks at the top few; metrics.tsv has them all.
METRICS_SHOWN = 10
# The machine is drawn this long before the query's first run and after its last.
TIMELINE_MARGIN_SECONDS = 1.0
UP = "../"  # from details/ back to the directory of report.html


def moments(samples: Sequence[MonitorSample]) -> list[svg.Moment]:
    """monitor.tsv's samples in cores' worth of CPU, steal converted with the CPU count."""
    return [svg.Moment(s.time, s.servers_cpu, s.foreign_cpu, s.steal * s.cpus) for s in samples]


def build_details(
    queries: Iterable[QueryView],
    tables: QueryTables,
    machine: tuple[Sequence[svg.Moment], int],
    profiling: tuple[str | None, tuple[str, ...]],
) -> tuple[DetailPage, ...]:
    """The pages of every query's details (display.detail_file), in the order of `queries`.
    `machine`: the monitor's samples (moments()) and the machine's CPU count; `profiling`:
    why the run has no flame graphs (None when it has), and the notes about all of them."""
    samples = _Machine(machine[0], machine[1])
    pages: dict[str, list[DetailView]] = {}
    for q in queries:
        file = display.detail_file(q.test, q.query_index)
        pages.setdefault(file, []).append(_detail(q, tables, samples, profiling))
    return tuple(
        DetailPage(file, views[0].query.test, tuple(views)) for file, views in pages.items()
    )


class _Machine:
    """The monitor's samples, for slicing by time."""

    def __init__(self, samples: Sequence[svg.Moment], cpus: int) -> None:
        self.samples = samples
        self.times = [m.time for m in samples]
        self.cpus = cpus

    def timeline(self, spans: Sequence[tuple[float, float]], label: str) -> Markup | None:
        if not spans or len(self.samples) < 2:
            return None
        start = min(s for s, _ in spans) - TIMELINE_MARGIN_SECONDS
        end = max(e for _, e in spans) + TIMELINE_MARGIN_SECONDS
        # A sample's time is the end of its interval: the first one after `end` still covers it.
        first = bisect.bisect_left(self.times, start)
        last = bisect.bisect_right(self.times, end) + 1
        shown = self.samples[first:last]
        return svg.machine_timeline(shown, [s for s, _ in spans], self.cpus, label)


def _detail(
    q: QueryView,
    tables: QueryTables,
    machine: _Machine,
    profiling: tuple[str | None, tuple[str, ...]],
) -> DetailView:
    key = (q.test, q.query_index)
    series = _series(key, tables)
    found = tables.interference.get(key)
    what = f"{q.test} query {q.query_index}"
    metrics, omitted = _metrics(tables.metrics.get(key, ()))
    return DetailView(
        query=q,
        report_href=f"{UP}{REPORT_FILE}#{q.anchor}",
        plot=runplot.run_plot(series, found.disturbed if found else (), f"run times of {what}"),
        outliers=_outliers(series),
        # Drawn where the monitor saw interference: elsewhere it would be a flat line.
        timeline=machine.timeline(tables.spans.get(key, ()), f"CPU of the machine during {what}")
        if found and found.disturbed
        else None,
        metrics=metrics,
        metrics_omitted=omitted,
        flamegraphs=tuple(Link(link.label, UP + link.href) for link in q.flamegraphs),
        flame_notes=profiling[1] if q.flamegraphs else (),
        profiling_note=profiling[0],
        query_file=UP + q.query_file if q.query_file else "",
    )


def _series(key: Key, tables: QueryTables) -> list[runplot.Series]:
    row = tables.verdicts.get(key)
    medians = (None, None) if row is None else (row.reference_median, row.patched_median)
    series = []
    for number, side in enumerate(SIDES):
        points = tuple(tables.runs.get((*key, side), ()))
        series.append(runplot.Series(side, points, medians[number], runplot.outliers(points)))
    return series


def _outliers(series: Sequence[runplot.Series]) -> str:
    """ "reference run 3; patched runs 9, 12", "" when no run is an outlier."""
    parts = []
    for s in series:
        if s.outliers:
            runs = "run" if len(s.outliers) == 1 else "runs"
            parts.append(f"{s.side} {runs} {', '.join(str(r) for r in s.outliers)}")
    return "; ".join(parts)


def _metrics(rows: Iterable[MetricRow]) -> tuple[tuple[MetricView, ...], int]:
    """Largest significant changes first; then the largest others up to METRICS_SHOWN."""

    def significant(m: MetricRow) -> bool:
        # A metric that never varies has T = 0: it changed only if its diff is not zero.
        if m.diff is None or m.threshold is None or m.diff == 0:
            return False
        return abs(m.diff) >= m.threshold

    def size(m: MetricRow) -> float:
        return abs(m.diff) if m.diff is not None and math.isfinite(m.diff) else -1.0

    listed = list(rows)
    # The METRICS_SHOWN first of the order, without sorting all of them (40 a query).
    shown = heapq.nsmallest(
        METRICS_SHOWN, listed, key=lambda m: (not significant(m), -size(m), m.metric)
    )
    views = tuple(
        MetricView(
            metric=m.metric,
            reference=_metric_value(m.metric, m.reference_median),
            patched=_metric_value(m.metric, m.patched_median),
            diff=display.percent(m.diff),
            threshold=display.percent(m.threshold, signed=False),
            significant=significant(m),
            direction="" if m.diff is None or m.diff == 0 else ("up" if m.diff > 0 else "down"),
        )
        for m in shown
    )
    return views, len(listed) - len(shown)


def _metric_value(metric: str, value: float | None) -> str:
    if metric == "server_time":
        return display.duration(value)
    if value is None or not math.isfinite(value):
        return display.MISSING
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
