"""Per-query classification: a pure function from evidence to a verdict.

The rules, in order, and which verdicts fail the check: docs/method.md, "The verdict rules".
`>=` everywhere: the randomization distribution is discrete. Fail closed: damaged artifacts
or too few runs fail the check. A query broken on both sides from the prewarm on, or in setup
on both sides, is an error that does not fail it: the patch did not cause it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from artifacts.tables import (
    PATCHED,
    REFERENCE,
    STAGE_NOT_RUN,
    STAGE_PARSE,
    STAGE_RUN,
    STAGE_SERVER,
    STAGE_TOO_LONG,
)
from compare.blocked import NOT_SIGNIFICANT, SIGNIFICANT
from compare.bootstrap import RatioInterval
from compare.paired import PAIRED
from compare.randomization import SeriesStats

# Changes below 5% are too small to act on. ClickHouse's CI needs 10-15% on its machines;
# A/A calibration (compare/calibration.py) keeps 5% honest here.
MIN_EFFECT = 0.05

# A query whose T reaches 10% cannot detect a change of twice the minimum effect with
# confidence: it is reported unstable rather than unchanged.
UNSTABLE_THRESHOLD = 0.10

# Fewer than 3 runs a side: the median is the minimum or the maximum (or their mean) and the
# randomization distribution has at most C(4, 2) = 6 splits, too coarse for a 0.99 quantile.
MIN_RUNS = 3

# Stages whose errors fail the check even on the reference side: the measurement itself broke.
# Not a reference server's death or hang: that query is partial (_fails_check).
FAILING_STAGES = frozenset({STAGE_RUN, STAGE_SERVER, STAGE_PARSE})


# The sub-verdicts of unchanged: is the CI within ±min effect?
EQUIVALENT = "equivalent"
INCONCLUSIVE = "inconclusive"


class Verdict(Enum):
    FASTER = "faster"
    SLOWER = "slower"
    UNSTABLE = "unstable"
    UNCHANGED = "unchanged"
    PARTIAL = "partial"
    ERROR = "error"
    SKIPPED = "skipped"
    INCONCLUSIVE = "inconclusive"  # too few runs for the test to reach its level at all
    TOO_LONG = "too long"  # a run over its time limit; fails the check on the patched side only
    NOT_RUN = "not run"  # a budget ran out or the run stopped first: the check is incomplete


@dataclass(frozen=True)
class Thresholds:
    min_effect: float = MIN_EFFECT
    unstable_threshold: float = UNSTABLE_THRESHOLD

    def raised_to(self, floor: float | None) -> Thresholds:
        """A test's max_ignored_relative_change raises the min effect, never lowers it."""
        if floor is None or floor <= self.min_effect:
            return self
        return Thresholds(floor, self.unstable_threshold)


@dataclass(frozen=True)
class Failure:
    """One recorded error of a query or of its whole test (a row of errors.tsv)."""

    side: str  # reference, patched or both
    stage: str
    message: str

    def __str__(self) -> str:
        return f"{self.stage} on {self.side}: {self.message}"


@dataclass(frozen=True)
class FdrStatus:
    """Whether the query's p-value is a Benjamini-Hochberg discovery (compare/fdr.py)."""

    discovery: bool
    q: float
    cutoff: float  # the largest p-value discovered; 0.0 when none is


@dataclass(frozen=True)
class QueryEvidence:
    test: str
    query_index: int  # WHOLE_TEST (-1) for a row that stands for a whole test
    query: str
    max_ignored_relative_change: float | None
    skipped_reason: str | None = None  # the test was skipped (tests.tsv)
    not_run_reason: str | None = None  # the test was never started (tests.tsv "not run")
    test_failures: tuple[Failure, ...] = ()  # errors of the whole test (parse, setup)
    failures: tuple[Failure, ...] = ()  # errors of this query (prewarm, run, server)
    problems: tuple[str, ...] = ()  # damaged artifacts concerning this query
    runs_reference: int = 0
    runs_patched: int = 0
    stats: SeriesStats | None = None  # client_time; None when not measured on both sides
    interval: RatioInterval | None = None  # bootstrap CI of patched/reference medians
    fdr: FdrStatus | None = None  # None: no false-discovery control
    calibrated_min_effect: float | None = None  # from a calibration file, when it has the query
    calibration: str | None = None  # "calibrated", "not calibrated: why"; None: no file
    stop_reason: str | None = None  # why its runs ended (stops.tsv), when recorded


