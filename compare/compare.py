"""`chperf compare OUT`: verdicts, metrics and the check status from a run's artifacts.

The thin shell around the pure parts: read (evidence.py, metrics.py, calibration.py), compute
(statistics.py, bootstrap.py, fdr.py), decide (verdict.py), write (outputs.py), judge.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from artifacts.calibration import write_calibration
from artifacts.errors import ChperfError, ExitCode
from artifacts.manifest import FAILED, MANIFEST, RUNNING, identity_keys, read_manifest
from artifacts.protocols import SUMMARY_KEY as PROTOCOLS_SECTION
from artifacts.results import RESULTS_SECTION
from artifacts.stages import AA_OUTPUTS, COMPARE_OUTPUTS, remove_previous
from artifacts.summary import write_summary
from artifacts.tables import PATCHED, REFERENCE, SIDES, WHOLE_TEST
from compare.blocked import ALPHA, structure_of, test_size
from compare.bootstrap import Bootstrap, RatioInterval
from compare.calibration import (
    Calibration,
    calibration_rows,
    flag_cutoff,
    read_calibration,
)
from compare.engine import SqlEngine
from compare.evidence import Evidence, GlobalProblem, gather
from compare.fdr import FDR_Q, Discoveries, benjamini_hochberg
from compare.interference import Interference, interference
from compare.load import LoadResults, read_load, without_load_tests
from compare.metrics import gather_metrics
from compare.outputs import MetricStats, summary_document, write_metrics, write_verdicts
from compare.paired import PAIRED
from compare.protocols import compare_protocols
from compare.randomization import Samples, SeriesStats
from compare.results import gather_results, results_message, results_summary, with_results
from compare.statistics import QueryStatistics
from compare.summary_sections import interference_summary, noise_section, summary_extra
from compare.verdict import (
    MIN_RUNS,
    FdrStatus,
    QueryEvidence,
    QueryVerdict,
    Thresholds,
    Verdict,
    classify,
)

SUCCESS = "success"
FAILURE = "failure"
INCOMPLETE = "incomplete"  # nothing failed, but some queries were not run or judged

# The order of the verdicts in the summary message: what needs attention first.
_MESSAGE_ORDER = (
    Verdict.SLOWER,
    Verdict.FASTER,
    Verdict.UNSTABLE,
    Verdict.INCONCLUSIVE,
    Verdict.TOO_LONG,
    Verdict.PARTIAL,
    Verdict.ERROR,
    Verdict.NOT_RUN,
    Verdict.SKIPPED,
    Verdict.UNCHANGED,
)


STATUS_EXIT_CODES = {
    SUCCESS: ExitCode.OK,
    FAILURE: ExitCode.CHECK_FAILED,
    INCOMPLETE: ExitCode.INCOMPLETE,
}


@dataclass(frozen=True)
class CompareOptions:
    thresholds: Thresholds = field(default_factory=Thresholds)
    fail_on_unstable: bool = False
    method: str = PAIRED
    fdr: float | None = FDR_Q  # Benjamini-Hochberg q; None: no false-discovery control
    calibration: Path | None = None  # calibration.tsv of an A/A run: per-query noise floors
    aa: bool = False  # OUT is an A/A run: also write OUT/calibration.tsv


@dataclass(frozen=True)
class CompareResult:
    status: str  # "success", "failure" or "incomplete", as in summary.json
    message: str  # the summary.json message, e.g. "2 slower, 1 faster, 40 unchanged"
    counts: dict[str, int] = field(default_factory=dict)  # verdict value -> queries
    failures: tuple[str, ...] = ()  # why the check failed, one line each; empty on success
    fdr: Discoveries | None = None
    removed: tuple[str, ...] = ()  # the previous outputs compare removed (report.html, ...)

    @property
    def exit_code(self) -> ExitCode:
        return STATUS_EXIT_CODES[self.status]


def compare_directory(out: Path, options: CompareOptions) -> CompareResult:
    """Write verdicts.tsv, metrics.tsv and summary.json into `out` and judge the check. A
    missing or other-version run.json, or a value no measurement gives in a table
    (artifacts/values.py), raises ChperfError (exit 2); other damage does not."""
    manifest = read_manifest(out)
    if options.aa:
        _check_aa(out, manifest)
    calibration = read_calibration(options.calibration) if options.calibration else None
    # Gone before anything is computed: a compare that fails never leaves the previous
    # verdicts (and the report and CI status made from them) looking current.
    removed = remove_previous(out, COMPARE_OUTPUTS + (AA_OUTPUTS if options.aa else ()))
    with SqlEngine() as engine:
        evidence = gather(out, engine)
        load = read_load(out, options.thresholds)
        evidence = replace(evidence, queries=without_load_tests(evidence.queries, load))
        metric_series = gather_metrics(out, MIN_RUNS)
        statistics = QueryStatistics(engine, options.method)
        randomization = statistics.randomization
        measurable = _measurable(evidence)
        stats = statistics.statistics(measurable)
        # The paired statistic brings its own interval; the bootstrap is for the rest.
        pooled = {k: s for k, s in measurable.items() if stats[k].method != PAIRED}
        intervals = _intervals(Bootstrap(engine).intervals(pooled), stats)
        discoveries = _discoveries(stats, options.fdr)
        verdicts = _classify(evidence, _Extra(stats, intervals, discoveries, calibration), options)
        disturbed = interference(out)
        verdicts = _with_interference(verdicts, disturbed)
        results = gather_results(out, manifest)
        verdicts = with_results(verdicts, results.checks)
        metric_stats = randomization.statistics(metric_series.series)
        protocols = compare_protocols(out, engine, options.thresholds)
        if options.aa:
            write_calibration(
                out, calibration_rows(verdicts, _flag_rates(verdicts, statistics, measurable))
            )
    metrics = [MetricStats(t, q, m, s) for (t, q, m), s in metric_stats.items()]
    notes = [GlobalProblem(p, fails_check=False) for p in metric_series.problems]
    damaged = [GlobalProblem(p, fails_check=True) for p in results.problems]
    damaged += [GlobalProblem(p, True) for p in (*protocols.problems, *protocols.failures)]
    problems = [*_run_status(manifest), *evidence.problems, *notes, *damaged]
    result = judge(verdicts, evidence, problems, options, load, protocols.unjudged())
    message = results_message(result.message, results.checks)
    result = replace(result, fdr=discoveries, removed=removed, message=message)
    write_verdicts(out, verdicts)
    write_metrics(out, metrics)
    extra = {
        "method": options.method,
        **summary_extra(verdicts, discoveries, calibration),
        "noise": noise_section(evidence, verdicts),
        "interference": interference_summary(disturbed),
        **({"load": load.as_json()} if load.verdicts else {}),
    }
    if results.recorded:  # only runs that hashed results have the key
        extra[RESULTS_SECTION] = results_summary(results, verdicts)
    if protocols.verdicts:  # only runs with <protocols> tests have the key
        extra[PROTOCOLS_SECTION] = [v.as_json() for v in protocols.verdicts]
    document = summary_document(result.status, result.message, result.counts, verdicts, extra)
    write_summary(out, document)
    return result


def _run_status(manifest: Mapping[str, Any]) -> list[GlobalProblem]:
    """Fail closed on a run that failed or never recorded its end: tests it did not reach
    may be missing from the tables altogether."""
    status = manifest.get("status")
    if status == FAILED:
        return [GlobalProblem(f"{MANIFEST}: the run failed: {manifest.get('failure')}", True)]
    if status == RUNNING:
        return [GlobalProblem(f"{MANIFEST}: the run never recorded its end (killed?)", True)]
    return []


def _intervals(
    pooled: Mapping[tuple[str, int], RatioInterval | None],
    stats: Mapping[tuple[str, int], SeriesStats],
) -> dict[tuple[str, int], RatioInterval | None]:
    """The interval of the method's own estimate: the paired method's where it applied."""
    found = dict(pooled)
    for key, s in stats.items():
        if s.paired_interval is not None:
            found[key] = RatioInterval(*s.paired_interval, level=1 - ALPHA)
    return found


@dataclass(frozen=True)
class _Extra:
    stats: dict[tuple[str, int], SeriesStats]
    intervals: Mapping[tuple[str, int], RatioInterval | None]
    discoveries: Discoveries | None
    calibration: Calibration | None


def _measurable(evidence: Evidence) -> dict[tuple[str, int], Samples]:
    return {
        key: samples
        for key, samples in evidence.client_time.items()
        if min(len(samples.reference), len(samples.patched)) >= MIN_RUNS
    }


def _discoveries(
    stats: Mapping[tuple[str, int], SeriesStats], q: float | None
) -> Discoveries | None:
    """BH over every measured query's p-value, in key order (_classify relies on it)."""
    if q is None:
        return None
    return benjamini_hochberg([stats[k].p_value for k in sorted(stats)], q)


