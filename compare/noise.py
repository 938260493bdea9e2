"""How noisy the machine was during a run, so a reviewer can tell whether the patch or the
machine made queries "inconclusive": per query the spread of ln(patched / reference) over
its first PAIRS pairs (noise pairing cannot cancel, and a change does not widen), the median
over queries. Typical values: docs/method.md, "The machine's noise".
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from compare.randomization import Samples
from compare.stopping import MIN_RUNS

# Every query of an adaptive run has at least MIN_RUNS pairs, so over that many the figure
# counts every query in both modes. Over more, an adaptive run would count only the queries
# that ran on, the noisier ones, and read higher than a fixed run in the same state.
PAIRS = MIN_RUNS


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
    rows = [series.pairs[:pairs] for series in samples if len(series.pairs) >= pairs]
    if not rows:
        return None
    times = np.asarray(rows, dtype=np.float64)  # queries x pairs x (reference, patched)
    times = times[(times > 0).all(axis=(1, 2))]  # a pair with a time of 0 cannot be a ratio
    if not len(times):
        return None
    spreads = np.log(times[:, :, 1] / times[:, :, 0]).std(axis=1)  # population sd
    return float(np.median(spreads)), len(rows)


def machine_noise(
    samples: Mapping[Any, Samples], thresholds: Iterable[float | None]
) -> Noise | None:
    spread = pair_spread(samples.values())
    if spread is None:
        return None
    known = [t for t in thresholds if t is not None]
    return Noise(spread[0], spread[1], statistics.median(known) if known else None)