@dataclass(frozen=True)
class QueryVerdict:
    test: str
    query_index: int
    query: str
    verdict: Verdict
    reason: str
    fails_check: bool
    runs_reference: int
    runs_patched: int
    stats: SeriesStats | None  # set for faster, slower, unstable and unchanged
    interval: RatioInterval | None = None  # set with stats, when computable
    equivalence: str | None = None  # EQUIVALENT or INCONCLUSIVE, for unchanged only
    min_effect: float | None = None  # the min effect applied, for measured verdicts
    calibration: str | None = None  # as QueryEvidence.calibration, for measured verdicts


def classify(evidence: QueryEvidence, thresholds: Thresholds) -> QueryVerdict:
    if evidence.skipped_reason is not None:
        return _verdict(evidence, Verdict.SKIPPED, f"skipped: {evidence.skipped_reason}", False)
    not_run = evidence.not_run_reason or _stage_messages(evidence.failures, STAGE_NOT_RUN)
    if not_run:
        return _verdict(evidence, Verdict.NOT_RUN, f"not run: {not_run}", False)
    if evidence.test_failures:
        return _failed_test(evidence)
    too_long = [f for f in evidence.failures if f.stage == STAGE_TOO_LONG]
    if too_long:
        return _too_long(evidence, tuple(too_long))
    if evidence.failures:
        return _failed_query(evidence)
    problem = _measurement_problem(evidence)
    if problem is not None:
        return _verdict(evidence, Verdict.ERROR, problem, True)
    assert evidence.stats is not None and evidence.stats.diff is not None  # checked above
    return _decide(evidence, evidence.stats, thresholds)


def min_effect_for(evidence: QueryEvidence, thresholds: Thresholds) -> float:
    """The test's max_ignored_relative_change and the query's calibrated floor apply when
    larger than the default."""
    return max(
        thresholds.min_effect,
        evidence.max_ignored_relative_change or 0.0,
        evidence.calibrated_min_effect or 0.0,
    )


def ignores_changes(evidence: QueryEvidence) -> bool:
    """A test's max_ignored_relative_change of 1.0 or more: no change of its queries fails
    the check (a speedup cannot reach -100%; the authors opted the test out)."""
    return (evidence.max_ignored_relative_change or 0.0) >= 1.0


def _stage_messages(failures: tuple[Failure, ...], stage: str) -> str:
    if not failures:  # the usual case, asked for every query
        return ""
    return "; ".join(dict.fromkeys(f.message for f in failures if f.stage == stage))


def _too_long(evidence: QueryEvidence, failures: tuple[Failure, ...]) -> QueryVerdict:
    """Over the time limit: the runs it has are kept but not judged. Only the patched side
    going over fails the check: the patch made it that slow."""
    sides = _failed_sides(failures)
    where = "both sides" if len(sides) == 2 else f"the {next(iter(sides))} side only"
    details = "; ".join(str(f) for f in failures)
    reason = f"too long on {where}: {details}"
    return _verdict(evidence, Verdict.TOO_LONG, reason, sides == {PATCHED})


def _failed_test(evidence: QueryEvidence) -> QueryVerdict:
    failures = evidence.test_failures
    reason = "test failed: " + "; ".join(str(f) for f in failures)
    return _verdict(evidence, Verdict.ERROR, reason, _fails_check(failures))