def _classify(evidence: Evidence, extra: _Extra, options: CompareOptions) -> list[QueryVerdict]:
    thresholds = options.thresholds
    fdr: dict[tuple[str, int], FdrStatus] = {}
    if extra.discoveries is not None:
        d = extra.discoveries
        fdr = {
            key: FdrStatus(found, d.q, d.cutoff)
            for key, found in zip(sorted(extra.stats), d.discovered, strict=True)
        }
    return [classify(_with_extra(q, extra, fdr), thresholds) for q in evidence.queries]


def _with_extra(
    query: QueryEvidence, extra: _Extra, fdr: Mapping[tuple[str, int], FdrStatus]
) -> QueryEvidence:
    key = (query.test, query.query_index)
    found = extra.stats.get(key)
    if found is None:
        return query
    min_effect, status = None, None
    if extra.calibration is not None:
        min_effect, status = extra.calibration.lookup(query.test, query.query_index, query.query)
    return replace(
        query,
        stats=found,
        interval=extra.intervals.get(key),
        fdr=fdr.get(key),
        calibrated_min_effect=min_effect,
        calibration=status,
    )


def _flag_rates(
    verdicts: Sequence[QueryVerdict],
    statistics: QueryStatistics,
    measurable: Mapping[tuple[str, int], Samples],
) -> dict[tuple[str, int], float]:
    """Per query, how often relabelling its own A/A runs would reach the per-query rule's
    cutoff, under the method its statistics came from: pooled splits; for the paired method
    the exact size of its test at the query's run count (the share of block arrangements
    that are significant), an upper bound, since the rule also asks for the minimum effect."""
    pooled: dict[tuple[str, int], float] = {}
    rates: dict[tuple[str, int], float] = {}
    for v in verdicts:
        key = (v.test, v.query_index)
        if key not in measurable:
            continue
        if v.stats is not None and v.stats.method == PAIRED:
            rates[key] = test_size(structure_of(v.stats.pairs))
        elif (cutoff := flag_cutoff(v)) is not None:
            pooled[key] = cutoff
    rates.update(statistics.randomization.tail_shares({k: measurable[k] for k in pooled}, pooled))
    return rates


