"""Verdicts of load tests, one per (test, concurrency), from load_blocks.tsv (docs/load.md).

A block's cost is its seconds per completed query (insert tests: per written row), so a
higher cost is lower throughput. The blocks of a level come in pairs in run order (R P, P R,
P R, R P, ...), exactly as the runs of a query, and compare/blocked.py's paired statistic
applies unchanged: D is the Hodges-Lehmann estimate of ln(patched cost) - ln(reference cost)
within blocks of two pairs, its 99% interval inverts the exact rank test, T is the distance
from D to the interval's end nearer 0. The rules then follow the per-query ones
(compare/verdict.py), without false-discovery control (a run has a handful of levels), with
the test's max_ignored_relative_change raising its min effect, and with the process rule:
with blocks on two or more server process sets, a level is faster or slower only when every
set's own D shows the change.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from artifacts.loadblocks import LOAD_BLOCKS, LoadBlockRow
from artifacts.tables import PATCHED, REFERENCE, TESTS, WHOLE_TEST, read_monitor_samples
from artifacts.tsv import read_table
from compare.blocked import SIGNIFICANT, BlockedStats, blocked_stats, process_diffs
from compare.interference import FOREIGN_CPU
from compare.verdict import QueryEvidence, Thresholds, Verdict, every_process_shows

# The paired test reaches its 1% level from 6 pairs (3 blocks of two pairs: p >= 2/216).
MIN_LOAD_PAIRS = 6
INSERT = "insert"
SELECT = "select"
# A failing query's message in a level's reason: enough to recognize the error.
MAX_REASON_ERROR_CHARS = 300
# tests.tsv's reason of a load test that a budget or a signal stopped (runner/load.py).
STOPPED_PREFIX = "load test stopped"


@dataclass(frozen=True)
class SideFigures:
    """Medians over a side's blocks of one level."""

    blocks: int
    qps: float  # completed queries per second, all clients together
    p50: float | None  # seconds
    p90: float | None
    p99: float | None
    rows_per_client: float  # insert tests: rows a second per client; else 0
    bytes_per_client: float
    harness_cpu: float  # cores chperf's clients used
    errors: int  # failed queries over all blocks
    first_error: str

    def as_json(self) -> dict[str, object]:
        return {
            "blocks": self.blocks,
            "qps": self.qps,
            "p50": self.p50,
            "p90": self.p90,
            "p99": self.p99,
            "rows_per_second_per_client": self.rows_per_client,
            "bytes_per_second_per_client": self.bytes_per_client,
            "harness_cpu": self.harness_cpu,
            "errors": self.errors,
        }


@dataclass(frozen=True)
class LoadVerdict:
    test: str
    concurrency: int
    kind: str  # select or insert
    verdict: Verdict
    reason: str
    fails_check: bool
    reference: SideFigures | None
    patched: SideFigures | None
    stats: BlockedStats | None  # of the cost; None without MIN_LOAD_PAIRS pairs
    # each server process set's own D of the cost (compare/blocked.py), empty with one set
    process_diffs: tuple[float, ...] = ()
    # other programs' CPU (foreign and steal, cores) during the level's blocks, the median of
    # the environment monitor's samples; None without samples
    foreign_cpu: float | None = None

    @property
    def throughput_change(self) -> float | None:
        """patched over reference throughput, minus 1: -0.3 is 30% fewer queries a second."""
        return None if self.stats is None else math.expm1(-self.stats.diff_log)

    def as_json(self) -> dict[str, object]:
        s = self.stats
        return {
            "test": self.test,
            "concurrency": self.concurrency,
            "kind": self.kind,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "pairs": 0 if s is None else s.pairs,
            "diff": None if s is None else s.diff,
            "threshold": None if s is None else s.threshold,
            "p_value": None if s is None else s.p_value,
            "ci_low": None if s is None or not s.decidable else math.exp(s.ci_low_log),
            "ci_high": None if s is None or not s.decidable else math.exp(s.ci_high_log),
            "throughput_change": self.throughput_change,
            "foreign_cpu": self.foreign_cpu,
            "process_diffs": list(self.process_diffs),
            "reference": None if self.reference is None else self.reference.as_json(),
            "patched": None if self.patched is None else self.patched.as_json(),
        }


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def side_figures(blocks: Sequence[LoadBlockRow]) -> SideFigures | None:
    if not blocks:
        return None
    per_client = [(b.seconds * b.concurrency) for b in blocks]
    return SideFigures(
        blocks=len(blocks),
        qps=statistics.median(b.queries / b.seconds if b.seconds > 0 else 0.0 for b in blocks),
        p50=_median(b.p50 for b in blocks),
        p90=_median(b.p90 for b in blocks),
        p99=_median(b.p99 for b in blocks),
        rows_per_client=statistics.median(
            b.rows / c if c > 0 else 0.0 for b, c in zip(blocks, per_client, strict=True)
        ),
        bytes_per_client=statistics.median(
            b.bytes / c if c > 0 else 0.0 for b, c in zip(blocks, per_client, strict=True)
        ),
        harness_cpu=statistics.median(b.harness_cpu for b in blocks),
        errors=sum(b.errors for b in blocks),
        first_error=next((b.error for b in blocks if b.error), ""),
    )