def _failed_query(evidence: QueryEvidence) -> QueryVerdict:
    failures = evidence.failures
    sides = _failed_sides(failures)
    details = "; ".join(str(f) for f in failures)
    if sides == {REFERENCE, PATCHED}:
        return _verdict(
            evidence, Verdict.ERROR, f"fails on both sides: {details}", _fails_check(failures)
        )
    (side,) = sides
    reason = f"fails on {side} only: {details}"
    return _verdict(evidence, Verdict.PARTIAL, reason, _fails_check(failures))


def _failed_sides(failures: tuple[Failure, ...]) -> set[str]:
    sides: set[str] = set()
    for failure in failures:
        sides |= (
            {REFERENCE, PATCHED} if failure.side not in (REFERENCE, PATCHED) else {failure.side}
        )
    return sides


def _fails_check(failures: tuple[Failure, ...]) -> bool:
    counted = _not_explained_by_a_reference_crash(failures)
    patched_only = _failed_sides(counted) == {PATCHED}
    return patched_only or any(f.stage in FAILING_STAGES for f in counted)


def _not_explained_by_a_reference_crash(failures: tuple[Failure, ...]) -> tuple[Failure, ...]:
    """The reference server dying or hanging on a query is the reference's problem: its
    failures on that side (the death and the run it broke) do not fail the check. The
    patched server's do, whatever the reference did."""
    if not any(f.side == REFERENCE and f.stage == STAGE_SERVER for f in failures):
        return failures
    return tuple(f for f in failures if f.side != REFERENCE)


def _measurement_problem(evidence: QueryEvidence) -> str | None:
    if evidence.problems:
        return "damaged artifacts: " + "; ".join(evidence.problems)
    runs = (evidence.runs_reference, evidence.runs_patched)
    if min(runs) < MIN_RUNS:
        return (
            f"too few runs: {runs[0]} reference and {runs[1]} patched, "
            f"need at least {MIN_RUNS} on each side"
        )
    if evidence.stats is None:
        return "no statistics computed for the measured runs"
    if evidence.stats.diff is None:
        return "the reference median is 0 s: no relative change is defined"
    return None


def _decide(evidence: QueryEvidence, stats: SeriesStats, thresholds: Thresholds) -> QueryVerdict:
    diff, threshold = stats.diff or 0.0, stats.threshold or 0.0
    min_effect = min_effect_for(evidence, thresholds)
    interval = ""
    if stats.paired_interval is not None and stats.decidable:
        low, high = stats.paired_interval
        interval = f", 99% CI {low - 1:+.1%} to {high - 1:+.1%}"
    figures = (
        f"D {diff:+.1%}{interval}, T {threshold:.1%}, min effect {min_effect:.1%}, {stats.method}"
    )
    if not stats.decidable:
        reason = (
            f"inconclusive: too few runs: {stats.pairs} pairs cannot reach the 1% level "
            f"however clear the change (D {diff:+.1%}); the paired test needs at least 6"
        )
        if evidence.stop_reason:
            reason += f"; measuring stopped: {evidence.stop_reason}"
        return _verdict(evidence, Verdict.INCONCLUSIVE, reason, False, min_effect)
    held_back, why_held = "", ""
    if stats.significant and abs(diff) >= min_effect:
        verdict = Verdict.FASTER if diff < 0 else Verdict.SLOWER
        missing = not_on_every_process(stats, diff, min_effect)
        if missing:
            held_back = f"; would be {verdict.value}, but {missing}"
            why_held = "the change does not show on every server process"
        elif evidence.fdr is None or evidence.fdr.discovery:
            each = _per_process(stats)
            test = SIGNIFICANT if stats.method == PAIRED else "|D| >= T"
            reason = f"{verdict.value}: {test} and |D| >= min effect{each} ({figures})"
            fails = verdict is Verdict.SLOWER and not ignores_changes(evidence)
            if verdict is Verdict.SLOWER and not fails:
                reason += (
                    f"; does not fail the check: the test sets max_ignored_relative_change="
                    f"{evidence.max_ignored_relative_change:g} (1.0 or more: never fail)"
                )
            return _verdict(evidence, verdict, reason, fails, min_effect)
        else:
            held_back = f"; would be {verdict.value}, but {_not_discovered(evidence.fdr, stats)}"
            why_held = "not a discovery at the false-discovery rate"
    if threshold >= thresholds.unstable_threshold:
        reason = (
            f"unstable: T >= {thresholds.unstable_threshold:.1%}, too noisy to detect a change "
            f"of the size that matters ({figures}){held_back}"
        )
        return _verdict(evidence, Verdict.UNSTABLE, reason, False, min_effect)
    if held_back:
        why = why_held
    else:
        why = "|D| < min effect"
        if not stats.significant:
            why = NOT_SIGNIFICANT if stats.method == PAIRED else "|D| < T, not significant"
    equivalence, ci = _equivalence(evidence.interval, min_effect)
    reason = f"unchanged: {why} ({figures}){held_back}; {equivalence}: {ci}"
    return _verdict(evidence, Verdict.UNCHANGED, reason, False, min_effect, equivalence)


