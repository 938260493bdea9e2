"""bench/speed_probe.py: how much of the pair differences a speed probe next to each run
explains."""

from __future__ import annotations

import math
import random

import pytest

from bench.speed_probe import probe_figures

Run = tuple[str, int, float, float]


def _runs(speeds: list[tuple[float, float]], own_noise: float, seed: int = 3) -> list[Run]:
    """Pairs whose runs take 0.1 s times the CPU's slowness, which the probe sees exactly,
    times the query's own noise, which it does not see."""
    rng = random.Random(seed)
    runs = []
    for pair, (reference, patched) in enumerate(speeds):
        for side, slowness in (("reference", reference), ("patched", patched)):
            level = math.log(slowness)
            runs.append((side, pair, math.log(0.1) + level + rng.gauss(0, own_noise), level))
    return runs


def _speeds(count: int, seed: int = 5) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    return [(math.exp(rng.gauss(0, 0.1)), math.exp(rng.gauss(0, 0.1))) for _ in range(count)]


def test_noise_that_is_only_the_cpus_speed_is_removed_by_the_probe() -> None:
    figures = probe_figures(_runs(_speeds(40), own_noise=0.0))
    assert figures.run_r == pytest.approx(1.0)
    assert figures.pair_r == pytest.approx(1.0)
    assert figures.slope == pytest.approx(1.0)
    assert figures.spread[0] > 0.05
    assert figures.spread[1] == pytest.approx(0.0, abs=1e-12)
    assert figures.sd[2] == pytest.approx(0.0, abs=1e-12)
    assert figures.median_time == pytest.approx(0.1, rel=0.2)


def test_noise_of_the_query_itself_is_not_removed() -> None:
    steady = [(1.0, 1.0)] * 40
    figures = probe_figures(_runs(steady, own_noise=0.05))
    assert figures.spread[1] == pytest.approx(figures.spread[0])
    assert figures.spread[2] == pytest.approx(figures.spread[0])
    assert figures.spread[0] > 0.03
    assert math.isnan(figures.pair_r)


def test_dividing_by_an_unrelated_probe_widens_the_spread() -> None:
    runs = _runs([(1.0, 1.0)] * 40, own_noise=0.03)
    rng = random.Random(11)
    unrelated = [(side, pair, t, rng.gauss(0, 0.1)) for side, pair, t, _ in runs]
    figures = probe_figures(unrelated)
    assert abs(figures.pair_r) < 0.4
    assert figures.spread[1] > 1.5 * figures.spread[0]
