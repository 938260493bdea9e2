"""How noisy the machine was during a run, as one figure for the report and summary.json.

A reviewer who sees many "inconclusive" queries needs to know whether the patch or the
machine made them so. Per query, the spread (population standard deviation) of
ln(patched / reference) over its first `PAIRS` ABBA pairs: the two runs of a pair share the
machine's state, so what still differs between them is noise faster than a pair, the part
the paired method cannot cancel. A change shifts the log ratios but not their spread, so the
figure means the same in an A/A run and with a real change. Every mode runs at least
`PAIRS` pairs of a measured query (the adaptive minimum), so runs of different modes compare.
The median over the queries keeps a few disturbed queries from moving it.

Measured on this project's 2-core VM with the same suite (bench/bench_known_change.py):
0.04-0.05 in quiet hours, 0.08-0.12 in noisy ones; the queries' CPU time is as noisy as
their wall time there, so it is the CPU running slower, not waiting for it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from compare.randomization import Samples

PAIRS = 7  # the adaptive mode's minimum runs per side (runner/stopping.py MIN_RUNS)


@dataclass(frozen=True)
class Noise:
    pair_spread: float  # median over queries of sd(ln(patched/reference)) over PAIRS pairs
    queries: int  # queries with at least PAIRS pairs
    median_threshold: float | None  # median T over the queries with a threshold

    def as_json(self) -> dict[str, Any]:
        return {
            "pair_spread": self.pair_spread,
            "pairs": PAIRS,
            "queries": self.queries,
            "median_threshold": self.median_threshold,
        }


def pair_spread(samples: Iterable[Samples], pairs: int = PAIRS) -> tuple[float, int] | None:
    """(median spread, queries counted), or None when no query has `pairs` positive pairs."""
    spreads = []
    for series in samples:
        ratios = [math.log(p / r) for r, p in series.pairs[:pairs] if r > 0 and p > 0]
        if len(ratios) == pairs:
            spreads.append(statistics.pstdev(ratios))
    if not spreads:
        return None
    return statistics.median(spreads), len(spreads)


def machine_noise(
    samples: Mapping[Any, Samples], thresholds: Iterable[float | None]
) -> Noise | None:
    spread = pair_spread(samples.values())
    if spread is None:
        return None
    known = [t for t in thresholds if t is not None]
    return Noise(spread[0], spread[1], statistics.median(known) if known else None)