def _check_aa(out: Path, manifest: Mapping[str, Any]) -> None:
    """Calibration from a run that was not reference-against-itself would be wrong: refuse."""
    servers = manifest.get("servers")
    sides = [servers.get(s) if isinstance(servers, dict) else None for s in (REFERENCE, PATCHED)]
    if not all(isinstance(s, dict) for s in sides):
        raise ChperfError(
            f"{out}/run.json does not record both servers: cannot confirm an A/A run",
            hint="calibrate from the output of `chperf run --aa`",
        )
    reference, patched = (s if isinstance(s, dict) else {} for s in sides)
    for key in identity_keys(reference, patched):
        values = [reference.get(key), patched.get(key)]
        if values[0] != values[1]:
            raise ChperfError(
                f"{out}/run.json: the servers differ in {key} ({values[0]!r} vs {values[1]!r}): "
                "not an A/A run",
                hint="calibrate from the output of `chperf run --aa`",
            )


def _with_interference(
    verdicts: list[QueryVerdict], disturbed: Mapping[tuple[str, int], Interference]
) -> list[QueryVerdict]:
    """A measured query's reason says which of its runs coincided with interference."""
    found = []
    for v in verdicts:
        note = (
            disturbed[(v.test, v.query_index)].note()
            if (v.test, v.query_index) in disturbed
            else ""
        )
        found.append(replace(v, reason=f"{v.reason}; {note}") if note and v.stats else v)
    return found


