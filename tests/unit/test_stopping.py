from __future__ import annotations

import pytest

from compare.paired import PAIRED
from compare.randomization import SeriesStats
from compare.stopping import StopDecision, StopRule, hold_for_interference, should_stop

RULE = StopRule(min_runs=7, max_runs=25, target=0.05, min_effect=0.05, budget_seconds=30)
FDR_RULE = StopRule(min_runs=7, max_runs=25, target=0.05, min_effect=0.05, fdr_q=0.05, queries=100)


def stats(diff: float, threshold: float, p_value: float = 0.5) -> SeriesStats:
    return SeriesStats(
        runs_reference=9, runs_patched=9, reference_median=0.1, patched_median=0.1 * (1 + diff),
        diff=diff, threshold=threshold, threshold_abs=0.1 * threshold, p_value=p_value, exact=True,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("runs", "spent", "series", "stop", "why"),
    [
        (6, 1.0, stats(0.0, 0.01), False, "fewer than 7 runs"),
        (25, 1.0, stats(0.06, 0.2), True, "reached 25 runs"),
        (10, 31.0, stats(0.06, 0.2), True, "time budget"),
        (8, 1.0, None, False, "no statistics"),
        (8, 1.0, stats(0.045, 0.08), False, "above the target"),
        (8, 1.0, stats(0.01, 0.04), True, "settled"),
        (8, 1.0, stats(0.06, 0.04), False, "within T/2 of the minimum effect"),
        (8, 1.0, stats(-0.20, 0.04), True, "settled"),
    ],
)
def test_stop_rule_spends_runs_only_where_the_verdict_is_open(
    runs: int, spent: float, series: SeriesStats | None, stop: bool, why: str
) -> None:
    decision = should_stop(RULE, runs, spent, series)
    assert decision.stop is stop
    assert why in decision.reason


def test_a_query_that_looks_changed_runs_on_until_its_p_value_is_a_sure_discovery() -> None:
    # m = 100 queries, q = 0.05: the first discovery needs p <= 0.0005.
    waiting = should_stop(FDR_RULE, 9, 1.0, stats(0.2, 0.04, p_value=0.0029))
    assert not waiting.stop and "discovery level" in waiting.reason
    done = should_stop(FDR_RULE, 13, 1.0, stats(0.2, 0.03, p_value=0.00018))
    assert done.stop and done.discovery


def test_earlier_discoveries_raise_the_level_for_later_ones() -> None:
    # After 5 discoveries the level is 6 * 0.05 / 100 = 0.003.
    decision = should_stop(FDR_RULE, 9, 1.0, stats(0.2, 0.04, p_value=0.0029), discoveries=5)
    assert decision.stop and decision.discovery


def test_a_clearly_unchanged_query_is_not_held_back_by_false_discovery_control() -> None:
    decision = should_stop(FDR_RULE, 7, 1.0, stats(0.0, 0.03, p_value=0.9))
    assert decision.stop and not decision.discovery


@pytest.mark.parametrize(
    ("threshold", "extended"),
    [(0.099, False), (0.10, True), (0.12, True), (0.126, True), (0.127, False), (0.3, False)],
)
def test_at_25_runs_only_a_t_just_above_the_unstable_threshold_is_extended(
    threshold: float, extended: bool
) -> None:
    # 10% x sqrt(40 / 25) = 12.65%: the largest T that 40 runs can be expected to bring below
    decision = should_stop(RULE, 25, 10.0, stats(0.0, threshold))
    assert decision.stop is not extended
    assert ("extended to 40 runs" in decision.reason) is extended


def test_an_extended_query_runs_to_40_or_its_budget_unless_it_becomes_a_discovery() -> None:
    assert RULE.extended_runs == 40
    # between 25 and 40 nothing in the statistics stops it, not even a settled-looking T
    for runs in (26, 30, 39):
        assert not should_stop(RULE, runs, 12.0, stats(0.0, 0.01)).stop
    assert should_stop(RULE, 40, 12.0, stats(0.0, 0.12)).reason == "reached 40 runs (extended)"
    assert "time budget" in should_stop(RULE, 33, 30.5, stats(0.0, 0.12)).reason
    # Rule 4 alone may end it sooner, as at any look: a p-value that is already a discovery.
    changed = stats(0.15, 0.04, p_value=0.0001)
    settled = should_stop(FDR_RULE, 31, 12.0, changed)
    assert settled.stop and settled.discovery and "settled changed" in settled.reason
    # ... but not one above the discovery level (m = 100: the first needs p <= 0.0005), nor
    # without the false-discovery step.
    assert not should_stop(FDR_RULE, 31, 12.0, stats(0.15, 0.04, p_value=0.003)).stop
    assert not should_stop(RULE, 31, 12.0, changed).stop


