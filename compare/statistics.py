"""The statistics of each query's client times under the chosen method: pooled
(compare/randomization.py, ClickHouse's) or paired (compare/paired.py, the default)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import replace
from typing import TypeVar

import numpy as np

from compare.engine import SqlEngine
from compare.paired import PAIRED, Paired, process_diffs
from compare.randomization import Randomization, Samples, SeriesStats

# The paired method needs as many pairs as the pooled one needs runs a side (verdict.MIN_RUNS).
MIN_PAIRS = 3

K = TypeVar("K", bound=Hashable)


class QueryStatistics:
    """Both methods in one chDB session."""

    def __init__(self, engine: SqlEngine, method: str = PAIRED) -> None:
        self.method = method
        self.randomization = Randomization(engine)
        self.paired = Paired(engine)

    def statistics(self, series: Mapping[K, Samples]) -> dict[K, SeriesStats]:
        """Pooled statistics for every series; with the paired method, the paired statistic
        gives D, T and the p-value of each series with at least MIN_PAIRS usable pairs (its
        pooled split distribution is then not computed: only the medians are kept)."""
        if self.method != PAIRED:
            return _with_process_diffs(self.randomization.statistics(series), series)
        usable = {
            key: pairs
            for key, s in series.items()
            if s.reference
            and s.patched
            and len(pairs := [p for p in s.pairs if min(p) > 0]) >= MIN_PAIRS
        }
        stats = self.randomization.statistics(
            {key: s for key, s in series.items() if key not in usable}
        )
        for key, found in self.paired.statistics(usable).items():
            s = series[key]
            reference_median = float(np.median(s.reference))
            stats[key] = SeriesStats(
                runs_reference=len(s.reference),
                runs_patched=len(s.patched),
                reference_median=reference_median,
                patched_median=float(np.median(s.patched)),
                diff=found.diff,
                threshold=found.threshold,
                threshold_abs=found.threshold * reference_median,
                p_value=found.p_value,
                exact=found.exact,
                method=PAIRED,
                pairs=found.pairs,
                paired_significant=found.significant,
                paired_interval=(found.ci_low, found.ci_high),
            )
        return _with_process_diffs({key: stats[key] for key in series if key in stats}, series)


def _with_process_diffs(
    stats: dict[K, SeriesStats], series: Mapping[K, Samples]
) -> dict[K, SeriesStats]:
    """Each series' D per server process set, from its usable pairs (both times above 0)."""
    for key, found in stats.items():
        s = series[key]
        if len(set(s.processes)) < 2 or len(s.processes) != len(s.pairs):
            continue
        kept = [(p, n) for p, n in zip(s.pairs, s.processes, strict=True) if min(p) > 0]
        diffs = process_diffs([p for p, _ in kept], [n for _, n in kept])
        if diffs:
            stats[key] = replace(found, process_diffs=diffs)
    return stats
