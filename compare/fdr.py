"""Suite-level false-discovery control: the Benjamini-Hochberg procedure (issue 8 item 4).

Pure functions. A run tests hundreds of queries at once; at a per-query false-positive rate
of ~1% (T is the 0.99 quantile), 3,000 unchanged queries give ~30 false flags (METHOD.md §7).
Benjamini and Hochberg (1995): sort the m p-values, find the largest rank k with
p_(k) <= k * q / m, and call the k smallest discoveries. Among the discoveries, the expected
share of false ones is at most q (for independent or positively dependent p-values).

The interaction with run counts: a query can only be a discovery when its p-value can get
small enough. The randomization p-value of the median difference is coarse: with n runs a
side its smallest value (complete separation) is, exactly,

    n = 7: 0.0117    9: 0.0029    11: 0.00071    13: 0.00018    15: 0.000044
    17: 0.000011     20: 7.1e-7   25: 4.3e-8     > 25 (sampled splits): 1 / 10,001

(many splits share the extreme medians, so it is far above 2 / C(2n, n)). A lone change
among m queries is a discovery only if p <= q / m, e.g. m >= 5 queries at q = 0.05 already
rule it out at 7 runs. `sure_discovery_level` is that bound: a p-value at or below it is a
discovery whatever the other queries do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# q = 0.05: at most 5% of the queries called changed are expected to be false alarms; the
# level Benjamini and Hochberg use, and issue 8's default.
FDR_Q = 0.05


@dataclass(frozen=True)
class Discoveries:
    q: float
    tests: int  # m: the p-values considered
    discovered: tuple[bool, ...]  # per p-value, in input order
    cutoff: float  # the largest p-value called a discovery; 0.0 when there is none

    @property
    def count(self) -> int:
        return sum(self.discovered)

    @property
    def expected_false_at_most(self) -> float:
        """q x discoveries: the expected number of false discoveries among them, at most."""
        return self.q * self.count


def benjamini_hochberg(p_values: Sequence[float], q: float = FDR_Q) -> Discoveries:
    """Which p-values are discoveries at false-discovery rate q (step-up BH procedure)."""
    if not 0 < q <= 1:
        raise ValueError(f"q must be in (0, 1], got {q}")
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    largest_rank = 0
    for rank, index in enumerate(order, start=1):
        # `<=` with a small relative slack: k * q / m is not exact in floating point, and a
        # p-value exactly on the line (e.g. 0.0125 = 1 * 0.05 / 4) must count.
        if p_values[index] <= rank * q / m * (1 + 1e-12):
            largest_rank = rank
    discovered = [False] * m
    for index in order[:largest_rank]:
        discovered[index] = True
    cutoff = p_values[order[largest_rank - 1]] if largest_rank else 0.0
    return Discoveries(q, m, tuple(discovered), cutoff)


def sure_discovery_level(q: float, tests: int) -> float:
    """q / m: a p-value at or below it is a BH discovery whatever the other p-values are."""
    return q / max(tests, 1)
