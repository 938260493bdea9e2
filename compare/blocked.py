"""The paired statistic (the default method): a rank test within the blocks of a query's
runs, its Hodges-Lehmann estimate of the change and the confidence interval that inverts the
test (docs/method.md, "The verdict statistic").

Runs come in blocks of two pairs on one server process set (runner/schedule.py): four runs,
two a side, in the order R P R P or P R P R. Under "no change" the two sides are exchangeable
within a block, so any 2 of its 4 runs are equally likely to be the patched ones: 6
arrangements a block (2 for a block of one pair), 6^3 x 2 = 432 for 7 runs a side. The
statistic W counts, over the blocks, the patched runs that are slower than a reference run of
the same block (ties count half): its null distribution depends only on the block counts, so
it is exact, deterministic and tabulated once per structure. The smallest two-sided p-value
at 7 runs a side is 2/432, below the 1% level.

The estimate D is the median of the within-block cross differences ln(patched) -
ln(reference) (4 a block, 1 a one-pair block); the 99% interval is a pair of their order
statistics, at ranks the null distribution gives. D always lies inside it. T is the distance
on the log scale from D to the end of the interval nearer 0, so |D| >= T holds exactly when
the interval excludes 0. The test's null is not "no change" but "a change of at most MARGIN"
on D's side: W counts the cross differences beyond that margin, and the query is significant
exactly when the interval lies beyond it (p <= 1%).

compare/blocked.sql computes the same for every query of a run in one chDB query; this module
is its reference (tests compare them) and the stop rule's look, at microseconds a query.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import accumulate, chain, count
from typing import TypeVar

import numpy as np

from compare.engine import SqlEngine

K = TypeVar("K", bound=Hashable)

# Two-sided level of the test and of the interval: a query with no real change is called
# significant in at most 1% of runs, as ClickHouse's 0.99 quantile.
ALPHA = 0.01
# The change the test must rule out, on D's side: a shift of 2% or less is not evidence of a
# change. Small true changes whose D a noisy run inflated past the minimum effect were called
# changed with an interval that only just excluded 0 or 1%, more often over the stop rule's
# repeated looks and in noisy hours: injected into real noise (bench/inject_change.py), a 2%
# margin removes most flags of true changes below 2% and every wrong direction at the noise
# of real runs, for about 1 in 100 true changes >= 10% found later or not at all
# (docs/method.md, "The verdict statistic").
MARGIN = 0.02
MARGIN_LOG = math.log1p(MARGIN)
# How verdict reasons state the test (the pooled method's is "|D| >= T").
SIGNIFICANT = f"99% CI beyond ±{MARGIN:.0%}"
NOT_SIGNIFICANT = f"99% CI not beyond ±{MARGIN:.0%}, not significant"
# Counts of W in one block of two pairs over its 6 arrangements: how many of the 4 (patched,
# reference) cross pairs have the patched run slower (0..4), and in a one-pair block (0..1).
FULL_BLOCK = (1, 1, 2, 1, 1)
HALF_BLOCK = (1, 1)
PAIRS_PER_BLOCK = 2

Pair = tuple[float, float]  # (reference, patched) client times of one run number


@dataclass(frozen=True)
class Structure:
    """The blocks of a query: of two pairs (full) and of one (the last pair of an odd count,
    or a block a failed run cut short)."""

    full: int
    half: int


@dataclass(frozen=True)
class BlockedStats:
    pairs: int
    diff_log: float  # D on the log scale: the Hodges-Lehmann estimate
    ci_low_log: float  # -inf when the run count cannot reach the level
    ci_high_log: float  # +inf likewise
    p_value: float
    margin_log: float = MARGIN_LOG  # the test's margin on the log scale

    @property
    def significant(self) -> bool:
        """The interval lies beyond the margin: the same as p <= ALPHA."""
        return self.ci_low_log > self.margin_log or self.ci_high_log < -self.margin_log

    @property
    def decidable(self) -> bool:
        """Whether this many runs can be significant at all."""
        return math.isfinite(self.ci_low_log)

    @property
    def threshold_log(self) -> float:
        """T on the log scale: from D to the interval's end nearer 0."""
        if self.diff_log >= 0:
            return self.diff_log - self.ci_low_log
        return self.ci_high_log - self.diff_log

    @property
    def diff(self) -> float:
        return math.expm1(self.diff_log)

    @property
    def threshold(self) -> float:
        """T as a change of the same sign as D, so |D| >= T here exactly when it holds on the
        log scale: a speedup's T is 1 - exp(-t), a slowdown's exp(t) - 1."""
        return printed_threshold(self.diff_log, self.threshold_log)


def printed_threshold(diff_log: float, threshold_log: float) -> float:
    if not math.isfinite(threshold_log):
        return math.inf
    return abs(math.expm1(math.copysign(threshold_log, diff_log if diff_log else 1.0)))


