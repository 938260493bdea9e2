"""The least client time any stop rule built on chperf's statistic could spend on a long fixed
run and still leave at most a given share of the queries unstable: a bound for the
machine-time bar, from the data alone.

For each query of RUN (a fixed run of at least 40 runs a side, such as the truth of
bench/bench_known_change.py), the statistic is computed at every look of the stop rule (6, 8,
... 40 runs a side) as the live rule sees it. A query can end other than unstable only at a
look where T is below the unstable threshold, or where it is significant with |D| of at least
the minimum effect. The oracle knows the future and stops every query at its first such look.
Up to --unstable-share of the queries (default 3%, the A/A bar) may end unstable at the first
look instead; the oracle picks the ones that save the most time. A query that reaches no such
look up to 40 runs ends unstable too; one that the source stopped sooner (its time limit) is
taken to settle right after its last run, which no real rule could beat.

Printed: that least client time over fixed 15 runs a query (the machine-time bar is 0.6), the
floor of the first look alone (min_runs for every query), the queries that cost the most, the
default stop rule replayed on the same runs (bench/replay_stops.py) with the time it spends
above the oracle by the reason it stopped, and how T shrinks: per run count n, the median and
10th and 90th percentiles over the queries of T at n over T at 40 runs scaled by
sqrt(40 / n). Above 1, T is wider than 1/sqrt(runs) scaling from its value at 40 runs
predicts: a rule that projects T forward from an early look gives up on queries that would
have come below the threshold. Then the share of queries a fixed run count leaves unstable,
and its time, for 6 to 40 runs a query: what the adaptive rule's unstable share would cost
without it. Last, the same least time for an ideal statistic that knows
each query's noise in advance (its standard deviation, or its robust spread, over all the
pairs of RUN): what a better statistic could at most win. With --drop-outlier-blocks, the
oracle again for the same statistic over each query's blocks without those where one run lies
apart from the other three (a choice made on the four times alone, blind to the sides, so the
test stays exact); and the median T over successive windows of 6 runs, which shows whether
the first runs of a query are the noisy ones.
A real rule cannot know that T will fall at the next look, so it spends more than this bound:
if the bound is above the bar, no stop rule with this statistic, this unstable threshold and
this unstable share meets the bar on this data.

Usage: .venv/bin/python bench/stop_oracle.py RUN [--unstable-share F] [--top N]
    [--drop-outlier-blocks GAP [GAP ...]]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

# Run as a script (`python bench/<name>.py`): the repository root holds the `bench` package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np

from artifacts.manifest import read_manifest
from bench.noise_sources import robust_spread
from bench.replay_stops import replay
from bench.runs import Key, run_pairs, side_times
from compare.blocked import ALPHA, MARGIN_LOG, PAIRS_PER_BLOCK
from compare.fdr import FDR_Q
from compare.interim import InterimJudge
from compare.randomization import SeriesStats
from compare.stopping import StopRule, is_checkpoint
from compare.verdict import MIN_EFFECT, UNSTABLE_THRESHOLD, Thresholds
from runner.measure import samples_of

FIXED = 15
UNSTABLE_SHARE = 0.03
SHRINK_COUNTS = (6, 8, 10, 12, 16, 20, 24, 30)
FIXED_COUNTS = (6, 8, 10, 12, 15, 20, 24, 30, 36, 40)
LAST = 40
WINDOW = 6  # runs a window of window_thresholds: as many as the first look


@dataclass(frozen=True)
class Need:
    """The first look at which a query can end other than unstable (None: no look can)."""

    key: Key
    runs: int | None
    seconds: float | None  # client time of both sides up to that look
    floor_seconds: float  # client time of both sides up to the first look
    fixed_seconds: float  # client time of both sides over the first FIXED runs
    fixed_settles: bool  # whether the first FIXED runs end other than unstable


def settles(stats: SeriesStats | None, min_effect: float, unstable: float) -> bool:
    """Whether a verdict at this look can be other than unstable."""
    if stats is None or stats.diff is None or stats.threshold is None:
        return False
    changed = stats.significant and abs(stats.diff) >= min_effect
    return changed or stats.threshold < unstable


def needs(
    runs: dict[Key, list[tuple[float, float]]], rule: StopRule, sets: int, judge: InterimJudge
) -> list[Need]:
    def settled_at(key: Key, n: int) -> bool:
        stats = judge.stats(samples_of(side_times(runs[key][:n]), sets))
        return settles(stats, rule.min_effect, UNSTABLE_THRESHOLD)

    return needs_by(runs, rule, settled_at)


def known_noise_needs(
    runs: dict[Key, list[tuple[float, float]]], rule: StopRule, robust: bool
) -> list[Need]:
    """`needs` for an ideal statistic that knows each query's noise in advance: its spread s
    of d = ln(P / R) over all the pairs of RUN (the standard deviation, or 1.4826 x MAD with
    `robust`), its interval D +- z s / sqrt(n) at the test's level, D the median of d over all
    the pairs. With the standard deviation it is the best a statistic on the mean of d can
    do (a rank statistic can do better on heavy tails); with the robust spread, the best of one
    that also knew which runs are outliers."""
    z = float(NormalDist().inv_cdf(1 - ALPHA / 2))
    unstable, min_effect = math.log1p(UNSTABLE_THRESHOLD), math.log1p(rule.min_effect)
    noise: dict[Key, tuple[float, float]] = {}  # per query: (D, s) from all its pairs
    for key, pairs in runs.items():
        d = [math.log(p / r) for r, p in pairs]
        noise[key] = (statistics.median(d), robust_spread(d) if robust else statistics.stdev(d))

    def settled_at(key: Key, n: int) -> bool:
        diff, spread = noise[key]
        half = z * spread / math.sqrt(n)
        return half < unstable or (abs(diff) >= min_effect and abs(diff) - half > MARGIN_LOG)

    return needs_by(runs, rule, settled_at)


def apart(block: Sequence[tuple[float, float]], gap: float) -> bool:
    """Whether one of a block's runs lies apart from the rest: the gap between the highest (or
    lowest) log time and the next, over the span of all of them (Dixon's ratio), above `gap`.
    A function of the times alone, whichever side ran which: under no change, leaving such
    blocks out keeps the remaining blocks' arrangements equally likely."""
    logs = sorted(math.log(t) for pair in block for t in pair)
    span = logs[-1] - logs[0]
    return span > 0 and max(logs[-1] - logs[-2], logs[1] - logs[0]) / span > gap


def without_apart(pairs: Sequence[tuple[float, float]], gap: float) -> list[tuple[float, float]]:
    """The pairs of the whole blocks in which no run lies apart, and a last half block."""
    out: list[tuple[float, float]] = []
    for start in range(0, len(pairs), PAIRS_PER_BLOCK):
        block = pairs[start : start + PAIRS_PER_BLOCK]
        if len(block) < PAIRS_PER_BLOCK or not apart(block, gap):
            out.extend(block)
    return out


def dropping_needs(
    runs: dict[Key, list[tuple[float, float]]], rule: StopRule, gap: float, judge: InterimJudge
) -> list[Need]:
    """`needs` for the statistic over the blocks that `apart` keeps; the runs of the blocks
    left out still cost their time. One process set: leaving a block out would shift the
    sets of the blocks after it, and whether a look settles does not depend on them."""

    def settled_at(key: Key, n: int) -> bool:
        kept = without_apart(runs[key][:n], gap)
        if len(kept) < rule.min_runs:
            return False
        stats = judge.stats(samples_of(side_times(kept), 1))
        return settles(stats, rule.min_effect, UNSTABLE_THRESHOLD)

    return needs_by(runs, rule, settled_at)


def window_thresholds(
    runs: dict[Key, list[tuple[float, float]]], judge: InterimJudge, width: int = WINDOW
) -> list[tuple[int, float, int]]:
    """Per window of `width` runs (1 to width, then on): its first run, the median T on the log
    scale over the queries that have it, and how many those are."""
    out = []
    longest = max((len(pairs) for pairs in runs.values()), default=0)
    for start in range(0, longest - width + 1, width):
        values = []
        for pairs in runs.values():
            if len(pairs) >= start + width:
                stats = judge.stats(samples_of(side_times(pairs[start : start + width]), 1))
                if stats is not None and stats.threshold_log is not None:
                    values.append(stats.threshold_log)
        if values:
            out.append((start + 1, statistics.median(values), len(values)))
    return out


def needs_by(
    runs: dict[Key, list[tuple[float, float]]],
    rule: StopRule,
    settled_at: Callable[[Key, int], bool],
) -> list[Need]:
    """Per query, the first look of `rule` at which `settled_at(key, n)` holds."""
    out = []
    for key, pairs in runs.items():
        found: tuple[int, float] | None = None
        for n in range(rule.min_runs, min(len(pairs), rule.extended_runs) + 1):
            if is_checkpoint(rule, n) and settled_at(key, n):
                found = (n, sum(r + p for r, p in pairs[:n]))
                break
        if found is None and len(pairs) < rule.extended_runs:
            # The source stopped this query early (its time limit): settling it costs at least
            # all its runs, and giving it up stays open to the oracle.
            found = (len(pairs), sum(r + p for r, p in pairs))
        out.append(
            Need(
                key,
                found[0] if found else None,
                found[1] if found else None,
                sum(r + p for r, p in pairs[: rule.min_runs]),
                sum(r + p for r, p in pairs[:FIXED]),
                settled_at(key, FIXED),
            )
        )
    return out


def shrinkage(
    runs: dict[Key, list[tuple[float, float]]], sets: int, judge: InterimJudge
) -> dict[int, list[float]]:
    """Per run count n, over the queries with LAST runs: T_n / (T_LAST * sqrt(LAST / n)), T on
    the log scale."""
    ratios: dict[int, list[float]] = {n: [] for n in SHRINK_COUNTS}
    for pairs in runs.values():
        if len(pairs) < LAST:
            continue
        t = {}
        for n in (*SHRINK_COUNTS, LAST):
            stats = judge.stats(samples_of(side_times(pairs[:n]), sets))
            t[n] = stats.threshold_log if stats is not None else None
        last = t[LAST]
        if not last:
            continue
        for n in SHRINK_COUNTS:
            value = t[n]
            if value is not None and math.isfinite(value):
                ratios[n].append(value / (last * math.sqrt(LAST / n)))
    return ratios


def fixed_counts(
    runs: dict[Key, list[tuple[float, float]]], sets: int, judge: InterimJudge
) -> list[tuple[int, int, float]]:
    """Per run count n of FIXED_COUNTS: the queries that end unstable when every query gets
    its first n runs (a query with fewer runs keeps all it has), and the client time of those
    runs over that of the first FIXED runs."""
    fixed = sum(sum(r + p for r, p in pairs[:FIXED]) for pairs in runs.values())
    out = []
    for n in FIXED_COUNTS:
        unstable = 0
        for pairs in runs.values():
            stats = judge.stats(samples_of(side_times(pairs[:n]), sets))
            unstable += not settles(stats, MIN_EFFECT, UNSTABLE_THRESHOLD)
        spent = sum(sum(r + p for r, p in pairs[:n]) for pairs in runs.values())
        out.append((n, unstable, spent / fixed))
    return out


def least_time(queries: list[Need], share: float) -> tuple[float, list[Need]]:
    """Client time of the oracle, and the queries it leaves unstable at the first look."""
    allowed = math.floor(share * len(queries))
    hopeless = [q for q in queries if q.runs is None]
    hopeful = sorted(
        (q for q in queries if q.runs is not None),
        key=lambda q: (q.seconds or 0.0) - q.floor_seconds,
        reverse=True,
    )
    given_up = hopeless + hopeful[: max(allowed - len(hopeless), 0)]
    spent = sum(
        q.floor_seconds if q in given_up else (q.seconds or q.floor_seconds) for q in queries
    )
    return spent, given_up


def reason_kind(reason: str) -> str:
    """A stop reason without its figures."""
    if "out of reach" in reason:
        return "futility (rule 6)"
    return reason.split(":")[0].split(" (")[0]


def rule_gap(
    queries: list[Need],
    given_up: list[Need],
    runs: dict[Key, list[tuple[float, float]]],
    stops: dict[Key, int],
    reasons: dict[Key, str],
) -> dict[str, tuple[int, float]]:
    """Per kind of stop reason: the rule's queries and their client time above the oracle's."""
    oracle = {
        q.key: q.floor_seconds if q in given_up else (q.seconds or q.floor_seconds) for q in queries
    }
    gap: dict[str, tuple[int, float]] = {}
    for key, pairs in runs.items():
        spent = sum(r + p for r, p in pairs[: stops[key]])
        kind = reason_kind(reasons[key])
        count, seconds = gap.get(kind, (0, 0.0))
        gap[kind] = (count + 1, seconds + spent - oracle[key])
    return gap


def print_shrinkage(ratios: dict[int, list[float]]) -> None:
    print(f"T at n runs over T at {LAST} scaled by sqrt({LAST} / n): median (10th-90th percentile)")
    for n, values in ratios.items():
        if values:
            q = np.quantile(values, [0.5, 0.1, 0.9])
            print(f"  {n:2d} runs: {q[0]:.2f} ({q[1]:.2f}-{q[2]:.2f}) over {len(values)} queries")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run", type=Path, help="a fixed run with at least 40 runs a side")
    parser.add_argument("--unstable-share", type=float, default=UNSTABLE_SHARE)
    parser.add_argument("--top", type=int, default=10, help="list the N most costly queries")
    parser.add_argument(
        "--drop-outlier-blocks",
        type=float,
        nargs="+",
        default=[],
        metavar="GAP",
        help="the oracle without the blocks where a run lies apart by Dixon's ratio above GAP",
    )
    args = parser.parse_args()
    runs = run_pairs(args.run)
    sets = int((read_manifest(args.run).get("options") or {}).get("processes") or 1)
    rule = StopRule(fdr_q=FDR_Q, queries=len(runs))
    judge = InterimJudge(Thresholds(min_effect=MIN_EFFECT))
    try:
        queries = needs(runs, rule, sets, judge)
        ratios = shrinkage(runs, sets, judge)
        counts = fixed_counts(runs, sets, judge)
        gaps = args.drop_outlier_blocks
        dropping = [(gap, dropping_needs(runs, rule, gap, judge)) for gap in gaps]
        windows = window_thresholds(runs, judge) if gaps else []
    finally:
        judge.close()
    fixed = sum(q.fixed_seconds for q in queries)
    floor = sum(q.floor_seconds for q in queries)
    spent, given_up = least_time(queries, args.unstable_share)
    print(f"{len(queries)} queries of {args.run}, {sets} process set(s)")
    print(f"fixed {FIXED}: {sum(not q.fixed_settles for q in queries)} unstable")
    print(f"first look alone ({rule.min_runs} runs a query): {floor / fixed:.2f} of fixed {FIXED}")
    print(
        f"least time leaving at most {args.unstable_share:.0%} unstable: {spent / fixed:.2f} of "
        f"fixed {FIXED} (bar <= 0.6); unstable {len(given_up)}, of them "
        f"{sum(q.runs is None for q in given_up)} with T >= {UNSTABLE_THRESHOLD:.0%} at every "
        f"look to {rule.extended_runs} runs"
    )
    hopeless = [f"{q.key[0]} #{q.key[1]}" for q in queries if q.runs is None]
    if hopeless:
        print(f"  T >= {UNSTABLE_THRESHOLD:.0%} at every look: " + ", ".join(hopeless))
    reasons: dict[Key, str] = {}
    stops, _ = replay(rule, runs, Thresholds(min_effect=MIN_EFFECT), sets, reasons)
    rule_seconds = sum(sum(r + p for r, p in runs[k][: stops[k]]) for k in runs)
    print(f"the default rule replayed: {rule_seconds / fixed:.2f} of fixed {FIXED}; above the "
          "oracle, by why it stopped a query:")  # fmt: skip
    gap = rule_gap(queries, given_up, runs, stops, reasons)
    for kind, (count, seconds) in sorted(gap.items(), key=lambda item: -item[1][1]):
        print(f"  {seconds / fixed:+.3f} over {count} queries: {kind}")
    costly = sorted(queries, key=lambda q: (q.seconds or 0.0) - q.floor_seconds, reverse=True)
    for q in costly[: args.top]:
        left = " (left unstable)" if q in given_up else ""
        runs_text = "never" if q.runs is None else f"{q.runs} runs"
        extra = ((q.seconds or q.floor_seconds) - q.floor_seconds) / fixed
        print(f"  {q.key[0]} #{q.key[1]}: settles at {runs_text}, +{extra:.3f}{left}")
    print_shrinkage(ratios)
    print("a fixed run count for every query: unstable queries, time over fixed 15")
    for n, unstable, time_ratio in counts:
        print(f"  {n:2d} runs: {unstable} unstable ({unstable / len(queries):.1%}), "
              f"{time_ratio:.2f} of fixed {FIXED}")  # fmt: skip
    for robust in (False, True):
        ideal, _ = least_time(known_noise_needs(runs, rule, robust), args.unstable_share)
        known = "robust spread (1.4826 x MAD)" if robust else "standard deviation"
        print(f"a statistic knowing each query's {known} of ln(P / R) in advance: "
              f"{ideal / fixed:.2f} of fixed {FIXED}")  # fmt: skip
    blocks = [
        pairs[start : start + PAIRS_PER_BLOCK]
        for pairs in runs.values()
        for start in range(0, len(pairs) - 1, PAIRS_PER_BLOCK)
    ]
    for gap, found in dropping:
        share = sum(apart(block, gap) for block in blocks) / max(len(blocks), 1)
        spent_apart, left_apart = least_time(found, args.unstable_share)
        print(f"without the blocks where a run lies apart (Dixon's ratio above {gap:g}: "
              f"{share:.1%} of blocks): {spent_apart / fixed:.2f} of fixed {FIXED}, "
              f"{len(left_apart)} unstable, {sum(q.runs == rule.min_runs for q in found)} settled "
              f"at the first look ({sum(q.runs == rule.min_runs for q in queries)} with "
              "every block)")  # fmt: skip
    for first, median, count in windows:
        last_run = first + WINDOW - 1
        print(f"  runs {first}-{last_run}: median T {math.expm1(median):.1%} over {count} queries")


if __name__ == "__main__":
    main()