def test_without_an_unstable_threshold_nothing_is_extended() -> None:
    rule = StopRule(unstable_threshold=None)
    assert rule.extended_runs == rule.max_runs == 24
    assert should_stop(rule, 24, 1.0, stats(0.0, 0.11)).stop


def test_the_defaults_look_after_every_whole_block_from_6_to_the_end_of_an_extension() -> None:
    from compare.stopping import is_checkpoint

    rule = StopRule()
    assert (rule.min_runs, rule.max_runs, rule.extended_runs) == (6, 24, 40)
    assert [n for n in range(1, 41) if is_checkpoint(rule, n)] == list(range(6, 39, 2))
    # Any bounds: every second run from min_runs, and max_runs itself; an extension looks every
    # second run from max_runs and ends on a whole block too.
    other = StopRule(min_runs=5, max_runs=20)
    looks = [n for n in range(1, 33) if is_checkpoint(other, n)]
    assert looks == [5, 7, 9, 11, 13, 15, 17, 19, 20, 22, 24, 26, 28, 30]
    assert other.extended_runs == 32
    assert "extended to 40 runs" in should_stop(rule, 24, 5.0, stats(0.0, 0.11)).reason


def test_an_interval_over_whole_blocks_is_narrower_than_with_half_a_block_more() -> None:
    """Why the looks come at whole blocks: the paired interval at 2b + 1 pairs has the
    critical rank of 2b pairs and one more cross difference, so it is wider on the same noise
    (median T over 400 simulated queries a count, normal noise of 5% a run)."""
    import numpy as np

    from compare.blocked import blocked_stats

    rng = np.random.default_rng(3)

    def median_t(pairs: int) -> float:
        found = []
        for _ in range(400):
            times = np.exp(rng.normal(0.0, 0.05, (pairs, 2)))
            found.append(blocked_stats([tuple(t) for t in times.tolist()]).threshold_log)
        return float(np.median(found))

    for even in (6, 8, 10):
        assert median_t(even) < median_t(even + 1)


@pytest.mark.parametrize(
    ("runs", "diff", "threshold", "stop"),
    [
        # At 9 of 25 runs: T at 25 runs is 0.6 T, D's spread there 0.48 T / 3 = 0.16 T.
        # A change then needs |D| >= max(0.6 T, 5%); futile when |D| + 1.2816 * 0.16 T is
        # below that.
        (9, 0.01, 0.06, True),  # 1% + 1.23% < 5%
        (9, -0.02, 0.05001, True),  # 2% + 1.03% < 5%
        (9, 0.0375, 0.06, True),  # 3.75% + 1.23% = 4.98%: just below 5%
        (9, 0.04, 0.06, False),  # 4% + 1.23% reaches the minimum effect: run on
        (9, 0.02, 0.095, True),  # need 5.7% (T at 25 runs): 2% + 1.95% is below it
        (9, 0.04, 0.095, False),  # 4% + 1.95% reaches 5.7%: run on
        (9, 0.0, 0.10, False),  # T at the unstable threshold: run on, it may come below
        (9, 0.07, 0.08, False),  # |D| above the minimum effect: never futile
        # At 20 runs T at 25 is 0.894 T and the spread 0.4 * 0.07 / 3 = 0.93%:
        (20, 0.035, 0.07, True),  # 3.5% + 1.2% < 6.26%
        (20, 0.052, 0.07, False),  # 5.2% + 1.2% reaches 6.26%
    ],
)
def test_a_query_above_the_target_settles_when_a_change_is_out_of_reach(
    runs: int, diff: float, threshold: float, stop: bool
) -> None:
    decision = should_stop(RULE, runs, 1.0, stats(diff, threshold))
    assert decision.stop is stop
    assert "above the target" in decision.reason
    assert ("out of reach" in decision.reason) is stop
    assert should_stop(StopRule(futility=False), runs, 1.0, stats(diff, threshold)).stop is False