def every_process_shows(diffs: Sequence[float], diff: float, min_effect: float) -> bool:
    """Every process set's own D is in D's direction and at least the min effect (true
    without per-set figures)."""
    return all(d * diff > 0 and abs(d) >= min_effect for d in diffs)


def not_on_every_process(stats: SeriesStats, diff: float, min_effect: float) -> str:
    """Why D is not a change, or "" when every server process set shows it on its own (D_k in
    D's direction, at least the min effect). Two processes of one binary can differ by 5-25%
    for minutes (memory layout, allocator state): a change on one pair only may be that."""
    diffs = stats.process_diffs
    if every_process_shows(diffs, diff, min_effect):
        return ""
    each = ", ".join(f"{d:+.2%}" for d in diffs)
    return (
        f"not on every server process (D per process set {each}; each must be at least "
        f"{min_effect:.1%} in the direction of D)"
    )


def _per_process(stats: SeriesStats) -> str:
    if not stats.process_diffs:
        return ""
    return " on every server process (" + ", ".join(f"{d:+.2%}" for d in stats.process_diffs) + ")"


def _not_discovered(fdr: FdrStatus, stats: SeriesStats) -> str:
    cutoff = f"BH cutoff {fdr.cutoff:.2g}" if fdr.cutoff > 0 else "no query is a discovery"
    return f"not a discovery at FDR {fdr.q:.0%} (p {stats.p_value:.2g}; {cutoff})"


def _equivalence(interval: RatioInterval | None, min_effect: float) -> tuple[str, str]:
    if interval is None:
        return INCONCLUSIVE, "no confidence interval (a resampled reference median is 0)"
    ci = f"{interval.level:.0%} CI {interval.low:.3f}-{interval.high:.3f}x"
    if interval.within(min_effect):
        return EQUIVALENT, f"{ci} within ±{min_effect:.1%}"
    return INCONCLUSIVE, f"{ci} reaches beyond ±{min_effect:.1%}"


def _verdict(
    evidence: QueryEvidence,
    verdict: Verdict,
    reason: str,
    fails: bool,
    min_effect: float | None = None,
    equivalence: str | None = None,
) -> QueryVerdict:
    measured = verdict in (
        Verdict.FASTER,
        Verdict.SLOWER,
        Verdict.UNSTABLE,
        Verdict.UNCHANGED,
        Verdict.INCONCLUSIVE,
    )
    return QueryVerdict(
        test=evidence.test,
        query_index=evidence.query_index,
        query=evidence.query,
        verdict=verdict,
        reason=reason,
        fails_check=fails,
        runs_reference=evidence.runs_reference,
        runs_patched=evidence.runs_patched,
        stats=evidence.stats if measured else None,
        interval=evidence.interval if measured else None,
        equivalence=equivalence,
        min_effect=min_effect,
        calibration=evidence.calibration if measured else None,
    )
