"""Suite-level false-discovery control: the Benjamini-Hochberg (1995) step-up procedure. Pure.
At 1% false positives a query, 3,000 unchanged queries give ~30 false flags. How run counts
limit discoveries: docs/method.md, "False-discovery control".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# At most 5% of the queries called changed are expected to be false alarms: the level
# Benjamini and Hochberg use.
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