def judge(
    verdicts: Sequence[QueryVerdict],
    evidence: Evidence,
    problems: Sequence[GlobalProblem],
    options: CompareOptions,
    load: LoadResults | None = None,
    protocols_unjudged: int = 0,
) -> CompareResult:
    """The check status: fails on failing verdicts, damage, and nothing measured; incomplete
    when a query, a load level or a protocol's full transfer was not judged."""
    counts = Counter(v.verdict.value for v in verdicts)
    query_failures = [f"{_named(v)}: {v.reason}" for v in verdicts if _fails(v, options)]
    suite_failures = _suite_failures(verdicts, evidence, problems, load)
    notes = [f"note: {p.text}" for p in problems if not p.fails_check]
    parts = [f"{counts[v.value]} {v.value}" for v in _MESSAGE_ORDER if counts[v.value]]
    unjudged_transfers = (
        f"protocols: {protocols_unjudged} full transfer{'s' if protocols_unjudged > 1 else ''} "
        "not judged (not run, or too few pairs)"
        if protocols_unjudged
        else ""
    )
    heads = [h for h in (", ".join(parts), load.message() if load else "", unjudged_transfers) if h]
    message = "; ".join([*(heads or ["no queries"]), *suite_failures, *notes])
    failures = (*query_failures, *suite_failures, *(load.failures(options) if load else ()))
    # Fail closed: a query nothing judged (not run, or too few runs to reach the level) never
    # lets the check pass; it is incomplete.
    unjudged = counts[Verdict.NOT_RUN.value] + counts[Verdict.INCONCLUSIVE.value]
    unjudged += load.unjudged() if load else 0
    unjudged += protocols_unjudged
    status = FAILURE if failures else INCOMPLETE if unjudged else SUCCESS
    return CompareResult(
        status=status,
        message=message,
        counts={v.value: counts[v.value] for v in Verdict},
        failures=failures,
    )


def _named(v: QueryVerdict) -> str:
    """A verdict's name on the console: sum query 3, or sum for the whole test."""
    return v.test if v.query_index == WHOLE_TEST else f"{v.test} query {v.query_index}"


def _suite_failures(
    verdicts: Sequence[QueryVerdict],
    evidence: Evidence,
    problems: Sequence[GlobalProblem],
    load: LoadResults | None = None,
) -> list[str]:
    """Fail closed: nothing measured, a side that never ran, damage not tied to a query."""
    failures = [p.text for p in problems if p.fails_check]
    if load is not None and load.measured and not any(v.stats is not None for v in verdicts):
        return failures  # only load levels were measured: they are the run's verdicts
    if verdicts and all(v.verdict is Verdict.NOT_RUN for v in verdicts):
        return failures  # stopped before the first query: incomplete, not failed
    if not any(v.stats is not None for v in verdicts):
        failures.append("no query was measured on both sides")
    failures.extend(f"no {side} runs at all" for side in SIDES if not evidence.runs_per_side[side])
    return failures


def _fails(verdict: QueryVerdict, options: CompareOptions) -> bool:
    unstable = verdict.verdict is Verdict.UNSTABLE
    return verdict.fails_check or (options.fail_on_unstable and unstable)