def cost(block: LoadBlockRow, insert: bool) -> float | None:
    """Seconds per unit of work (a query, or an inserted row); None for a block without any."""
    work = block.rows if insert else block.queries
    return block.seconds / work if work > 0 and block.seconds > 0 else None


def cost_pairs(blocks: Sequence[LoadBlockRow], insert: bool) -> list[tuple[float, float]]:
    """(reference, patched) costs of the pairs with both blocks measured, in pair order."""
    return [costs for costs, _ in _measured_pairs(blocks, insert)]


def _measured_pairs(
    blocks: Sequence[LoadBlockRow], insert: bool
) -> list[tuple[tuple[float, float], int]]:
    """cost_pairs' pairs, each with the process set that ran it."""
    by_pair: dict[int, dict[str, float | None]] = defaultdict(dict)
    process: dict[int, int] = {}
    for b in blocks:
        by_pair[b.pair][b.server] = cost(b, insert)
        process[b.pair] = b.process
    pairs = []
    for pair in sorted(by_pair):
        reference, patched = by_pair[pair].get(REFERENCE), by_pair[pair].get(PATCHED)
        if reference is not None and patched is not None:
            pairs.append(((reference, patched), process[pair]))
    return pairs


def judge_level(
    test: str, concurrency: int, blocks: Sequence[LoadBlockRow], thresholds: Thresholds
) -> LoadVerdict:
    insert = any(b.rows > 0 for b in blocks)
    reference = side_figures([b for b in blocks if b.server == REFERENCE])
    patched = side_figures([b for b in blocks if b.server == PATCHED])
    stats: BlockedStats | None = None
    diffs: tuple[float, ...] = ()
    failed = [side for side, f in ((REFERENCE, reference), (PATCHED, patched)) if f and f.errors]
    with_sets = _measured_pairs(blocks, insert)
    pairs = [costs for costs, _ in with_sets]
    if failed:
        verdict, reason, fails = _failed(failed, reference, patched)
    elif len(pairs) < MIN_LOAD_PAIRS:
        reason = f"{len(pairs)} pairs of blocks measured, the paired test needs {MIN_LOAD_PAIRS}"
        measured = reference is not None and patched is not None
        verdict, fails = (Verdict.INCONCLUSIVE if measured else Verdict.NOT_RUN), False
    else:
        stats = blocked_stats(pairs)
        diffs = process_diffs(pairs, [process for _, process in with_sets])
        verdict, reason, fails = decide(stats, thresholds, diffs)
    kind = INSERT if insert else SELECT
    return LoadVerdict(
        test, concurrency, kind, verdict, reason, fails, reference, patched, stats, diffs
    )


def _failed(
    failed: Sequence[str], reference: SideFigures | None, patched: SideFigures | None
) -> tuple[Verdict, str, bool]:
    """Queries that failed in a block: the level is partial (one side) or an error (both);
    the patched side failing fails the check."""
    figures = patched if PATCHED in failed else reference
    message = figures.first_error[:MAX_REASON_ERROR_CHARS] if figures else ""
    if len(failed) == 2:
        return Verdict.ERROR, f"queries failed on both sides: {message}", True
    return Verdict.PARTIAL, f"queries failed on {failed[0]} only: {message}", PATCHED in failed


def decide(
    stats: BlockedStats, thresholds: Thresholds, diffs: Sequence[float] = ()
) -> tuple[Verdict, str, bool]:
    """The per-query rules (compare/verdict.py) on the paired statistic of the blocks: a
    change must be significant, at least the min effect, and shown by every process set's D."""
    d, t, least = stats.diff, stats.threshold, thresholds.min_effect
    figures = f"D {d:+.1%}, T {t:.1%}, min effect {least:.1%}, {stats.pairs} pairs"
    if diffs:
        figures += ", D per process set " + ", ".join(f"{x:+.1%}" for x in diffs)
    held = ""
    if stats.significant and abs(d) >= least:
        verdict = Verdict.SLOWER if d > 0 else Verdict.FASTER
        if every_process_shows(diffs, d, least):
            reason = f"{verdict.value}: {SIGNIFICANT} and |D| >= min effect ({figures})"
            return verdict, reason, verdict is Verdict.SLOWER
        held = (
            f"; would be {verdict.value}, but not on every server process set (each set's D "
            f"must be at least {least:.1%} in the direction of D)"
        )
    if t >= thresholds.unstable_threshold:
        reason = f"unstable: T >= {thresholds.unstable_threshold:.1%} ({figures}){held}"
        return Verdict.UNSTABLE, reason, False
    return Verdict.UNCHANGED, f"unchanged ({figures}){held}", False