def test_the_study_variant_applies_futility_above_the_unstable_threshold_from_its_run() -> None:
    """bench/replay_stops.py --unstable-futility-from: a noisy query with D near 0 stops from
    that run on (and ends unstable); by default it runs on to bring T below the threshold."""
    noisy = stats(0.0, 0.15)
    variant = StopRule(unstable_futility_from=12)
    assert not should_stop(StopRule(), 12, 1.0, noisy).stop
    assert not should_stop(variant, 10, 1.0, noisy).stop
    decision = should_stop(variant, 12, 1.0, noisy)
    assert decision.stop and "out of reach" in decision.reason
    assert not should_stop(variant, 12, 1.0, stats(0.12, 0.15)).stop  # a change may come


def test_futility_uses_the_spread_of_the_runs_still_to_come() -> None:
    # D 3%, T 7%: the need is the 5% minimum effect until T at 25 runs exceeds it. Early on
    # the remaining runs could still move D by enough; near the cap they could not.
    series = stats(0.03, 0.07)
    early = should_stop(RULE, 7, 1.0, series)
    late = should_stop(RULE, 24, 1.0, series)
    assert early.stop  # 3% + 1.2816 * 0.07 / 3 * sqrt(7 * 18) / 25 = 3.34% < 5%
    series = stats(0.04, 0.07)
    assert not should_stop(RULE, 12, 1.0, series).stop  # 4% + 1.49% > 5%
    assert should_stop(RULE, 24, 1.0, series).stop  # 4% + 0.68% < max(6.86%, 5%)
    assert "out of reach" in late.reason


def test_a_higher_futility_power_gives_up_sooner() -> None:
    # D 4%, T 7% at 12 runs (max 24): 4% + z * 0.07 / 3 * sqrt(12 * 12) / 24 against 5%.
    # z 1.2816 (10%): 5.50%, runs on; z 0.5244 (30%): 4.61%, settles.
    series = stats(0.04, 0.07)
    assert not should_stop(StopRule(), 12, 1.0, series).stop
    settled = should_stop(StopRule(futility_power=0.3), 12, 1.0, series)
    assert settled.stop and "conditional power below 30%" in settled.reason


def test_a_sure_discovery_settles_even_while_t_is_above_the_target() -> None:
    # D +20%, T 8% (above the 5% target): a discovery at p 0.0001 need not wait for T
    decision = should_stop(FDR_RULE, 15, 3.0, stats(0.2, 0.08, p_value=0.0001))
    assert decision.stop and decision.discovery
    waiting = should_stop(FDR_RULE, 15, 3.0, stats(0.2, 0.08, p_value=0.01))
    assert not waiting.stop


def paired(diff: float, threshold: float, p_value: float) -> SeriesStats:
    """Paired statistics: significant as paired.sql has it, |D| >= T and p <= 1%."""
    import dataclasses

    return dataclasses.replace(
        stats(diff, threshold, p_value),
        method="paired",
        paired_significant=abs(diff) >= threshold and p_value <= 0.01,
    )


def test_a_discovery_also_needs_compare_s_per_query_significance() -> None:
    # 100 of 151 queries already stopped as changed: the discovery level is 101 * 0.05 / 151
    # = 0.033. A query at p 0.03 is a BH discovery but not significant at 1%: compare would
    # call it unchanged, so it must run on until its p-value is at most 1%.
    rule = StopRule(fdr_q=0.05, queries=151)
    waiting = should_stop(rule, 9, 1.0, paired(0.12, 0.04, p_value=0.03), discoveries=100)
    assert not waiting.stop
    assert "not yet significant" in waiting.reason
    settled = should_stop(rule, 9, 1.0, paired(0.12, 0.04, p_value=0.0078), discoveries=100)
    assert settled.stop and settled.discovery
    # T above the target: rule 4 settles a change whatever T is, but not at p 0.03 either
    assert not should_stop(rule, 9, 1.0, paired(0.12, 0.08, p_value=0.03), discoveries=100).stop
    assert should_stop(rule, 9, 1.0, paired(0.12, 0.08, p_value=0.0078), discoveries=100).stop


def test_without_fdr_a_change_not_yet_significant_runs_on() -> None:
    # D +20%, T 4%, p 0.0156 (7 pairs: the smallest paired p-value): settling would leave
    # compare's verdict "unchanged, not significant"
    decision = should_stop(RULE, 7, 1.0, paired(0.2, 0.04, p_value=0.0156))
    assert not decision.stop and "not yet significant" in decision.reason
    assert should_stop(RULE, 8, 1.0, paired(0.2, 0.04, p_value=0.0078)).stop


