"""A tiny numpy version of the randomization statistic: the test oracle for compare/*.sql.

Used only by tests (STYLE.md §12). Straightforward on purpose: it sorts every split.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

QUANTILE = 0.99

Positions = Sequence[int]  # 0-based indices into the pooled values that form group 1


@dataclass(frozen=True)
class OracleStats:
    reference_median: float
    patched_median: float
    threshold_abs: float
    p_value: float


def all_splits(n1: int, n2: int) -> list[tuple[int, ...]]:
    return list(itertools.combinations(range(n1 + n2), n1))


def randomization(
    reference: Sequence[float],
    patched: Sequence[float],
    splits: Iterable[Positions],
    *,
    exact: bool,
) -> OracleStats:
    """Group 1 of each split = the given positions of the pooled values sorted ascending."""
    pooled = np.sort(np.concatenate([np.asarray(reference), np.asarray(patched)]))
    observed = abs(_median(np.sort(reference)) - _median(np.sort(patched)))
    diffs = np.array([_split_difference(pooled, positions) for positions in splits])
    extreme = int(np.count_nonzero(diffs >= observed))
    p_value = extreme / len(diffs) if exact else (extreme + 1) / (len(diffs) + 1)
    return OracleStats(
        reference_median=float(np.median(reference)),
        patched_median=float(np.median(patched)),
        threshold_abs=inverted_cdf_quantile(diffs, QUANTILE),
        p_value=p_value,
    )


def inverted_cdf_quantile(values: npt.NDArray[np.float64], level: float) -> float:
    """The smallest value whose cumulative share reaches `level` (numpy's 'inverted_cdf')."""
    ordered = np.sort(values)
    cumulative = np.arange(1, len(ordered) + 1)
    return float(ordered[int(np.argmax(cumulative >= level * len(ordered)))])


def _split_difference(pooled: npt.NDArray[np.float64], positions: Positions) -> float:
    mask = np.zeros(len(pooled), dtype=bool)
    mask[list(positions)] = True
    return abs(_median(pooled[mask]) - _median(pooled[~mask]))


def _median(ordered: npt.NDArray[np.float64]) -> float:
    # the same arithmetic as randomization.sql: (a + b) / 2 of the middle values, so the
    # observed split's difference compares equal to itself
    n = len(ordered)
    return float((ordered[(n + 1) // 2 - 1] + ordered[n // 2]) / 2)