@cache
def null_counts(structure: Structure) -> tuple[int, ...]:
    """How many of the arrangements give W = 0, 1, ..., 4 full + half. In Python's integers:
    there are 6^full 2^half arrangements, past int64 from 25 blocks (50 pairs) on."""
    counts = [1]
    for block, times in ((FULL_BLOCK, structure.full), (HALF_BLOCK, structure.half)):
        for _ in range(times):
            counts = convolve(counts, block)
    return tuple(counts)


def convolve(counts: Sequence[int], block: Sequence[int]) -> list[int]:
    """The counts of a sum of two independent statistics from the counts of each."""
    out = [0] * (len(counts) + len(block) - 1)
    for i, c in enumerate(counts):
        for j, b in enumerate(block):
            out[i + j] += c * b
    return out


@cache
def critical_rank(structure: Structure, alpha: float = ALPHA) -> int:
    """The largest k with P(W <= k - 1) <= alpha / 2: the interval is the k-th smallest and
    the k-th largest cross difference; 0 when no interval reaches the level."""
    return rank_for_level(null_counts(structure), alpha)


def rank_for_level(counts: Sequence[int], alpha: float = ALPHA) -> int:
    """The largest k with P(W <= k - 1) <= alpha / 2 for a null distribution given as counts
    of W = 0, 1, ...; 0 when none reaches the level."""
    total = sum(counts)
    k, tail = 0, 0
    while k < len(counts) and (tail + counts[k]) / total <= alpha / 2:
        tail += counts[k]
        k += 1
    return k


def test_size(structure: Structure, alpha: float = ALPHA) -> float:
    """The share of arrangements the test calls significant: 2 P(W <= k - 1)."""
    counts = null_counts(structure)
    return 2 * sum(counts[: critical_rank(structure, alpha)]) / sum(counts)


@cache
def smallest_p_value(structure: Structure) -> float:
    counts = null_counts(structure)
    return min(1.0, 2 * counts[0] / sum(counts))


def p_value(structure: Structure, w: float, slower: bool) -> float:
    """Two-sided against the margin on D's side, conservative with ties (W a half-integer):
    for a slowdown P(W >= floor(w)), for a speedup P(W <= ceil(w)), doubled. D inside the
    margin gives at least 1/2 before doubling, so such a query is never significant."""
    cdf = null_cdf(structure)
    if slower:
        tail = 1.0 if math.floor(w) == 0 else 1 - cdf[math.floor(w) - 1]
    else:
        tail = cdf[math.ceil(w)]
    return min(1.0, 2 * tail)


@cache
def null_cdf(structure: Structure) -> tuple[float, ...]:
    """P(W <= w) for w = 0, 1, ...: the same doubles blocked.sql gets, so that both give
    bit-identical p-values."""
    counts = null_counts(structure)
    total = sum(counts)
    return tuple(c / total for c in accumulate(counts))  # int / int: correctly rounded


