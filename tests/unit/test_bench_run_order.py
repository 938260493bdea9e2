"""bench/run_order.py: chperf's run order against strict alternation on the same executions."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import numpy as np
import pytest

from bench.run_order import (
    abba_patched,
    abba_stats,
    adjacent_block_null,
    adjacent_null,
    adjacent_stats,
    chperf_patched,
    chperf_stats,
    median_autocorrelation,
    residual_series,
    windows,
)
from compare.blocked import rank_for_level


def test_the_orders_as_labelled() -> None:
    as_letters = {True: "P", False: "R"}
    assert "".join(as_letters[p] for p in abba_patched(8)) == "RPPRPRRP"
    assert "".join(as_letters[p] for p in chperf_patched(16)) == "RPRPPRPRPRPRRPRP"


def test_the_adjacent_statistic_null_is_the_count_over_a_blocks_rank_orders() -> None:
    # W' = 3 needs P1 > R0, P1 > R2 and P3 > R2: 5 of the 24 orders (the up-down ones).
    assert adjacent_block_null() == (5, 7, 7, 5)
    assert sum(adjacent_null(3, 1)) == 24**3 * 2
    # 7 runs a side reach the 1% level, 6 do not: 2 (5/24)^3 (1/2) = 0.009 and 0.018.
    assert rank_for_level(adjacent_null(3, 1)) == 1
    assert rank_for_level(adjacent_null(3, 0)) == 0


def _chperf_window(pairs: int, change: float, noise: float, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    patched = chperf_patched(2 * pairs)
    return [math.log(0.1) + (change if p else 0.0) + rng.gauss(0, noise) for p in patched]


def test_a_change_every_back_to_back_pair_shows_is_found_from_seven_pairs() -> None:
    change = math.log(1.1)
    found = adjacent_stats(_chperf_window(7, change, 0.001))
    assert found.significant()
    assert found.diff_log == pytest.approx(change, abs=0.005)
    assert found.threshold_log < found.diff_log
    too_few = adjacent_stats(_chperf_window(6, change, 0.001))
    assert not too_few.significant()
    assert math.isinf(too_few.threshold_log)


def test_a_linear_drift_without_change_estimates_no_change_in_both_orders() -> None:
    drift = [0.01 * i for i in range(32)]
    assert adjacent_stats(drift).diff_log == pytest.approx(0.0, abs=1e-12)
    assert abba_stats(drift).diff_log == pytest.approx(0.0, abs=1e-12)
    assert chperf_stats(drift).diff_log == pytest.approx(0.0, abs=1e-12)
    assert not adjacent_stats(drift).significant()


def test_a_disturbance_two_executions_long_turns_a_whole_block_only_in_abba_order() -> None:
    """ABBA runs P P and R R back to back inside a block, so a disturbance of two executions
    there moves all four of the block's cross pairs the same way; in chperf's order two
    consecutive executions of one side straddle a block boundary."""

    def whole_blocks(patched: list[bool], differences: Blocks) -> list[int]:
        starts = []
        for start in range(7):
            logs = [0.0] * 8
            logs[start] = logs[start + 1] = math.log(1.3)
            if any(
                all(d > 0 for d in block) or all(d < 0 for d in block)
                for block in differences(logs, patched)
            ):
                starts.append(start)
        return starts

    assert whole_blocks(abba_patched(8), _cross_differences) == [1, 5]
    assert whole_blocks(chperf_patched(8), _cross_differences) == []


Blocks = Callable[[list[float], list[bool]], list[list[float]]]


def _cross_differences(logs: list[float], patched: list[bool]) -> list[list[float]]:
    """Per block of four executions, its four (patched, reference) cross differences."""
    blocks = []
    for b in range(0, len(logs), 4):
        ps = [i for i in range(b, b + 4) if patched[i]]
        rs = [i for i in range(b, b + 4) if not patched[i]]
        blocks.append([logs[p] - logs[r] for p in ps for r in rs])
    return blocks


def test_residuals_take_out_each_side_and_process_and_keep_time_order() -> None:
    rows = [
        (3.0, "patched", 0, 0.24),
        (1.0, "reference", 0, 0.2),
        (2.0, "patched", 0, 0.24),
        (4.0, "reference", 1, 0.3),
        (5.0, "reference", 1, 0.33),
    ]
    series = residual_series(rows)
    assert series.tolist()[:3] == pytest.approx([0.0, 0.0, 0.0])
    assert series[3] == pytest.approx(-series[4])
    assert series[4] > 0


def test_autocorrelation_is_the_median_over_queries_long_enough() -> None:
    rng = random.Random(4)
    drifting = np.cumsum([rng.gauss(0, 1) for _ in range(400)])
    independent = np.array([rng.gauss(0, 1) for _ in range(400)])
    assert median_autocorrelation([drifting], 1) > 0.9
    assert abs(median_autocorrelation([independent], 1)) < 0.15
    assert math.isnan(median_autocorrelation([independent[:7]], 2))


def test_windows_do_not_overlap_and_drop_the_tail() -> None:
    chunks = windows(np.arange(10.0), 2)
    assert [c[0] for c in chunks] == [0.0, 4.0]
    assert all(len(c) == 4 for c in chunks)
