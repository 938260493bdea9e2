"""Verdicts of protocol timings (docs/protocols.md): per (test, query, protocol, phase), the
paired statistic of compare/blocked.py over the pairs of protocol_runs.tsv, classified
with the per-query thresholds (min effect, unstable threshold).

Which verdicts fail the check: a `slower` full transfer (the time a client waits for the
whole result), an interface that answers on the reference server and not on the patched one,
and a protocol that fails on the patched side only. Connect and first byte explain a change,
as metrics do; they never fail the check.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from artifacts.protocols import (
    CONNECT,
    FAILED,
    FIRST_BYTE,
    NOT_RUN,
    PHASES,
    PROTOCOL_PROBLEMS,
    PROTOCOL_RUNS,
    TRANSFER,
    UNAVAILABLE,
    ProtocolProblemRow,
    ProtocolRunRow,
    ProtocolVerdict,
)
from artifacts.tables import PATCHED, QUERIES, REFERENCE
from artifacts.tsv import read_table
from compare.blocked import SIGNIFICANT, Blocked, BlockedStats
from compare.engine import SqlEngine
from compare.verdict import Thresholds

# Below this many pairs the paired test cannot reach its 1% level (compare/blocked.py).
MIN_DECIDABLE_PAIRS = 6
# The phase whose slowdown fails the check: what a client of the interface waits for.
FAILING_PHASE = TRANSFER
# A log of 0 is undefined: a phase timed at 0 (a clock's resolution) counts as 1 ns.
MIN_SECONDS = 1e-9

Key = tuple[str, int, str]  # test, query_index, protocol


class Outcome(Enum):
    FASTER = "faster"
    SLOWER = "slower"
    UNSTABLE = "unstable"
    UNCHANGED = "unchanged"
    INCONCLUSIVE = "inconclusive"
    PARTIAL = "partial"
    ERROR = "error"
    UNAVAILABLE = "unavailable"
    NOT_RUN = "not run"


@dataclass
class Series:
    """One query over one protocol: its runs by side and run number, and its problems."""

    runs: dict[str, dict[int, ProtocolRunRow]] = field(
        default_factory=lambda: {REFERENCE: {}, PATCHED: {}}
    )
    problems: list[ProtocolProblemRow] = field(default_factory=list)

    def pairs(self, phase: str) -> tuple[list[tuple[float, float]], list[int]]:
        """(reference, patched) times of the run numbers both sides have, in run order, and
        the process set of each."""
        reference, patched = self.runs[REFERENCE], self.runs[PATCHED]
        both = sorted(set(reference) & set(patched))
        pairs = [(_time(reference[n], phase), _time(patched[n], phase)) for n in both]
        return pairs, [reference[n].process for n in both]


def _time(row: ProtocolRunRow, phase: str) -> float:
    value = {
        CONNECT: row.connect_time,
        FIRST_BYTE: row.first_byte_time,
        TRANSFER: row.transfer_time,
    }[phase]
    return max(value, MIN_SECONDS)


@dataclass(frozen=True)
class ProtocolComparison:
    verdicts: tuple[ProtocolVerdict, ...]
    failures: tuple[str, ...]  # why the check fails, one line each
    problems: tuple[str, ...]  # unreadable lines of the tables: fail the check too

    def unjudged(self) -> int:
        """Full transfers (the phase that can fail the check) that nothing judged: not run,
        or too few pairs to reach the level. Like such queries, they make the check
        incomplete."""
        return sum(
            v.phase == FAILING_PHASE
            and v.verdict in (Outcome.NOT_RUN.value, Outcome.INCONCLUSIVE.value)
            for v in self.verdicts
        )


def compare_protocols(out: Path, engine: SqlEngine, thresholds: Thresholds) -> ProtocolComparison:
    runs = read_table(out, PROTOCOL_RUNS)
    problems = read_table(out, PROTOCOL_PROBLEMS)
    damage = tuple(str(p) for p in (*runs.problems, *problems.problems) if p.line > 0)
    series = gather(runs.rows, problems.rows)
    if not series:
        return ProtocolComparison((), (), damage)
    statistics_of = Blocked(engine).statistics(
        {(*key, phase): s.pairs(phase) for key, s in series.items() for phase in PHASES}
    )
    effects = _min_effects(out)
    verdicts = []
    for key, s in sorted(series.items()):
        test_thresholds = thresholds.raised_to(effects.get(key[0]))
        for phase in PHASES:
            found = statistics_of.get((*key, phase))
            stats = found.stats if found is not None else None
            verdicts.append(classify(key, phase, s, stats, test_thresholds))
    failures = tuple(
        f"{v.test} query {v.query_index} {v.protocol} {v.phase}: {v.reason}"
        for v in verdicts
        if v.fails_check
    )
    return ProtocolComparison(tuple(verdicts), failures, damage)


def _min_effects(out: Path) -> dict[str, float]:
    """A test's max_ignored_relative_change raises its min effect, as for its queries."""
    found: dict[str, float] = {}
    for row in read_table(out, QUERIES).rows:
        if row.max_ignored_relative_change is not None:
            found[row.test] = row.max_ignored_relative_change
    return found


def gather(
    runs: Iterable[ProtocolRunRow], problems: Iterable[ProtocolProblemRow]
) -> dict[Key, Series]:
    series: dict[Key, Series] = {}
    for row in runs:
        if row.server in (REFERENCE, PATCHED):
            key = (row.test, row.query_index, row.protocol)
            series.setdefault(key, Series()).runs[row.server][row.run] = row
    for problem in problems:
        key = (problem.test, problem.query_index, problem.protocol)
        series.setdefault(key, Series()).problems.append(problem)
    return series


