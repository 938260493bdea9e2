"""How much the run order and the statistic that matches it could narrow a query's estimate,
measured on real executions without running anything.

Input: a run with many runs a side (bench/bench_known_change.py's 41-run truth). Per query its
executions, both sides, are put in time order, and each execution's ln(client time) minus the
median of its side and server process is kept: what remains is the machine's noise as that
query saw it, in the order it happened, with the change and the process offsets taken out.
Windows of 2n consecutive executions are then labelled afresh, as if the order had been:

  ABBA       pairs R P, P R, P R, R P: blocks of two pairs R P P R and the mirror P R R P,
             chperf's order before this study; compare/blocked.py's statistic (W over the
             four cross pairs of a block).
  chperf     chperf's order (runner/schedule.py): the sides strictly alternate within a
             block (R P R P or P R P R); W as above (one of a block's cross pairs is three
             executions apart).
  chperf W'  the same order with W', which counts only the three cross pairs of a block
             that ran back to back, its null distribution tabulated by enumerating the 24
             rank orders of a block's runs.

First the residuals' median autocorrelation at 1, 2, 4 and 8 executions apart: how far the
machine's speed carries from one run to the next. No label has any effect on these residuals,
so every window is an A/A. Printed per design and
pair count: the median T, the share with T >= 10%, the root mean square and median of |D|
(the estimate's real error), and the share of windows whose 99% interval excludes 0 (an exact
test under its own assumption gives at most 1%) and lies beyond ±1% (the verdict's margin).

Usage: .venv/bin/python bench/run_order.py RUN [--pairs N [N ...]]
"""

from __future__ import annotations

import argparse
import collections
import itertools
import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# Run as a script (`python bench/<name>.py`): the repository root holds the `bench` package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np

from artifacts.tables import REFERENCE, RUNS
from artifacts.tsv import read_table
from bench.runs import Key
from compare.blocked import blocked_stats, convolve, rank_for_level
from runner.schedule import reference_first

UNSTABLE = 0.10
LAGS = (1, 2, 4, 8)
# Within a block R P R P (positions 0-3, patched at 1 and 3): the cross pairs (patched,
# reference) that ran back to back; the same in the mirror P R P R.
ADJACENT = ((1, 0), (1, 2), (3, 2))
BLOCK = 4


def residual_series(rows: Sequence[tuple[float, str, int, float]]) -> np.ndarray:
    """(start time, side, process, client time) of one query's executions -> ln(time) in time
    order, minus the median of its side and process."""
    ordered = sorted(rows)
    logs = np.log([time for _, _, _, time in ordered])
    groups: dict[tuple[str, int], list[int]] = collections.defaultdict(list)
    for i, (_, side, process, _) in enumerate(ordered):
        groups[(side, process)].append(i)
    out = logs.copy()
    for members in groups.values():
        out[members] -= float(np.median(logs[members]))
    return out


