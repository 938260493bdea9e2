"""bench/burst_windows.py: windows of a long run's own pairs judged by compare's per-query
rule and scored against the whole run's change (no servers)."""

from __future__ import annotations

from bench.burst_windows import score, window_flag
from compare.blocked import Pair


def alternating(
    change: float, pairs: int, burst: range = range(0), burst_change: float = 0.0
) -> list[Pair]:
    """Reference 50 ms; the patched side `change` slower with +-1% alternating noise, and
    `burst_change` instead for the pairs in `burst`."""
    out = []
    for n in range(pairs):
        factor = 1 + (burst_change if n in burst else change)
        noise = 1.01 if n % 2 else 0.99
        out.append((0.05, 0.05 * factor * noise))
    return out


def test_a_window_that_moved_one_way_in_every_pair_is_flagged_and_a_quiet_one_is_not() -> None:
    assert window_flag(alternating(0.20, 6), 0) is not None
    assert window_flag(alternating(0.0, 6), 0) is None


def test_a_burst_on_a_query_without_a_change_counts_as_a_flag_below_two_percent() -> None:
    series = {
        ("quiet", 0): alternating(0.0, 41),
        ("burst", 0): alternating(0.0, 41, burst=range(8, 14), burst_change=0.25),
        ("changed", 0): alternating(0.15, 41),
    }
    tally, notes = score(series, 6, 41)
    assert tally.small_queries == 2
    assert tally.flagged_small == 1  # only the window that is exactly the burst
    assert tally.flagged_wrong == 0
    assert tally.found_large == tally.large_windows == 18
    assert notes == ["burst #0 pairs 8-13: +25.0% against +1.0%"]


def test_a_query_shorter_than_the_truth_is_left_out() -> None:
    tally, _ = score({("short", 0): alternating(0.3, 20)}, 6, 41)
    assert tally.windows == 0