def structure_of(pairs: int) -> Structure:
    return Structure(pairs // PAIRS_PER_BLOCK, pairs % PAIRS_PER_BLOCK)


def cross_differences(pairs: Sequence[Pair]) -> np.ndarray:
    """ln(patched) - ln(reference) for every patched and reference run of the same block."""
    blocks = _cross_by_block(pairs)
    return np.array([v for block in blocks for v in block], dtype=np.float64)


def blocked_stats(
    pairs: Sequence[Pair], alpha: float = ALPHA, margin_log: float = MARGIN_LOG
) -> BlockedStats:
    """The statistic of one query from its pairs in run order (every time above 0); the test
    against a change of `margin_log` on D's side (0: against no change)."""
    if not pairs:
        raise ValueError("no pairs")
    structure = structure_of(len(pairs))
    cross = np.sort(cross_differences(pairs))
    diff = float(np.median(cross))
    k = critical_rank(structure, alpha)
    low = float(cross[k - 1]) if k else -math.inf
    high = float(cross[len(cross) - k]) if k else math.inf
    edge = margin_log if diff >= 0 else -margin_log
    w = float(np.count_nonzero(cross > edge) + 0.5 * np.count_nonzero(cross == edge))
    p = p_value(structure, w, diff >= 0)
    return BlockedStats(len(pairs), diff, low, high, p, margin_log)


# A process set's own D counts once it has a whole block of pairs: 6 pairs give the two sets
# 4 and 2, so a change must show on both from the first look on.
MIN_PROCESS_PAIRS = 2


@dataclass(frozen=True)
class BatchStats:
    """BlockedStats and the D of each process set with enough pairs (empty below two)."""

    stats: BlockedStats
    process_diffs: tuple[float, ...]


class Blocked:
    """blocked.sql over many series in one chDB session."""

    def __init__(self, engine: SqlEngine) -> None:
        self._engine = engine
        self._files = count()

    def statistics(
        self, series: Mapping[K, tuple[Sequence[Pair], Sequence[int]]]
    ) -> dict[K, BatchStats]:
        """Per series, its pairs in run order (every time above 0) and each pair's process
        set (empty: one set)."""
        keys = [k for k in series if series[k][0]]
        if not keys:
            return {}
        number = next(self._files)
        pairs_file = self._engine.scratch / f"blocked-pairs-{number}.bin"
        structures_file = self._engine.scratch / f"blocked-structures-{number}.tsv"
        structures = {structure_of(len(series[key][0])) for key in keys}
        _pairs_array(keys, series).tofile(pairs_file)
        table = ["full\thalf\tk\tcdf\n"]
        for s in sorted(structures, key=lambda s: (s.full, s.half)):
            cdf = "[" + ",".join(repr(c) for c in null_cdf(s)) + "]"
            table.append(f"{s.full}\t{s.half}\t{critical_rank(s)}\t{cdf}\n")
        structures_file.write_text("".join(table), encoding="utf-8")
        params = {
            "pairs": str(pairs_file),
            "structures": str(structures_file),
            "margin": repr(MARGIN_LOG),
        }
        rows = self._engine.rows("blocked.sql", params)
        pairs_file.unlink()
        structures_file.unlink()
        return {keys[int(row[0])]: _parse(row) for row in rows}


# blocked.sql's input, one row a pair, in ClickHouse's RowBinary layout: the times go in as
# the doubles they are, never through text.
PAIR_RECORD = np.dtype(
    [
        ("series", "<u8"),
        ("position", "<u4"),
        ("process", "<u4"),
        ("reference", "<f8"),
        ("patched", "<f8"),
    ]
)


def _pairs_array(
    keys: Sequence[K], series: Mapping[K, tuple[Sequence[Pair], Sequence[int]]]
) -> np.ndarray:
    """Built from flat lists in one go: a numpy call per series cost more than the query."""
    sizes = np.array([len(series[key][0]) for key in keys], dtype=np.int64)
    sets: list[int] = []
    for key, size in zip(keys, sizes.tolist(), strict=True):
        processes = series[key][1]
        sets.extend(processes if len(processes) == size else [0] * size)
    total = int(sizes.sum())
    records = np.zeros(total, dtype=PAIR_RECORD)
    starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
    records["series"] = np.repeat(np.arange(len(keys)), sizes)
    records["position"] = np.arange(len(records)) - starts
    records["process"] = sets
    times = chain.from_iterable(chain.from_iterable(series[key][0] for key in keys))
    flat = np.fromiter(times, dtype=np.float64, count=2 * total).reshape(-1, 2)
    records["reference"] = flat[:, 0]
    records["patched"] = flat[:, 1]
    return records


def _parse(row: list[str]) -> BatchStats:
    stats = BlockedStats(
        pairs=int(row[1]),
        diff_log=float(row[2]),
        ci_low_log=float(row[3]),
        ci_high_log=float(row[4]),
        p_value=float(row[5]),
    )
    sets = [
        (int(n), float(median)) for _, n, median in (part.split(",") for part in _tuples(row[6]))
    ]
    usable = [math.expm1(median) for n, median in sets if n >= MIN_PROCESS_PAIRS]
    return BatchStats(stats, tuple(usable) if len(usable) >= 2 else ())


def _tuples(text: str) -> list[str]:
    """ "[(0,4,0.1),(1,3,0.2)]" -> ["0,4,0.1", "1,3,0.2"]."""
    inner = text.strip()[1:-1]
    return [part.strip("()") for part in inner.split("),(")] if inner else []


def process_diffs(pairs: Sequence[Pair], processes: Sequence[int]) -> tuple[float, ...]:
    """D of each process set on its own blocks, in set order; empty unless at least two sets
    have MIN_PROCESS_PAIRS pairs (the numpy twin of blocked.sql's `processes`)."""
    if len(processes) != len(pairs):
        return ()
    by_set: dict[int, list[float]] = {}
    counts: dict[int, int] = {}
    cross = _cross_by_block(pairs)
    for block, values in enumerate(cross):
        number = processes[block * PAIRS_PER_BLOCK]
        by_set.setdefault(number, []).extend(values)
        counts[number] = counts.get(number, 0) + min(
            PAIRS_PER_BLOCK, len(pairs) - block * PAIRS_PER_BLOCK
        )
    usable = [
        math.expm1(float(np.median(by_set[n])))
        for n in sorted(by_set)
        if counts[n] >= MIN_PROCESS_PAIRS
    ]
    return tuple(usable) if len(usable) >= 2 else ()


def _cross_by_block(pairs: Sequence[Pair]) -> list[list[float]]:
    logs = np.log(np.asarray(pairs, dtype=np.float64).reshape(-1, 2))
    return [
        (block[:, 1][:, None] - block[:, 0][None, :]).ravel().tolist()
        for block in (
            logs[start : start + PAIRS_PER_BLOCK] for start in range(0, len(logs), PAIRS_PER_BLOCK)
        )
    ]
