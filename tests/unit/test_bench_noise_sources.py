"""bench/noise_sources.py: the spread of a query's pairs in each measure of the same runs."""

from __future__ import annotations

import math
import statistics

from bench.noise_sources import robust_spread, spreads_by_measure


def test_one_slow_run_barely_moves_the_robust_spread() -> None:
    steady = [0.01 * (i % 3 - 1) for i in range(12)]
    assert robust_spread([*steady[:-1], 1.0]) <= 1.5 * robust_spread(steady)
    assert statistics.stdev([*steady[:-1], 1.0]) > 10 * robust_spread(steady)


def test_a_measure_that_varies_less_between_the_sides_has_the_smaller_spread() -> None:
    # wall time 10% apart in alternate pairs, CPU time 1%: the noise is off the CPU
    pairs = {
        ("t", q): {
            n: {
                "reference": {"wall": 1.0, "server": 1.0, "cpu": 1.0, "start": 0.0},
                "patched": {
                    "wall": math.exp(0.1 * (-1) ** n),
                    "server": 1.0,
                    "cpu": math.exp(0.01 * (-1) ** n),
                    "start": 0.0,
                },
            }
            for n in range(10)
        }
        for q in range(3)
    }
    spreads = spreads_by_measure(pairs)
    assert len(spreads["wall"]) == len(spreads["cpu"]) == 3
    assert statistics.median(spreads["wall"]) > 5 * statistics.median(spreads["cpu"])
    assert statistics.median(spreads["server"]) == 0.0


def test_a_query_with_too_few_pairs_is_left_out() -> None:
    side = {"wall": 1.0, "server": 1.0, "cpu": 1.0, "start": 0.0}
    pairs = {("t", 0): {n: {"reference": side, "patched": side} for n in range(5)}}
    assert spreads_by_measure(pairs) == {}
