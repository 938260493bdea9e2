"""The bootstrap confidence interval of the ratio of medians (compare/bootstrap.sql) against a
tiny numpy oracle on the same resamples, its determinism and its coverage."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from compare.bootstrap import (
    PATCHED_STREAM,
    REFERENCE_STREAM,
    RESAMPLES,
    Bootstrap,
    RatioInterval,
    interval_ranks,
)
from compare.engine import SqlEngine
from compare.randomization import Samples


@pytest.fixture(scope="module")
def bootstrap() -> Iterator[Bootstrap]:
    with SqlEngine() as engine:
        yield Bootstrap(engine)


def numpy_interval(bootstrap: Bootstrap, samples: Samples) -> tuple[float, float]:
    """The oracle: the same resamples' medians (positions m1, m2 of the sorted runs), the
    ratios, and the order statistics at interval_ranks()."""
    reference, patched = np.sort(samples.reference), np.sort(samples.patched)
    ref_draws = np.array(bootstrap.draws(REFERENCE_STREAM, len(reference))) - 1
    pat_draws = np.array(bootstrap.draws(PATCHED_STREAM, len(patched))) - 1
    ref_medians = (reference[ref_draws[:, 0]] + reference[ref_draws[:, 1]]) / 2
    pat_medians = (patched[pat_draws[:, 0]] + patched[pat_draws[:, 1]]) / 2
    ratios = np.sort(pat_medians / ref_medians)
    low, high = interval_ranks()
    return float(ratios[low - 1]), float(ratios[high - 1])


@pytest.mark.parametrize(("n1", "n2"), [(7, 7), (8, 8), (7, 12), (15, 15), (25, 24), (41, 41)])
def test_sql_interval_equals_the_numpy_oracle_on_the_same_resamples(
    bootstrap: Bootstrap, n1: int, n2: int
) -> None:
    rng = np.random.default_rng(n1 * 100 + n2)
    samples = Samples(
        tuple(rng.lognormal(0, 0.05, n1) * 0.1), tuple(rng.lognormal(0, 0.05, n2) * 0.11)
    )
    found = bootstrap.intervals({"q": samples})["q"]
    assert found is not None
    assert (found.low, found.high) == pytest.approx(numpy_interval(bootstrap, samples), rel=1e-12)


def test_interval_ends_are_the_50th_smallest_and_largest_of_2000_ratios() -> None:
    assert RESAMPLES == 2000
    assert interval_ranks() == (50, 1951)
    assert interval_ranks(100, 0.9) == (5, 96)


def test_the_same_runs_give_the_same_interval_in_any_order_and_company(
    bootstrap: Bootstrap,
) -> None:
    runs = Samples(
        (0.10, 0.12, 0.11, 0.10, 0.13, 0.09, 0.1), (0.2, 0.21, 0.19, 0.2, 0.22, 0.2, 0.2)
    )
    shuffled = Samples(runs.reference[::-1], runs.patched[3:] + runs.patched[:3])
    other = Samples((1.0,) * 9, (2.0,) * 9)
    first = bootstrap.intervals({0: runs})[0]
    assert bootstrap.intervals({0: other, 1: shuffled})[1] == first
    assert bootstrap.intervals({0: runs})[0] == first


def test_identical_runs_give_a_point_interval(bootstrap: Bootstrap) -> None:
    found = bootstrap.intervals({0: Samples((0.1,) * 7, (0.15,) * 7)})[0]
    assert found == RatioInterval(pytest.approx(1.5), pytest.approx(1.5))  # type: ignore[arg-type]


def test_a_zero_reference_median_gives_no_interval(bootstrap: Bootstrap) -> None:
    assert bootstrap.intervals({0: Samples((0.0,) * 7, (1.0,) * 7)}) == {0: None}


def test_interval_covers_the_true_ratio_in_most_simulated_queries(bootstrap: Bootstrap) -> None:
    """15 runs a side, 3% multiplicative noise, a true 20% slowdown: the percentile interval
    of medians undercovers a little at small n, but not by much."""
    rng = np.random.default_rng(8)
    series = {
        i: Samples(tuple(rng.lognormal(0, 0.03, 15)), tuple(1.2 * rng.lognormal(0, 0.03, 15)))
        for i in range(300)
    }
    found = bootstrap.intervals(series)
    covered = sum(1 for ci in found.values() if ci is not None and ci.low <= 1.2 <= ci.high)
    assert covered / len(series) >= 0.88


@pytest.mark.parametrize(
    ("low", "high", "effect", "inside"),
    [
        (0.96, 1.04, 0.05, True),
        (0.95, 1.05, 0.05, True),  # the ends may touch the bounds
        (0.94, 1.01, 0.05, False),
        (1.01, 1.06, 0.05, False),
        (1.03, 1.09, 0.10, True),
    ],
)
def test_an_interval_is_within_an_effect_when_both_ends_are(
    low: float, high: float, effect: float, inside: bool
) -> None:
    assert RatioInterval(low, high).within(effect) is inside
