"""bench/cpu_speed.py: how a vCPU's speed moves and whether two vCPUs move together."""

from __future__ import annotations

import math
import os
import random

import pytest

from bench.cpu_speed import at_once, autocorrelation, run_pair_spread, taking_turns


def _ar1(phi: float, count: int, seed: int = 2) -> list[float]:
    rng = random.Random(seed)
    x, out = 0.0, []
    for _ in range(count):
        x = phi * x + rng.gauss(0, 0.1)
        out.append(x)
    return out


def test_autocorrelation_of_a_slowly_moving_speed_is_high_and_falls_with_the_lag() -> None:
    series = _ar1(0.9, 20_000)
    assert autocorrelation(series, 1) == pytest.approx(0.9, abs=0.02)
    assert autocorrelation(series, 10) == pytest.approx(0.9**10, abs=0.05)
    assert abs(autocorrelation(_ar1(0.0, 20_000), 1)) < 0.03


def test_longer_runs_pair_worse_when_the_speed_drifts_between_them() -> None:
    """A speed that moves slowly is shared by short back-to-back runs, less by long ones."""
    chunks = [0.01 * math.exp(v) for v in _ar1(0.98, 40_000)]
    short, _ = run_pair_spread(chunks, 1)
    long, _ = run_pair_spread(chunks, 32)
    assert short < long
    assert run_pair_spread([0.01] * 64, 4) == (0.0, 0.0)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_both_ways_of_running_two_workers_time_every_round() -> None:
    cpus = sorted(os.sched_getaffinity(0))[:2]
    for a, b in (taking_turns("alu", cpus[1], rounds=8), at_once("alu", (cpus[0], cpus[1]), 8)):
        assert len(a) == len(b) == 8
        assert min(a + b) > 0
