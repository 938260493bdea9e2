"""`chperf compare OUT`: verdicts, metrics and the check status from a run's artifacts.

The thin shell around the pure parts: read (evidence.py, metrics.py), compute
(randomization.py in chDB), decide (verdict.py), write (outputs.py), judge the check.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from chperf.artifacts import SIDES, read_manifest
from chperf.errors import ExitCode
from compare.engine import SqlEngine
from compare.evidence import Evidence, GlobalProblem, gather
from compare.metrics import gather_metrics
from compare.outputs import (
    MetricRow,
    summary_document,
    write_metrics,
    write_summary,
    write_verdicts,
)
from compare.randomization import Randomization, SeriesStats
from compare.verdict import (
    MIN_EFFECT,
    MIN_RUNS,
    UNSTABLE_THRESHOLD,
    QueryEvidence,
    QueryVerdict,
    Thresholds,
    Verdict,
    classify,
)

SUCCESS = "success"
FAILURE = "failure"

# The order of the verdicts in the summary message: what needs attention first.
_MESSAGE_ORDER = (
    Verdict.SLOWER,
    Verdict.FASTER,
    Verdict.UNSTABLE,
    Verdict.PARTIAL,
    Verdict.ERROR,
    Verdict.SKIPPED,
    Verdict.UNCHANGED,
)


@dataclass(frozen=True)
class CompareOptions:
    min_effect: float = MIN_EFFECT
    unstable_threshold: float = UNSTABLE_THRESHOLD
    fail_on_unstable: bool = False


@dataclass(frozen=True)
class CompareResult:
    status: str  # "success" or "failure", as in summary.json
    message: str  # the summary.json message, e.g. "2 slower, 1 faster, 40 unchanged"
    counts: dict[str, int] = field(default_factory=dict)  # verdict value -> queries
    failures: tuple[str, ...] = ()  # why the check failed, one line each; empty on success

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.OK if self.status == SUCCESS else ExitCode.CHECK_FAILED


def compare_directory(out: Path, options: CompareOptions) -> CompareResult:
    """Write verdicts.tsv, metrics.tsv and summary.json into `out` and judge the check.

    Raises ChperfError (exit 2) when run.json is missing or of another schema version;
    damaged tables become verdicts and problems instead.
    """
    read_manifest(out)
    evidence = gather(out)
    metric_series = gather_metrics(out, MIN_RUNS)
    with SqlEngine() as engine:
        randomization = Randomization(engine)
        verdicts = _classify(evidence, randomization, options)
        metric_stats = randomization.statistics(metric_series.series)
    metrics = [MetricRow(t, q, m, s) for (t, q, m), s in metric_stats.items()]
    notes = [GlobalProblem(p, fails_check=False) for p in metric_series.problems]
    result = judge(verdicts, evidence, [*evidence.problems, *notes], options)
    write_verdicts(out, verdicts)
    write_metrics(out, metrics)
    write_summary(out, summary_document(result.status, result.message, result.counts, verdicts))
    return result


def _classify(
    evidence: Evidence, randomization: Randomization, options: CompareOptions
) -> list[QueryVerdict]:
    measurable = {
        key: samples
        for key, samples in evidence.client_time.items()
        if min(len(samples.reference), len(samples.patched)) >= MIN_RUNS
    }
    stats = randomization.statistics(measurable)
    thresholds = Thresholds(options.min_effect, options.unstable_threshold)
    return [classify(_with_stats(q, stats), thresholds) for q in evidence.queries]


def _with_stats(query: QueryEvidence, stats: dict[tuple[str, int], SeriesStats]) -> QueryEvidence:
    found = stats.get((query.test, query.query_index))
    return replace(query, stats=found) if found is not None else query


def judge(
    verdicts: Sequence[QueryVerdict],
    evidence: Evidence,
    problems: Sequence[GlobalProblem],
    options: CompareOptions,
) -> CompareResult:
    """The check status: fails on failing verdicts, damage, and nothing measured."""
    counts = Counter(v.verdict.value for v in verdicts)
    query_failures = [
        f"{v.test} query {v.query_index}: {v.reason}" for v in verdicts if _fails(v, options)
    ]
    suite_failures = _suite_failures(verdicts, evidence, problems)
    notes = [f"note: {p.text}" for p in problems if not p.fails_check]
    parts = [f"{counts[v.value]} {v.value}" for v in _MESSAGE_ORDER if counts[v.value]]
    message = "; ".join([", ".join(parts) or "no queries", *suite_failures, *notes])
    failures = (*query_failures, *suite_failures)
    return CompareResult(
        status=FAILURE if failures else SUCCESS,
        message=message,
        counts={v.value: counts[v.value] for v in Verdict},
        failures=failures,
    )


def _suite_failures(
    verdicts: Sequence[QueryVerdict], evidence: Evidence, problems: Sequence[GlobalProblem]
) -> list[str]:
    """Fail closed: nothing measured, a side that never ran, damage not tied to a query."""
    failures = [p.text for p in problems if p.fails_check]
    if not any(v.stats is not None for v in verdicts):
        failures.append("no query was measured on both sides")
    failures.extend(f"no {side} runs at all" for side in SIDES if not evidence.runs_per_side[side])
    return failures


def _fails(verdict: QueryVerdict, options: CompareOptions) -> bool:
    unstable = verdict.verdict is Verdict.UNSTABLE
    return verdict.fails_check or (options.fail_on_unstable and unstable)
