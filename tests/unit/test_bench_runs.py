"""bench/runs.py: the machine-noise figure the benchmarks print next to their time ratios, and
how the known-change bench reads its ground truths. No servers: artifacts written here."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from artifacts.manifest import write_manifest
from bench.runs import RunResult, consensus, pair_noise, truth_spread, truth_undetermined
from tests.runs import write_artifacts


def test_pair_noise_is_the_median_spread_of_the_first_6_log_ratios(tmp_path: Path) -> None:
    reference = tuple([0.1] * 10)
    # log ratios +-s alternating over the first 6 pairs (population sd s), then far out
    # (ignored)
    series = {}
    for index, s in enumerate((0.02, 0.05, 0.30)):
        logs = [s if n % 2 == 0 else -s for n in range(6)] + [2.0, -2.0, 2.0, 2.0]
        series[index] = (reference, tuple(0.1 * math.exp(x) for x in logs))
    series[3] = (reference[:5], reference[:5])  # fewer than 6 pairs: not counted
    out = write_artifacts(tmp_path / "run", series)
    noise = pair_noise(RunResult(out, 0, 0.0, 0.0, 0.0, {}))
    assert noise == pytest.approx(0.05)


def test_a_constant_change_has_no_pair_noise(tmp_path: Path) -> None:
    times = tuple(0.1 + 0.01 * n for n in range(8))
    out = write_artifacts(tmp_path / "run", {0: (times, tuple(1.2 * t for t in times))})
    assert pair_noise(RunResult(out, 0, 0.0, 0.0, 0.0, {})) == pytest.approx(0.0, abs=1e-12)


def test_a_truth_whose_process_sets_disagree_is_undetermined() -> None:
    """One reference process 40% slower than the other, a real slowdown on both sets, and
    small disagreements."""
    assert truth_undetermined({"diff": -0.144, "process_diffs": [-0.272, 0.015]})
    assert not truth_undetermined({"diff": 0.281, "process_diffs": [0.262, 0.301]})
    assert not truth_undetermined({"diff": 0.002, "process_diffs": [-0.007, 0.014]})
    assert not truth_undetermined({"diff": -0.03, "process_diffs": [-0.049, 0.02]})
    assert not truth_undetermined({"diff": 0.05, "process_diffs": []})  # one process a side


def test_consensus_keeps_what_every_truth_agrees_on() -> None:
    first = {("t", 0): 0.12, ("t", 1): 0.11, ("t", 2): 0.01, ("t", 3): 0.015, ("t", 4): -0.03}
    second = {("t", 0): 0.14, ("t", 1): 0.08, ("t", 2): -0.01, ("t", 3): 0.03, ("t", 4): -0.05}
    second[("t", 5)] = 0.2  # determined in one truth only: not counted anywhere
    agreed = consensus([first, second], large=0.10, small=0.02)
    assert agreed.queries == 5
    assert agreed.large == {("t", 0): pytest.approx(0.13)}  # t1: 8% in the second truth
    assert agreed.small == frozenset({("t", 2)})  # t3: 3% in the second truth
    assert set(agreed.directed) == {("t", 0), ("t", 1), ("t", 4)}
    assert agreed.directed[("t", 4)] == pytest.approx(-0.04)
    # opposite directions, however large, are never a consensus
    flipped = consensus([{("t", 0): 0.2}, {("t", 0): -0.2}], large=0.10, small=0.02)
    assert flipped.large == {} and flipped.directed == {} and flipped.small == frozenset()


def test_truth_spread_is_the_median_and_90th_percentile_gap() -> None:
    first = {("t", n): 0.0 for n in range(10)}
    second = {("t", n): n / 100 for n in range(10)}
    median, p90 = truth_spread(first, second)
    assert median == pytest.approx(0.045) and p90 == pytest.approx(0.09)
    assert all(math.isnan(x) for x in truth_spread(first, {}))


def test_placement_is_what_run_json_says(tmp_path: Path) -> None:
    result = RunResult(tmp_path, 0, 0.0, 0.0, 0.0, {})
    write_manifest(tmp_path, {"options": {"pin_cpus": [1], "pin": "pinned to CPU 1: why"}})
    assert result.placement() == "pinned to CPU 1: why"
    write_manifest(tmp_path, {"options": {"pin_cpus": [0, 1]}})  # written before options.pin
    assert result.placement() == "pin_cpus [0, 1]"
    write_manifest(tmp_path, {"options": {}})
    assert result.placement() == "pin_cpus none"