def test_a_change_seen_on_one_server_process_only_is_not_a_discovery() -> None:
    import dataclasses

    one_process = dataclasses.replace(stats(0.2, 0.03, p_value=0.0001), process_diffs=(0.38, 0.01))
    decision = should_stop(FDR_RULE, 13, 1.0, one_process)
    assert not decision.discovery
    both = dataclasses.replace(one_process, process_diffs=(0.21, 0.19))
    assert should_stop(FDR_RULE, 13, 1.0, both).discovery


def test_a_clear_speedup_settles_as_a_discovery_like_the_same_slowdown() -> None:
    # Real paired statistics of 13 pairs where the patched server takes 0.67x (D = -33%) or
    # 1.49x (D = +49%): on the log scale both lie 0.40 from 0, and T is printed on each one's
    # own scale, so |D| >= T holds for both as plain numbers too; the stop rule settles both.
    from compare.interim import InterimJudge
    from compare.verdict import Thresholds
    from runner.measure import samples_of

    reference = [0.100 + 0.002 * (i % 5) for i in range(13)]
    ratios = [0.67 * (1 + 0.003 * (i % 7)) for i in range(13)]
    judge = InterimJudge(Thresholds())
    try:
        faster = judge.stats(
            samples_of(
                {
                    "reference": reference,
                    "patched": [q * r for q, r in zip(ratios, reference, strict=True)],
                },
                1,
            )
        )
        slower = judge.stats(
            samples_of(
                {
                    "reference": reference,
                    "patched": [r / q for q, r in zip(ratios, reference, strict=True)],
                },
                1,
            )
        )
    finally:
        judge.close()
    assert faster is not None and slower is not None
    assert faster.diff is not None and faster.threshold is not None
    assert abs(faster.diff) >= faster.threshold  # the same scale as D: no asymmetry
    assert slower.diff is not None and slower.threshold is not None
    assert abs(slower.diff) >= slower.threshold
    assert faster.beyond_threshold and slower.beyond_threshold
    for series in (faster, slower):
        decision = should_stop(FDR_RULE, 13, 1.0, series, discoveries=5)
        assert decision.stop and decision.discovery, decision.reason


def test_beyond_threshold_compares_the_pooled_method_on_the_linear_scale() -> None:
    assert stats(-0.33, 0.30).beyond_threshold
    assert not stats(-0.33, 0.40).beyond_threshold
    assert not stats(0.05, 0.06).beyond_threshold


@pytest.mark.parametrize(
    ("runs", "diff", "threshold", "stop"),
    [
        # T 5% at 9 runs would be 3% at 25: |D| 0.5% from the minimum effect stays within
        # its half (1.5%), so more runs cannot settle it.
        (9, 0.045, 0.05, True),
        (9, -0.045, 0.05, True),
        # 1.5% from the minimum effect: 25 runs could take it past 1.2%, so run on.
        (9, 0.035, 0.04, False),
        # At 20 runs T 4% would be 3.6% at 25: |D| 1.5% away stays within 1.8%.
        (20, 0.035, 0.04, True),
    ],
)
def test_a_query_that_max_runs_could_not_move_off_the_boundary_settles_there(
    runs: int, diff: float, threshold: float, stop: bool
) -> None:
    import dataclasses

    # The process sets disagree about the direction, so none of these looks changed.
    series = dataclasses.replace(stats(diff, threshold), process_diffs=(diff * 2, -0.01))
    decision = should_stop(RULE, runs, 1.0, series)
    assert decision.stop is stop
    assert ("settled at the boundary" in decision.reason) is stop
    assert not should_stop(StopRule(futility=False), runs, 1.0, series).stop


def test_a_query_that_looks_changed_at_the_boundary_runs_on() -> None:
    # D +5.5%, T 4%, both process sets show it: rule 4 and the T/2 margin decide, not rule 7
    series = stats(0.055, 0.04)
    assert not should_stop(RULE, 9, 1.0, series).stop


