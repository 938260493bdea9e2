"""Build the report's view model from the loaded inputs. Pure: no files, no processes."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from markupsafe import Markup

from artifacts.tables import PATCHED, REFERENCE, SIDES, WHOLE_TEST
from artifacts.verdicts import MetricRow, VerdictRow
from report import display, header, svg
from report.flamegraph import FlameGraphs
from report.inputs import Inputs
from report.model import (
    FailureView,
    MetricView,
    QueryView,
    Report,
    SkippedView,
    TestSummaryView,
    VerdictCount,
)

Key = tuple[str, int]

CHANGED = ("slower", "faster")
UNDECIDED = ("unstable", "inconclusive")  # measured, but too noisy or too few runs to judge
DETAILED = (*CHANGED, *UNDECIDED)  # queries that get a plot and a metrics table
FAILED = ("partial", "error", "too long")
NOT_MEASURED = ("skipped", "not run")
MEASURED = (*DETAILED, "unchanged")  # verdicts whose medians enter the geometric mean
VERDICT_ORDER = (
    "slower",
    "faster",
    "unstable",
    "inconclusive",
    "partial",
    "error",
    "too long",
    "unchanged",
    "not run",
    "skipped",
)
NOT_COMPARED = "not compared"  # a query in queries.tsv without a row in verdicts.tsv

# Client time above server time by more than this: result transfer or client overhead
# dominates what we measure.
CLIENT_OVERHEAD_LIMIT = 0.20
# Below ~10 ms per run, client overhead and scheduling dominate the measurement.
SHORT_QUERY_SECONDS = 0.010
# A reader looks at the top few, and with hundreds of changed queries a longer table makes
# the report too heavy to open; metrics.tsv has them all.
METRICS_SHOWN = 10
# Error messages (with server stack traces) are cut here; errors.tsv has them whole.
MAX_ERROR_CHARS = 2000
MAX_FAILURES_PER_QUERY = 4


@dataclass(frozen=True)
class _Tables:
    query_text: dict[Key, str]
    query_names: dict[Key, str]  # tag="..." of the test file, where it has one
    verdicts: dict[Key, VerdictRow]
    runs: dict[tuple[str, int, str], list[tuple[int, float]]]
    server_medians: dict[tuple[str, int, str], float]
    metrics: dict[Key, list[MetricRow]]
    failures: dict[Key, list[FailureView]]


def build_report(
    inputs: Inputs, flames: FlameGraphs, extra_problems: Sequence[str], generated_at: str
) -> Report:
    tables = _index(inputs)
    # Flame graphs explain verdicts and never decide one: their problems are notes.
    build = [*header.input_problems(inputs), *extra_problems]
    keys = _keys(inputs, tables, build)
    queries = tuple(_query(key, tables, flames) for key in keys)
    run_problems, build_problems = header.number_problems(header.run_problems(inputs), build)
    changes = sorted(
        (q for q in queries if q.verdict in CHANGED),
        key=lambda q: (q.verdict != "slower", -abs(_diff_of(tables, q))),
    )
    unstable = sorted(
        (q for q in queries if q.verdict in UNDECIDED), key=lambda q: -_threshold_of(tables, q)
    )
    failed = [q for q in queries if q.verdict in FAILED]
    verdicts = _verdict_names(queries)
    tests = _tests(inputs, queries, tables, verdicts)
    first = next(
        (p.anchor for p in (*run_problems, *build_problems)),
        next((q.anchor for q in (*changes, *failed) if q.verdict != "faster"), None),
    )
    return Report(
        title="chperf report",
        header=header.build_header(inputs, first, len(build_problems), flames.problems),
        run_problems=run_problems,
        build_problems=build_problems,
        changes=tuple(changes),
        unstable=tuple(unstable),
        failed=tuple(failed),
        skipped=_skipped(inputs),
        tests=tests,
        test_chart=_test_chart(inputs, queries, tables),
        machine_timeline=_machine_timeline(inputs),
        all_queries=queries,
        verdicts=verdicts,
        generated_at=generated_at,
    )


def _machine_timeline(inputs: Inputs) -> Markup | None:
    samples = inputs.monitor
    moments = [svg.Moment(s.time, s.servers_cpu, s.foreign_cpu, s.steal * s.cpus) for s in samples]
    starts = sorted(r.start_time for r in inputs.runs if r.start_time > 0)
    return svg.machine_timeline(moments, starts, samples[0].cpus if samples else 1)


def _diff_of(tables: _Tables, q: QueryView) -> float:
    row = tables.verdicts.get((q.test, q.query_index))
    return row.diff if row is not None and row.diff is not None else 0.0


def _threshold_of(tables: _Tables, q: QueryView) -> float:
    row = tables.verdicts.get((q.test, q.query_index))
    return row.threshold if row is not None and row.threshold is not None else 0.0


def _index(inputs: Inputs) -> _Tables:
    runs: dict[tuple[str, int, str], list[tuple[int, float]]] = defaultdict(list)
    for r in inputs.runs:
        runs[(r.test, r.query_index, r.server)].append((r.run, r.client_time))
    for points in runs.values():
        points.sort()
    server_times: dict[tuple[str, int, str], list[float]] = defaultdict(list)
    for q in inputs.query_log:
        server_times[(q.test, q.query_index, q.server)].append(q.server_time)
    metrics: dict[Key, list[MetricRow]] = defaultdict(list)
    for m in inputs.metrics:
        metrics[(m.test, m.query_index)].append(m)
    failures: dict[Key, list[FailureView]] = defaultdict(list)
    for e in inputs.errors:
        if e.query_index != WHOLE_TEST and e.stage in header.QUERY_STAGES:
            failures[(e.test, e.query_index)].append(
                FailureView(e.server, e.stage, e.error_code, _cut(e.message))
            )
    return _Tables(
        query_text={(q.test, q.query_index): q.query for q in inputs.queries},
        query_names={(q.test, q.query_index): q.name for q in inputs.queries if q.name},
        verdicts={(v.test, v.query_index): v for v in inputs.verdicts},
        runs=dict(runs),
        server_medians={k: statistics.median(v) for k, v in server_times.items()},
        metrics=dict(metrics),
        failures={k: _distinct(v) for k, v in failures.items()},
    )


def _cut(message: str) -> str:
    if len(message) <= MAX_ERROR_CHARS:
        return message
    return message[:MAX_ERROR_CHARS] + "… (cut here; errors.tsv has the whole message)"


def _distinct(failures: list[FailureView]) -> list[FailureView]:
    seen: dict[tuple[str, str, int, str], FailureView] = {}
    for f in failures:
        seen.setdefault((f.side, f.stage, f.error_code, f.message), f)
    return list(seen.values())[:MAX_FAILURES_PER_QUERY]


def _keys(inputs: Inputs, tables: _Tables, problems: list[str]) -> list[Key]:
    """Queries in queries.tsv order, then any verdict for a query queries.tsv lacks."""
    keys = [(q.test, q.query_index) for q in inputs.queries]
    extra = [k for k in tables.verdicts if k not in tables.query_text]
    # compare writes one row with query_index -1 for a test without queries (skipped, or
    # failed before its queries were known): the skipped ones are listed as skipped tests.
    whole = [k for k in extra if k[1] == WHOLE_TEST]
    extra = [k for k in extra if k[1] != WHOLE_TEST]
    extra += [k for k in whole if tables.verdicts[k].verdict != "skipped"]
    mixed = [k for k in extra if k[1] != WHOLE_TEST]
    if mixed and inputs.queries:
        test, index = mixed[0]
        problems.append(
            f"{len(mixed)} verdicts for queries not in queries.tsv (first: {test} query {index}): "
            "were the artifacts of two runs mixed?"
        )
    uncompared = [k for k in keys if k not in tables.verdicts]
    if uncompared and inputs.verdicts:
        test, index = uncompared[0]
        problems.append(
            f"{len(uncompared)} queries have no verdict in verdicts.tsv (first: {test} query "
            f"{index}): rerun `chperf compare OUT`"
        )
    return keys + extra


def _query(key: Key, tables: _Tables, flames: FlameGraphs) -> QueryView:
    test, index = key
    row = tables.verdicts.get(key)
    verdict = row.verdict if row is not None else NOT_COMPARED
    if index == WHOLE_TEST:
        text = "(the whole test)"
    else:
        text = tables.query_text.get(key, "(not in queries.tsv)")
    reference = row.reference_median if row else None
    patched = row.patched_median if row else None
    diff = row.diff if row else None
    threshold = row.threshold if row else None
    # One effect measure: the ratio is the method's own estimate D (paired: the Hodges-Lehmann
    # estimate of the blocked pairs), never the ratio of medians, so it, D and the interval
    # agree; the medians are shown for scale.
    ratio = 1 + diff if diff is not None and diff > -1 else None
    detailed = verdict in DETAILED
    metrics, omitted = _metrics(tables.metrics.get(key, [])) if detailed else ((), 0)
    slow, warnings = _warnings(key, reference, patched, tables)
    cut = len(text) > display.MAX_QUERY_CHARS
    return QueryView(
        anchor="q-" + display.ident(test, index),
        test=test,
        query_index=index,
        name=display.cut(tables.query_names.get(key, ""), display.MAX_NAME_CHARS),
        query=display.cut(text, display.MAX_QUERY_CHARS),
        query_file=display.full_query_href(test, index) if cut else "",
        query_cut=display.query_cut(len(text)),
        verdict=verdict,
        reason=row.reason if row else "no row in verdicts.tsv",
        reference=display.duration(reference),
        patched=display.duration(patched),
        ratio=display.ratio_text(ratio),
        ci=display.ratio_interval(row.ci_low, row.ci_high, row.ci_level) if row else "",
        equivalence=row.equivalence if row else "",
        not_calibrated=row.calibration if row and row.calibration.startswith("not ") else "",
        diff=display.percent(diff),
        threshold=display.percent(threshold, signed=False),
        runs=_runs(row),
        sort_reference=display.sort_key(reference),
        sort_patched=display.sort_key(patched),
        sort_ratio=display.sort_key(ratio),
        sort_diff=display.sort_key(diff),
        sort_threshold=display.sort_key(threshold),
        warnings=tuple(warnings),
        slow_on_client=slow,
        failures=tuple(tables.failures.get(key, ())),
        flamegraphs=flames.links.get(key, ()),
        flamegraphs_unavailable=flames.unavailable.get(key, ()),
        metrics=metrics,
        metrics_omitted=omitted,
        plot=_plot(key, row, tables) if detailed else None,
        has_details=detailed or verdict in FAILED,
    )


def _runs(row: VerdictRow | None) -> str:
    if row is None or (row.runs_reference is None and row.runs_patched is None):
        return display.MISSING
    if row.runs_reference == row.runs_patched:
        return display.count(row.runs_reference)
    return f"{display.count(row.runs_reference)} / {display.count(row.runs_patched)}"


def _warnings(
    key: Key, reference: float | None, patched: float | None, tables: _Tables
) -> tuple[bool, list[str]]:
    """Measurement-quality warnings, each with its remedy; and whether it is slow on client."""
    warnings: list[str] = []
    shortest = min((t for t in (reference, patched) if t is not None), default=None)
    if shortest is not None and shortest < SHORT_QUERY_SECONDS:
        warnings.append(
            f"runs in {display.duration(shortest)}, below the "
            f"{display.duration(SHORT_QUERY_SECONDS)} floor where client overhead and "
            "scheduling dominate: make the query heavier (more rows)"
        )
    slow = False
    for side, client in ((REFERENCE, reference), (PATCHED, patched)):
        server = tables.server_medians.get((*key, side))
        if client is None or server is None or server <= 0:
            continue
        if client > server * (1 + CLIENT_OVERHEAD_LIMIT):
            slow = True
            warnings.append(
                f"slow on client ({side}): client time {display.duration(client)} exceeds "
                f"server time {display.duration(server)} by "
                f"{display.percent(client / server - 1, signed=False)}: result transfer or "
                "client overhead dominates; return fewer rows or add FORMAT Null"
            )
    return slow, warnings


def _metrics(rows: Iterable[MetricRow]) -> tuple[tuple[MetricView, ...], int]:
    """Largest significant changes first; then the largest others up to METRICS_SHOWN."""

    def significant(m: MetricRow) -> bool:
        # A metric that never varies has T = 0: it changed only if its diff is not zero.
        if m.diff is None or m.threshold is None or m.diff == 0:
            return False
        return abs(m.diff) >= m.threshold

    def size(m: MetricRow) -> float:
        return abs(m.diff) if m.diff is not None and math.isfinite(m.diff) else -1.0

    ordered = sorted(rows, key=lambda m: (not significant(m), -size(m), m.metric))
    shown = ordered[:METRICS_SHOWN]
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
    return views, len(ordered) - len(shown)


def _metric_value(metric: str, value: float | None) -> str:
    if metric == "server_time":
        return display.duration(value)
    if value is None or not math.isfinite(value):
        return display.MISSING
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _plot(key: Key, row: VerdictRow | None, tables: _Tables) -> Markup | None:
    test, index = key
    series = [
        svg.Series(
            side,
            tuple(tables.runs.get((test, index, side), ())),
            None if row is None else (row.reference_median, row.patched_median)[number],
        )
        for number, side in enumerate(SIDES)
    ]
    return svg.run_plot(series, f"run times of {test} query {index}")


def _verdict_names(queries: Sequence[QueryView]) -> tuple[str, ...]:
    seen = {q.verdict for q in queries}
    return VERDICT_ORDER + tuple(sorted(seen - set(VERDICT_ORDER)))


def _geomean(queries: Iterable[QueryView], tables: _Tables) -> float | None:
    logs = []
    for q in queries:
        row = tables.verdicts.get((q.test, q.query_index))
        ratio = display.ratio(row.reference_median, row.patched_median) if row else None
        if q.verdict in MEASURED and ratio is not None:
            logs.append(math.log(ratio))
    return math.exp(statistics.fmean(logs)) if logs else None


def _by_test(inputs: Inputs, queries: Sequence[QueryView]) -> dict[str, list[QueryView]]:
    grouped: dict[str, list[QueryView]] = {t.test: [] for t in inputs.tests}
    for q in queries:
        grouped.setdefault(q.test, []).append(q)
    return grouped


def _tests(
    inputs: Inputs, queries: Sequence[QueryView], tables: _Tables, verdicts: Sequence[str]
) -> tuple[TestSummaryView, ...]:
    rows = {t.test: t for t in inputs.tests}
    views = []
    for test, members in _by_test(inputs, queries).items():
        geomean = _geomean(members, tables)
        wall = rows[test].wall_time if test in rows else None
        views.append(
            TestSummaryView(
                test=test,
                anchor="test-" + display.ident(test),
                status=rows[test].status if test in rows else "",
                geomean=display.ratio_text(geomean),
                geomean_change=display.percent(None if geomean is None else geomean - 1),
                sort_geomean=display.sort_key(geomean),
                counts=tuple(
                    VerdictCount(v, sum(1 for q in members if q.verdict == v)) for v in verdicts
                ),
                wall_time=display.wall_time(wall),
                sort_wall_time=display.sort_key(wall),
            )
        )
    return tuple(views)


def _test_chart(inputs: Inputs, queries: Sequence[QueryView], tables: _Tables) -> Markup | None:
    bars = []
    for test, members in _by_test(inputs, queries).items():
        geomean = _geomean(members, tables)
        if geomean is not None:
            bars.append(svg.Bar(test, geomean - 1, "#test-" + display.ident(test)))
    return svg.change_bars(bars)


def _skipped(inputs: Inputs) -> tuple[SkippedView, ...]:
    whole = [
        SkippedView(t.test, "whole test", f"{t.status}: {t.reason}")
        for t in inputs.tests
        if t.status in NOT_MEASURED
    ]
    skipped_tests = {s.test for s in whole}
    for v in inputs.verdicts:
        if v.verdict not in NOT_MEASURED or v.test in skipped_tests:
            continue
        if v.query_index == WHOLE_TEST:
            whole.append(SkippedView(v.test, "whole test", v.reason))
            skipped_tests.add(v.test)
        else:
            whole.append(SkippedView(v.test, f"query {v.query_index}", v.reason))
    return tuple(whole)
