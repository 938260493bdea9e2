"""The statistics of each query's client times under the chosen method: pooled
(compare/randomization.py, ClickHouse's) or paired (compare/paired.py, the default)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Hashable, Mapping
from dataclasses import replace
from typing import TypeVar

from compare.blocked import MARGIN_LOG, Blocked, BlockedStats, blocked_stats
from compare.blocked import process_diffs as block_process_diffs
from compare.engine import SqlEngine
from compare.paired import PAIRED
from compare.randomization import Randomization, Samples, SeriesStats

# The paired method needs as many pairs as the pooled one needs runs a side (verdict.MIN_RUNS);
# below 6 pairs it cannot reach the 1% level at all, and says so (BlockedStats.decidable).
MIN_PAIRS = 3

K = TypeVar("K", bound=Hashable)


class QueryStatistics:
    """Both methods in one chDB session."""

    def __init__(self, engine: SqlEngine, method: str = PAIRED) -> None:
        self.method = method
        self.randomization = Randomization(engine)
        self.blocked = Blocked(engine)

    def statistics(self, series: Mapping[K, Samples]) -> dict[K, SeriesStats]:
        """Pooled statistics for every series; with the paired method, the blocked rank
        statistic gives D, T, the interval and the p-value of each series with at least
        MIN_PAIRS usable pairs (the pooled split distribution is then not computed: only the
        medians are kept)."""
        if self.method != PAIRED:
            return _with_process_diffs(self.randomization.statistics(series), series)
        usable = {key: usable_pairs(s) for key, s in series.items()}
        usable = {key: found for key, found in usable.items() if len(found[0]) >= MIN_PAIRS}
        stats = self.randomization.statistics(
            {key: s for key, s in series.items() if key not in usable}
        )
        for key, found in self.blocked.statistics(usable).items():
            stats[key] = paired_series_stats(series[key], found.stats, found.process_diffs)
        return {key: stats[key] for key in series if key in stats}


def usable_pairs(samples: Samples) -> tuple[list[tuple[float, float]], list[int]]:
    """The pairs with both times above 0, and their process sets (empty: one set)."""
    if not samples.reference or not samples.patched:
        return [], []
    with_sets = len(samples.processes) == len(samples.pairs)
    if samples.pairs and min(map(min, samples.pairs)) > 0:  # the usual case, at C speed
        return list(samples.pairs), (list(samples.processes) if with_sets else [])
    kept = [
        (pair, samples.processes[i] if with_sets else 0)
        for i, pair in enumerate(samples.pairs)
        if min(pair) > 0
    ]
    return [p for p, _ in kept], ([n for _, n in kept] if with_sets else [])


def paired_series_stats(
    samples: Samples, found: BlockedStats, process_diffs: tuple[float, ...]
) -> SeriesStats:
    """Too few pairs to reach the level: no T and no interval (they would be infinite)."""
    reference_median = float(statistics.median(samples.reference))
    decidable = found.decidable
    return SeriesStats(
        runs_reference=len(samples.reference),
        runs_patched=len(samples.patched),
        reference_median=reference_median,
        patched_median=float(statistics.median(samples.patched)),
        diff=found.diff,
        threshold=found.threshold if decidable else None,
        threshold_abs=found.threshold * reference_median if decidable else 0.0,
        p_value=found.p_value,
        exact=True,
        method=PAIRED,
        pairs=found.pairs,
        paired_significant=found.significant,
        paired_interval=(
            (math.exp(found.ci_low_log), math.exp(found.ci_high_log)) if decidable else None
        ),
        process_diffs=process_diffs,
        threshold_log=found.threshold_log if decidable else None,
        decidable=decidable,
    )


def interim_paired(samples: Samples, margin_log: float = MARGIN_LOG) -> SeriesStats | None:
    """The same statistic for one query, in numpy (the stop rule's look: microseconds); a
    margin other than compare's only for studies (bench/inject_change.py --margin)."""
    pairs, processes = usable_pairs(samples)
    if len(pairs) < MIN_PAIRS:
        return None
    found = blocked_stats(pairs, margin_log=margin_log)
    return paired_series_stats(samples, found, block_process_diffs(pairs, processes))


def _with_process_diffs(
    stats: dict[K, SeriesStats], series: Mapping[K, Samples]
) -> dict[K, SeriesStats]:
    """Each series' D per server process set (pooled method), from its usable pairs."""
    for key, found in stats.items():
        pairs, processes = usable_pairs(series[key])
        diffs = block_process_diffs(pairs, processes) if len(set(processes)) > 1 else ()
        if diffs:
            stats[key] = replace(found, process_diffs=diffs)
    return stats