def load_verdicts(
    rows: Sequence[LoadBlockRow],
    thresholds: Thresholds,
    min_effects: Mapping[str, float] | None = None,
) -> list[LoadVerdict]:
    """One verdict per (test, concurrency) present in load_blocks.tsv, sorted; a test in
    `min_effects` (its max_ignored_relative_change) has at least that min effect."""
    levels: dict[tuple[str, int], list[LoadBlockRow]] = defaultdict(list)
    for row in rows:
        levels[(row.test, row.concurrency)].append(row)
    effects = min_effects or {}
    return [
        judge_level(t, c, levels[(t, c)], thresholds.raised_to(effects.get(t)))
        for t, c in sorted(levels)
    ]


@dataclass(frozen=True)
class LoadResults:
    verdicts: tuple[LoadVerdict, ...]
    problems: tuple[str, ...]  # damaged lines of load_blocks.tsv: they fail the check
    stopped: tuple[str, ...] = ()  # load tests a budget or signal stopped before their end

    @property
    def tests(self) -> frozenset[str]:
        return frozenset(v.test for v in self.verdicts)

    @property
    def measured(self) -> bool:
        """Whether some level was judged on both sides: the run measured something."""
        return any(v.stats is not None for v in self.verdicts)

    def failures(self, options: FailOptions) -> list[str]:
        unstable = options.fail_on_unstable
        failing = [
            v
            for v in self.verdicts
            if v.fails_check or (unstable and v.verdict is Verdict.UNSTABLE)
        ]
        found = [f"{v.test} at {v.concurrency} clients: {v.reason}" for v in failing]
        return found + [f"{LOAD_BLOCKS.file}: {p}" for p in self.problems]

    def unjudged(self) -> int:
        levels = [v for v in self.verdicts if v.verdict in (Verdict.NOT_RUN, Verdict.INCONCLUSIVE)]
        return len(levels) + len(self.stopped)

    def message(self) -> str:
        """`load: 1 slower, 5 unchanged`, "" without load tests."""
        if not self.verdicts:
            return ""
        counts = Counter(v.verdict.value for v in self.verdicts)
        parts = [f"{n} {name}" for name, n in sorted(counts.items())]
        parts += [f"{test} stopped early" for test in self.stopped]
        return "load: " + ", ".join(parts)

    def as_json(self) -> list[dict[str, object]]:
        return [v.as_json() for v in self.verdicts]


class FailOptions(Protocol):
    """What of compare's options decides whether a level fails the check."""

    @property
    def fail_on_unstable(self) -> bool: ...


def read_load(out: Path, thresholds: Thresholds) -> LoadResults:
    """The verdicts of the load tests of a run directory; none when it has no load_blocks.tsv
    (a run without load tests, or one made before the file existed)."""
    contents = read_table(out, LOAD_BLOCKS)
    problems = () if contents.missing else tuple(str(p) for p in contents.problems)
    test_rows = read_table(out, TESTS).rows
    effects = {
        row.test: row.max_ignored_relative_change
        for row in test_rows
        if row.max_ignored_relative_change is not None
    }
    verdicts = tuple(
        with_interference(load_verdicts(contents.rows, thresholds, effects), contents.rows, out)
    )
    tests = {v.test for v in verdicts}
    stopped = tuple(
        sorted(
            row.test
            for row in test_rows
            if row.test in tests and row.reason.startswith(STOPPED_PREFIX)
        )
    )
    return LoadResults(verdicts, problems, stopped)


def with_interference(
    verdicts: Sequence[LoadVerdict], rows: Sequence[LoadBlockRow], out: Path
) -> list[LoadVerdict]:
    """Each level with what other programs used during its blocks; a reason says so from
    compare/interference.py's FOREIGN_CPU on: on a 2-core machine a busy core hides a change
    that needs both (docs/load.md)."""
    samples = read_monitor_samples(out).rows
    if not samples:
        return list(verdicts)
    found = []
    for v in verdicts:
        blocks = [(b.start_time, b.start_time + b.seconds) for b in rows
                  if (b.test, b.concurrency) == (v.test, v.concurrency)]  # fmt: skip
        busy = [
            s.foreign_cpu + s.steal * s.cpus
            for s in samples
            if any(start <= s.time <= end + s.seconds for start, end in blocks)
        ]
        if not busy:
            found.append(v)
            continue
        cores = statistics.median(busy)
        reason = v.reason
        if cores >= FOREIGN_CPU:
            reason += f"; other programs used a median {cores:.2f} cores during its blocks"
        found.append(replace(v, foreign_cpu=cores, reason=reason))
    return found


def without_load_tests(
    queries: Sequence[QueryEvidence], load: LoadResults
) -> tuple[QueryEvidence, ...]:
    """The per-query evidence without the rows of load tests that ran: their verdicts are the
    levels'. A load test that was skipped, not run or failed keeps its whole-test row."""
    tests = load.tests
    return tuple(
        q
        for q in queries
        if not (
            q.test in tests
            and q.query_index == WHOLE_TEST
            and not q.skipped_reason
            and not q.not_run_reason
            and not q.test_failures
        )
    )
