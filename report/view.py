"""Build the report's view model from the loaded inputs. Pure: no files, no processes."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence

from markupsafe import Markup

from artifacts.tables import PATCHED, REFERENCE, WHOLE_TEST
from artifacts.verdicts import VerdictRow
from compare.results import ResultStatus
from report import details, display, header, svg
from report.flamegraph import FlameGraphs
from report.index import Key, QueryTables, index_inputs
from report.inputs import Inputs
from report.model import (
    ProblemView,
    QueryView,
    Report,
    SkippedView,
    TestSummaryView,
    VerdictCount,
)

CHANGED = ("slower", "faster")
UNDECIDED = ("unstable", "inconclusive")  # measured, but too noisy or too few runs to judge
FAILED = ("partial", "error", "too long")
NOT_MEASURED = ("skipped", "not run")
MEASURED = (*CHANGED, *UNDECIDED, "unchanged")  # verdicts whose medians enter the geomean
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
WRONG_RESULT = ResultStatus.WRONG.value

# Client time above server time by more than this: result transfer or client overhead
# dominates what we measure.
CLIENT_OVERHEAD_LIMIT = 0.20
# Below ~10 ms per run, client overhead and scheduling dominate the measurement.
SHORT_QUERY_SECONDS = 0.010
# Where the main page lists the queries of each verdict (the count links there).
_SECTION_OF = {
    **{v: "#changes" for v in CHANGED},
    **{v: "#unstable" for v in UNDECIDED},
    **{v: "#failed" for v in FAILED},
    **{v: "#skipped" for v in NOT_MEASURED},
}


def build_report(
    inputs: Inputs, flames: FlameGraphs, extra_problems: Sequence[str], generated_at: str
) -> Report:
    tables = index_inputs(inputs)
    # Flame graphs explain verdicts and never decide one: their problems are notes.
    build = [*header.input_problems(inputs), *extra_problems]
    keys = _keys(inputs, tables, build)
    queries = tuple(_query(key, tables, flames) for key in keys)
    found = [*header.run_problems(inputs), *_wrong_results(inputs)]
    run_problems, build_problems = header.number_problems(found, build)
    # Slower first (they fail the check), then faster; each by the size of the change.
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
    first = next((p.anchor for p in (*run_problems, *build_problems)), None)
    head = header.build_header(inputs, first, len(build_problems), flames.problems)
    machine = (details.moments(inputs.monitor), inputs.monitor[0].cpus if inputs.monitor else 1)
    return Report(
        title="chperf report",
        header=head,
        counts=_counts(queries, verdicts),
        disturbed=sum(1 for q in queries if q.disturbed),
        run_problems=run_problems,
        build_problems=build_problems,
        changes=tuple(changes),
        unstable=tuple(unstable),
        failed=tuple(failed),
        skipped=_skipped(inputs),
        tests=tests,
        test_chart=_test_chart(inputs, queries, tables),
        machine_timeline=svg.machine_timeline(machine[0], _starts(inputs), machine[1]),
        flame_notes=flames.notes,
        all_queries=queries,
        verdicts=verdicts,
        details=details.build_details(
            queries, tables, machine, (head.profiling_note, flames.notes)
        ),
        generated_at=generated_at,
    )


def _wrong_results(inputs: Inputs) -> list[ProblemView]:
    """Queries whose sides returned different results (compare/results.py), both hashes and
    row counts in the message; they fail the check."""
    return [
        ProblemView("", WRONG_RESULT, f"{p.test} query {p.query_index}", p.reason)
        for p in inputs.result_problems
        if p.status == WRONG_RESULT
    ]


def _counts(queries: Sequence[QueryView], verdicts: Sequence[str]) -> tuple[VerdictCount, ...]:
    found = [VerdictCount(v, sum(1 for q in queries if q.verdict == v)) for v in verdicts]
    return tuple(
        VerdictCount(c.verdict, c.count, _SECTION_OF.get(c.verdict, "#all"))
        for c in found
        if c.count
    )


def _starts(inputs: Inputs) -> list[float]:
    return sorted(r.start_time for r in inputs.runs if r.start_time > 0)


def _diff_of(tables: QueryTables, q: QueryView) -> float:
    row = tables.verdicts.get((q.test, q.query_index))
    return row.diff if row is not None and row.diff is not None else 0.0


def _threshold_of(tables: QueryTables, q: QueryView) -> float:
    row = tables.verdicts.get((q.test, q.query_index))
    return row.threshold if row is not None and row.threshold is not None else 0.0


def _keys(inputs: Inputs, tables: QueryTables, problems: list[str]) -> list[Key]:
    """Queries in queries.tsv order, then any verdict for a query queries.tsv lacks."""
    # A query listed twice (damaged artifacts) is still one row, one anchor, one page.
    keys = list(dict.fromkeys((q.test, q.query_index) for q in inputs.queries))
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


def _query(key: Key, tables: QueryTables, flames: FlameGraphs) -> QueryView:
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
    slow, warnings = _warnings(key, reference, patched, tables)
    cut = len(text) > display.MAX_QUERY_CHARS
    found = tables.interference.get(key)
    return QueryView(
        anchor=display.query_anchor(test, index),
        detail_href=display.detail_href(test, index),
        test=test,
        query_index=index,
        name=display.cut(tables.query_names.get(key, ""), display.MAX_NAME_CHARS),
        query=display.cut(text, display.MAX_QUERY_CHARS),
        query_line=display.cut(text, display.MAX_ROW_QUERY_CHARS),
        query_file=display.full_query_href(test, index) if cut else "",
        query_cut=display.query_cut(len(text)),
        verdict=verdict,
        reason=row.reason if row else "no row in verdicts.tsv",
        reference=display.duration(reference),
        patched=display.duration(patched),
        ratio=display.ratio_text(ratio),
        change=display.change(diff),
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
        disturbed=found.note() if found else "",
    )


def _runs(row: VerdictRow | None) -> str:
    if row is None or (row.runs_reference is None and row.runs_patched is None):
        return display.MISSING
    if row.runs_reference == row.runs_patched:
        return display.count(row.runs_reference)
    return f"{display.count(row.runs_reference)} / {display.count(row.runs_patched)}"


def _warnings(
    key: Key, reference: float | None, patched: float | None, tables: QueryTables
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


def _verdict_names(queries: Sequence[QueryView]) -> tuple[str, ...]:
    seen = {q.verdict for q in queries}
    return VERDICT_ORDER + tuple(sorted(seen - set(VERDICT_ORDER)))


def _geomean(queries: Iterable[QueryView], tables: QueryTables) -> float | None:
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
    inputs: Inputs, queries: Sequence[QueryView], tables: QueryTables, verdicts: Sequence[str]
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


def _test_chart(inputs: Inputs, queries: Sequence[QueryView], tables: QueryTables) -> Markup | None:
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