def abba_patched(slots: int) -> list[bool]:
    """Whether each execution of the ABBA order (R P P R P R R P ...) is the patched one."""
    return [(i % 2 == 1) == ((i // 2) % 4 in (0, 3)) for i in range(slots)]


def chperf_patched(slots: int) -> list[bool]:
    """Whether each execution of chperf's order is the patched one."""
    return [(i % 2 == 1) == reference_first(i // 2) for i in range(slots)]


@cache
def adjacent_block_null() -> tuple[int, ...]:
    """How many of a block's 24 rank orders give W' = 0, 1, 2, 3."""
    counts = collections.Counter(
        sum(order[p] > order[r] for p, r in ADJACENT)
        for order in itertools.permutations(range(BLOCK))
    )
    return tuple(counts[w] for w in range(len(ADJACENT) + 1))


@cache
def adjacent_null(blocks: int, pairs: int) -> tuple[int, ...]:
    """W' over `blocks` blocks of four and `pairs` lone pairs (one cross pair each)."""
    counts: list[int] = [1]
    for block in (adjacent_block_null(),) * blocks + ((1, 1),) * pairs:
        counts = convolve(counts, block)
    return tuple(counts)


@dataclass(frozen=True)
class Estimate:
    diff_log: float
    low_log: float  # the 99% interval; -inf and inf when the window cannot reach the level
    high_log: float

    @property
    def threshold_log(self) -> float:
        """T: from D to the interval's end nearer 0."""
        return self.diff_log - self.low_log if self.diff_log >= 0 else self.high_log - self.diff_log

    def significant(self, margin_log: float = 0.0) -> bool:
        """The interval lies beyond the margin (compare/blocked.py's test with that margin)."""
        return self.low_log > margin_log or self.high_log < -margin_log


def adjacent_stats(logs: Sequence[float]) -> Estimate:
    """W' and its interval for ln(times) of 2n executions in chperf's order."""
    patched = chperf_patched(len(logs))
    cross: list[float] = []
    whole = len(logs) - len(logs) % BLOCK
    for start in range(0, whole, BLOCK):
        for i in range(start, start + BLOCK - 1):  # the three back-to-back cross pairs
            p, r = (i, i + 1) if patched[i] else (i + 1, i)
            cross.append(logs[p] - logs[r])
    if len(logs) > whole:  # a lone pair
        p, r = (whole, whole + 1) if patched[whole] else (whole + 1, whole)
        cross.append(logs[p] - logs[r])
    ordered = sorted(cross)
    diff = statistics.median(ordered)
    k = rank_for_level(adjacent_null(whole // BLOCK, (len(logs) - whole) // 2))
    if k == 0:
        return Estimate(diff, -math.inf, math.inf)
    return Estimate(diff, ordered[k - 1], ordered[len(ordered) - k])


def blocked_in_order(logs: Sequence[float], patched: Sequence[bool]) -> Estimate:
    """compare/blocked.py's statistic (W over a block's four cross pairs) on executions in
    time order, each pair of executions one run."""
    times = [math.exp(v) for v in logs]
    pairs = [
        (times[i + 1], times[i]) if patched[i] else (times[i], times[i + 1])
        for i in range(0, len(logs) - 1, 2)
    ]
    s = blocked_stats(pairs, margin_log=0.0)
    return Estimate(s.diff_log, s.ci_low_log, s.ci_high_log)


def abba_stats(logs: Sequence[float]) -> Estimate:
    return blocked_in_order(logs, abba_patched(len(logs)))


def chperf_stats(logs: Sequence[float]) -> Estimate:
    return blocked_in_order(logs, chperf_patched(len(logs)))


DESIGNS = {"ABBA": abba_stats, "chperf": chperf_stats, "chperf W'": adjacent_stats}


def median_autocorrelation(series: Sequence[np.ndarray], lag: int) -> float:
    """Over the queries with at least 4 x lag executions."""
    found = [float(np.corrcoef(s[:-lag], s[lag:])[0, 1]) for s in series if len(s) >= 4 * lag]
    return statistics.median(found) if found else math.nan


def windows(series: np.ndarray, pairs: int) -> list[list[float]]:
    """Non-overlapping windows of 2 x pairs executions, from the first on."""
    size = 2 * pairs
    return [list(series[s : s + size]) for s in range(0, len(series) - size + 1, size)]


# The order's effect on an interval that must clear a small shift (the verdict's margin is 2%).
ONE_PERCENT = math.log1p(0.01)


def summarize(estimates: Sequence[Estimate]) -> str:
    diffs = np.array([e.diff_log for e in estimates])
    thresholds = np.array([e.threshold_log for e in estimates])
    return (
        f"median T {math.expm1(float(np.median(thresholds))):6.1%}, "
        f"T >= 10% {np.mean(thresholds >= math.log1p(UNSTABLE)):4.0%}, "
        f"rms D {math.sqrt(float(np.mean(diffs**2))):.4f}, "
        f"median |D| {float(np.median(np.abs(diffs))):.4f}, "
        f"significant {np.mean([e.significant() for e in estimates]):5.1%}, "
        f"beyond ±1% {np.mean([e.significant(ONE_PERCENT) for e in estimates]):5.1%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a run with many runs a side")
    parser.add_argument("--pairs", type=int, nargs="+", default=[7, 8, 12, 16, 20])
    args = parser.parse_args()
    rows: dict[Key, list[tuple[float, str, int, float]]] = collections.defaultdict(list)
    for r in read_table(args.run, RUNS).rows:
        if r.client_time > 0 and r.start_time > 0:
            rows[(r.test, r.query_index)].append((r.start_time, r.server, r.process, r.client_time))
    series = [residual_series(v) for v in rows.values()]
    sides = {side for v in rows.values() for _, side, _, _ in v}
    if REFERENCE not in sides or len(sides) != 2 or not series:
        raise SystemExit(f"{args.run}: needs runs of both sides with start times")
    print(f"{len(series)} queries of {args.run}, executions a query: "
          f"{min(map(len, series))}-{max(map(len, series))}")  # fmt: skip
    print("median autocorrelation of the residuals, executions apart: " + ", ".join(
        f"{lag}: {median_autocorrelation(series, lag):+.2f}" for lag in LAGS))  # fmt: skip
    for pairs in args.pairs:
        chunks = [w for s in series for w in windows(s, pairs)]
        if not chunks:
            print(f"{pairs} pairs: no query has {2 * pairs} executions")
            continue
        for name, stats in DESIGNS.items():
            print(f"{pairs:2d} pairs, {name:12s} ({len(chunks)} windows): "
                  + summarize([stats(w) for w in chunks]))  # fmt: skip


if __name__ == "__main__":
    main()