@pytest.mark.parametrize("diff", [0.046, -0.046, 0.045])
def test_a_d_beyond_t_near_the_boundary_runs_on_rather_than_settling_there(diff: float) -> None:
    # A true change of about 10% at 7 runs: every pair positive, so T = |D| = 4.6%; |D| 0.4%
    # from the minimum effect would be within T/2 at 25 runs too, but a D at least T is not
    # noise that more runs would average out.
    import dataclasses

    threshold = abs(diff)  # these stats are the pooled method's: |D| and T as plain numbers
    series = dataclasses.replace(stats(diff, threshold), process_diffs=(diff * 2, -0.01))
    assert series.beyond_threshold
    decision = should_stop(RULE, 7, 1.0, series)
    assert not decision.stop
    assert "at least T" in decision.reason
    # The same D just inside T settles at the boundary.
    inside = dataclasses.replace(series, threshold=threshold * 1.01)
    assert should_stop(RULE, 7, 1.0, inside).stop


def test_a_d_beyond_t_and_the_minimum_effect_that_one_process_set_misses_settles_there() -> None:
    # At 14 runs: D +5.4%, T 3.9%, process sets +5.9% and +4.8%. It does not look changed
    # (the second set is below the minimum effect), and rule 4 cannot settle it until both
    # sets agree; with |D| 0.4% from the minimum effect more runs cannot move it T/2 away, so
    # rule 7 settles it rather than running it to the cap.
    import dataclasses

    series = dataclasses.replace(stats(0.054, 0.039), process_diffs=(0.059, 0.048))
    assert series.beyond_threshold
    decision = should_stop(RULE, 14, 1.0, series)
    assert decision.stop
    assert "settled at the boundary" in decision.reason
    # Below the minimum effect, the pooled method's D beyond T is still exempt: the change
    # may be larger. The paired statistic's is not: its T is the distance to its interval.
    below = dataclasses.replace(series, diff=0.046, process_diffs=(0.05, 0.042))
    assert below.beyond_threshold
    assert not should_stop(RULE, 14, 1.0, below).stop
    paired = dataclasses.replace(below, method=PAIRED)
    assert "settled at the boundary" in should_stop(RULE, 14, 1.0, paired).reason


@pytest.mark.parametrize(
    ("runs", "spent", "disturbed", "stops"),
    [
        (10, 1.0, 2, True),  # 20% of the pairs: the verdict rests on undisturbed runs
        (10, 1.0, 3, False),  # 30%: more runs
        (25, 1.0, 20, True),  # max runs: no more
        (10, 30.0, 9, True),  # the query's budget: no more
    ],
)
def test_a_query_whose_pairs_met_interference_runs_on_until_they_are_a_quarter(
    runs: int, spent: float, disturbed: int, stops: bool
) -> None:
    rule = StopRule()
    settled = StopDecision(True, "settled: T 3.0%, D +0.1%")
    decision = hold_for_interference(rule, runs, spent, disturbed, settled)
    assert decision.stop is stops
    if not stops:
        assert f"{disturbed} of {runs} pairs coincided with interference" in decision.reason
    running = StopDecision(False, "T 9% above the target 5%")
    assert hold_for_interference(rule, runs, spent, disturbed, running) is running


def test_the_study_variant_extends_a_promising_change_at_the_cap_and_nothing_else() -> None:
    import dataclasses

    # At 24 runs: D +8.6%, T 9%, p 0.032 (a true +10.5% the known-change benchmark missed).
    near = dataclasses.replace(paired(0.086, 0.09, p_value=0.032), process_diffs=(0.094, 0.078))
    default = StopRule(fdr_q=0.05, queries=152)
    assert should_stop(default, 24, 5.0, near).reason == "reached 24 runs"
    variant = dataclasses.replace(default, promising_p=0.05)
    decision = should_stop(variant, 24, 5.0, near)
    assert not decision.stop and "not yet significant: extended to 40 runs" in decision.reason
    assert not should_stop(variant, 30, 7.0, near).stop  # the extension runs on
    assert should_stop(variant, 40, 9.0, near).reason == "reached 40 runs (extended)"
    # Not for p above the level, |D| below the minimum effect, one process set below it, or
    # before the cap.
    for other in (
        dataclasses.replace(near, p_value=0.06),
        dataclasses.replace(paired(0.04, 0.03, p_value=0.02), process_diffs=(0.04, 0.04)),
        dataclasses.replace(near, process_diffs=(0.15, 0.02)),
    ):
        assert should_stop(variant, 24, 5.0, other).reason == "reached 24 runs"
    assert "extended" not in should_stop(variant, 22, 5.0, near).reason