def classify(
    key: Key,
    phase: str,
    series: Series,
    stats: BlockedStats | None,
    thresholds: Thresholds,
) -> ProtocolVerdict:
    """The verdict of one phase; the first rule that applies wins (docs/protocols.md)."""
    pairs, _ = series.pairs(phase)
    outcome, reason, fails = _rule(phase, series, stats, thresholds, len(pairs))
    shown = stats if stats is not None and outcome in _MEASURED else None
    medians = [_median(series.runs[side].values(), phase) for side in (REFERENCE, PATCHED)]
    return ProtocolVerdict(
        test=key[0],
        query_index=key[1],
        protocol=key[2],
        phase=phase,
        verdict=outcome.value,
        reason=reason,
        fails_check=fails,
        runs=len(pairs),
        reference_median=medians[0],
        patched_median=medians[1],
        diff=shown.diff if shown is not None else None,
        threshold=_finite(shown.threshold) if shown is not None else None,
        p_value=shown.p_value if shown is not None else None,
        ci_low=_finite(math.exp(shown.ci_low_log)) if shown is not None else None,
        ci_high=_finite(math.exp(shown.ci_high_log)) if shown is not None else None,
        reference_bytes=_median_int(r.bytes for r in series.runs[REFERENCE].values()),
        patched_bytes=_median_int(r.bytes for r in series.runs[PATCHED].values()),
        reference_blocks=_median_int(r.blocks for r in series.runs[REFERENCE].values()),
        patched_blocks=_median_int(r.blocks for r in series.runs[PATCHED].values()),
    )


_MEASURED = frozenset(
    {Outcome.FASTER, Outcome.SLOWER, Outcome.UNSTABLE, Outcome.UNCHANGED, Outcome.INCONCLUSIVE}
)


def _rule(
    phase: str,
    series: Series,
    stats: BlockedStats | None,
    thresholds: Thresholds,
    pairs: int,
) -> tuple[Outcome, str, bool]:
    """(verdict, reason, fails the check)."""
    by_kind = _sides_by_kind(series.problems)
    unavailable = by_kind.get(UNAVAILABLE, {})
    if unavailable:
        sides = _sides_text(unavailable)
        fails = PATCHED in unavailable and REFERENCE not in unavailable
        return Outcome.UNAVAILABLE, f"not available on {sides}: {_first(unavailable)}", fails
    failed = by_kind.get(FAILED, {})
    if REFERENCE in failed and PATCHED in failed:
        return Outcome.ERROR, f"fails on both sides: {_first(failed)}", False
    if failed:
        side = next(iter(failed))
        return Outcome.PARTIAL, f"fails on {side} only: {failed[side]}", side == PATCHED
    not_run = by_kind.get(NOT_RUN, {})
    if pairs < MIN_DECIDABLE_PAIRS and not_run:
        return Outcome.NOT_RUN, f"not run: {_first(not_run)}", False
    if stats is None or pairs < MIN_DECIDABLE_PAIRS or not stats.decidable:
        why = f"{pairs} pairs: the paired test needs {MIN_DECIDABLE_PAIRS} to reach its level"
        return Outcome.INCONCLUSIVE, f"inconclusive: {why}", False
    return _judged(phase, stats, thresholds)


def _judged(phase: str, stats: BlockedStats, thresholds: Thresholds) -> tuple[Outcome, str, bool]:
    figures = (
        f"D {stats.diff:+.1%}, T {stats.threshold:.1%}, min effect {thresholds.min_effect:.1%}, "
        f"{stats.pairs} pairs, paired"
    )
    big = abs(stats.diff) >= thresholds.min_effect
    if stats.significant and big:
        outcome = Outcome.SLOWER if stats.diff > 0 else Outcome.FASTER
        fails = outcome is Outcome.SLOWER and phase == FAILING_PHASE and thresholds.min_effect < 1
        return outcome, f"{outcome.value}: {SIGNIFICANT} and |D| >= min effect ({figures})", fails
    if stats.threshold >= thresholds.unstable_threshold:
        why = f"T >= unstable threshold {thresholds.unstable_threshold:.1%}"
        return Outcome.UNSTABLE, f"unstable: {why} ({figures})", False
    return Outcome.UNCHANGED, f"unchanged ({figures})", False


def _sides_by_kind(problems: Sequence[ProtocolProblemRow]) -> dict[str, dict[str, str]]:
    """kind -> side -> the first message; a problem of `both` counts on either side."""
    found: dict[str, dict[str, str]] = {}
    for p in problems:
        for side in (REFERENCE, PATCHED) if p.server not in (REFERENCE, PATCHED) else (p.server,):
            found.setdefault(p.kind, {}).setdefault(side, p.message)
    return found


def _sides_text(sides: Mapping[str, str]) -> str:
    if len(sides) == 2:
        return "both servers"
    return f"the {next(iter(sides))} server only"


def _first(messages: Mapping[str, str]) -> str:
    return next(iter(messages.values()))


def _median(rows: Iterable[ProtocolRunRow], phase: str) -> float | None:
    values = [_time(r, phase) for r in rows]
    return statistics.median(values) if values else None


def _median_int(values: Iterable[int]) -> int | None:
    found = [v for v in values if v >= 0]
    return int(statistics.median_low(found)) if found else None


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
