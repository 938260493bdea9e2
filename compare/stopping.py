"""The adaptive stop rule: how many runs a side a query gets. Pure. After each run from
`min_runs` on, RULES, tried in order, decide whether more runs can still change the verdict.

Each rule's reasoning: docs/method.md, "The adaptive stop rule". Error rates are measured by
bench/bench_aa.py, bench/bench_known_change.py, bench/replay_stops.py, bench/inject_change.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

from compare.paired import PAIRED
from compare.randomization import SeriesStats
from compare.verdict import MIN_EFFECT, UNSTABLE_THRESHOLD, not_on_every_process

# 6 pairs, three whole blocks: the first count at which the paired test can decide (216
# arrangements, smallest p 2/216), and its interval is narrower than at 7 pairs.
MIN_RUNS = 6
# Beyond 24 runs T shrinks only slowly; at 20, 3 of 18 true changes >= 10% were missed
# (bench/replay_stops.py). Even, like every look.
MAX_RUNS = 24
# Per query, both sides' client time together: a 1 s query stops at 15 runs per side.
QUERY_BUDGET_S = 30.0
# Rule 5: queries just above the unstable threshold at max_runs run on to 1.6 x max_runs.
EXTENSION = 1.6
# Rule 6: T over D's standard error (D's standard error is T / Z_THRESHOLD): for the paired
# statistic's exact interval the median ratio is 2.8-3.35 from 24 pairs down to 6 under normal
# noise (docs/method.md).
Z_THRESHOLD = 3.0
# Rule 6 gives up on a query whose chance of ending changed (conditional power) is below this.
FUTILITY_POWER = 0.10


# A query whose pairs coincided with interference (runner/monitor.py) in more than this share
# runs on: a verdict then rests mostly on runs no neighbour disturbed.
DISTURBED_SHARE = 0.25


# A look after every whole block of two pairs (during an extension for rule 4 only). With a
# block cut in half the interval is wider than without that half block (its one cross
# difference can widen the interval, the critical rank stays), so a look there settles almost
# nothing the look before it did not.
CHECK_EVERY = 2


@dataclass(frozen=True)
class StopRule:
    min_runs: int = MIN_RUNS
    max_runs: int = MAX_RUNS
    target: float = MIN_EFFECT  # T at which a verdict can settle; default: the minimum effect
    min_effect: float = MIN_EFFECT
    budget_seconds: float = QUERY_BUDGET_S
    fdr_q: float | None = None  # false-discovery rate of compare's BH step; None: off
    queries: int = 1  # m: the number of queries in the run, for the discovery level
    unstable_threshold: float | None = UNSTABLE_THRESHOLD  # rules 5 and 6; None: neither
    futility: bool = True  # rules 6 and 7
    futility_power: float = FUTILITY_POWER  # rule 6: conditional power below this is futile
    # Rule 6 also above the unstable threshold from this many runs on (None: never): a study
    # variant (bench/replay_stops.py), off because such queries then end unstable.
    unstable_futility_from: int | None = None
    # Rule 5 also for a query that looks like a change at max_runs but is not yet significant:
    # |D| >= the minimum effect on every process set and p at most this (None: never). A study
    # variant (bench/replay_stops.py, bench/inject_change.py), off by default.
    promising_p: float | None = None

    @property
    def extended_runs(self) -> int:
        """The most runs a query can get (rule 5)."""
        if self.unstable_threshold is None:
            return self.max_runs
        return 2 * math.ceil(self.max_runs * EXTENSION / 2)  # whole blocks


@dataclass(frozen=True)
class StopDecision:
    stop: bool
    reason: str
    discovery: bool = False  # stopped as changed with an FDR-safe p-value (rule 4)


@dataclass(frozen=True)
class Look:
    """What the rules see after `runs` runs a side: client time spent on both sides, its
    statistics (None if not computable), and the queries already stopped as changed."""

    rule: StopRule
    runs: int
    spent_seconds: float
    stats: SeriesStats | None
    discoveries: int

    @property
    def looks_changed(self) -> bool:
        """|D| >= T on the method's scale, >= the minimum effect, on every server process set.
        Looser than `significant` (the interval beyond the margin): a query whose interval
        excludes 0 but not yet the margin runs on (rule 4) instead of settling unchanged."""
        s, rule = self.stats, self.rule
        if s is None or s.diff is None:
            return False
        return (
            s.beyond_threshold
            and abs(s.diff) >= rule.min_effect
            and not not_on_every_process(s, s.diff, rule.min_effect)
        )


Decide = Callable[[Look], StopDecision | None]


@dataclass(frozen=True)
class NamedRule:
    name: str
    why: str
    decide: Decide  # a decision, or None to leave it to the next rule


def should_stop(
    rule: StopRule,
    runs: int,
    spent_seconds: float,
    stats: SeriesStats | None,
    discoveries: int = 0,
) -> StopDecision:
    """The first of RULES that decides."""
    look = Look(rule, runs, spent_seconds, stats, discoveries)
    for named in RULES:
        decision = named.decide(look)
        if decision is not None:
            return decision
    raise AssertionError("the last rule always decides")


def _warm_up(look: Look) -> StopDecision | None:
    if look.runs < look.rule.min_runs:
        return StopDecision(False, f"fewer than {look.rule.min_runs} runs")
    return None


def _budget(look: Look) -> StopDecision | None:
    if look.spent_seconds >= look.rule.budget_seconds:
        return StopDecision(True, f"used the {look.rule.budget_seconds:.0f} s time budget")
    return None


def _extended(look: Look) -> StopDecision | None:
    """Rule 5's extension runs to its end; only rule 4 can end it sooner, as it can at any
    look: a p-value that is already a BH discovery."""
    rule, runs = look.rule, look.runs
    if runs <= rule.max_runs:
        return None
    if runs >= rule.extended_runs:
        return StopDecision(True, f"reached {runs} runs (extended)")
    s = look.stats
    settled = _discovery(look) if s is not None and s.diff is not None else None
    return settled or StopDecision(False, f"extended to {rule.extended_runs} runs")


def _max_runs(look: Look) -> StopDecision | None:
    rule, stats = look.rule, look.stats
    if look.runs != rule.max_runs:
        return None
    if extend(rule, look.runs, stats):
        assert stats is not None and stats.threshold is not None
        return StopDecision(
            False,
            f"T {stats.threshold:.1%} just above the unstable threshold: "
            f"extended to {rule.extended_runs} runs",
        )
    if promising(rule, look.runs, stats):
        assert stats is not None and stats.diff is not None
        return StopDecision(
            False,
            f"D {stats.diff:+.1%} on every process set, p {stats.p_value:.2g}, not yet "
            f"significant: extended to {rule.extended_runs} runs",
        )
    return StopDecision(True, f"reached {rule.max_runs} runs")


def _no_statistics(look: Look) -> StopDecision | None:
    s = look.stats
    if s is None or s.diff is None or s.threshold is None:
        return StopDecision(False, "no statistics yet")
    return None


def _discovery(look: Look) -> StopDecision | None:
    rule, s = look.rule, look.stats
    assert s is not None and s.diff is not None
    if not (look.looks_changed and rule.fdr_q is not None and s.significant):
        return None
    level = discovery_level(rule, look.discoveries)
    return None if s.p_value > level else _settled_changed(s, level)


def _noisy(look: Look) -> StopDecision | None:
    rule, s = look.rule, look.stats
    assert s is not None and s.diff is not None and s.threshold is not None
    if s.threshold <= rule.target:
        return None
    if futile(rule, look.runs, s):
        need = change_need(rule, look.runs, s.threshold)
        return StopDecision(
            True,
            f"settled: T {s.threshold:.1%} above the target, but a change is out of reach: "
            f"|D| {abs(s.diff):.1%} would have to reach {need:.1%} by {rule.max_runs} "
            f"runs (conditional power below {rule.futility_power:.0%})",
        )
    return StopDecision(False, f"T {s.threshold:.1%} above the target {rule.target:.1%}")


def _near_boundary(look: Look) -> StopDecision | None:
    rule, s = look.rule, look.stats
    assert s is not None and s.diff is not None and s.threshold is not None
    if abs(abs(s.diff) - rule.min_effect) >= s.threshold / 2:
        return None
    if boundary_futile(rule, look.runs, s) and not look.looks_changed:
        reach = boundary_reach(rule, look.runs, s.threshold)
        return StopDecision(
            True,
            f"settled at the boundary: |D| {abs(s.diff):.1%} is within T/2 of the minimum "
            f"effect and would still be with T {reach:.1%} at {rule.max_runs} runs",
        )
    if s.beyond_threshold:
        return StopDecision(
            False,
            f"|D| {abs(s.diff):.1%} within T/2 of the minimum effect and at least T "
            f"{s.threshold:.1%}",
        )
    return StopDecision(False, f"|D| within T/2 of the minimum effect {rule.min_effect:.1%}")


def _not_yet_significant(look: Look) -> StopDecision | None:
    s = look.stats
    assert s is not None and s.diff is not None
    if not look.looks_changed or s.significant:
        return None
    figures = f"D {s.diff:+.1%}, p {s.p_value:.2g}"
    return StopDecision(False, f"looks changed, not yet significant ({figures})")


def _above_discovery_level(look: Look) -> StopDecision | None:
    rule, s = look.rule, look.stats
    assert s is not None and s.diff is not None
    if not look.looks_changed or rule.fdr_q is None:
        return None
    level = discovery_level(rule, look.discoveries)
    if s.p_value <= level:
        return _settled_changed(s, level)
    figures = f"D {s.diff:+.1%}, p {s.p_value:.2g}, discovery level {level:.2g}"
    return StopDecision(False, f"looks changed, p above the discovery level ({figures})")


def _settled_changed(s: SeriesStats, level: float) -> StopDecision:
    """Rule 4: the p-value is at most the discovery level, so the change is a BH discovery."""
    assert s.diff is not None
    figures = f"D {s.diff:+.1%}, p {s.p_value:.2g}, discovery level {level:.2g}"
    return StopDecision(True, f"settled changed ({figures})", discovery=True)


def _settled(look: Look) -> StopDecision | None:
    s = look.stats
    assert s is not None and s.diff is not None and s.threshold is not None
    return StopDecision(True, f"settled: T {s.threshold:.1%}, D {s.diff:+.1%}")


# In order: the first rule that decides, decides. docs/method.md explains each.
RULES: tuple[NamedRule, ...] = (
    NamedRule("warm-up", "below min_runs no statistic can decide", _warm_up),
    NamedRule("budget", "rule 1: a long query stops when it has used its time", _budget),
    NamedRule("extension", "rule 5: an extended query runs to extended_runs", _extended),
    NamedRule("max runs", "rules 1 and 5: stop, or extend when T is just too high", _max_runs),
    NamedRule("no statistics", "nothing to decide on yet", _no_statistics),
    NamedRule("discovery", "rule 4: a p-value that is already a BH discovery", _discovery),
    NamedRule("noisy", "rules 2 and 6: T above the target; futility ends hopeless ones", _noisy),
    NamedRule(
        "boundary", "rules 3 and 7: |D| near the minimum effect runs on, unless futile",
        _near_boundary,
    ),
    NamedRule(
        "not yet significant", "rule 4: a change must pass compare's per-query rule too",
        _not_yet_significant,
    ),
    NamedRule(
        "discovery level", "rule 4: a change stops only as a BH discovery",
        _above_discovery_level,
    ),
    NamedRule("settled", "rule 3: |D| is T/2 or more from the minimum effect", _settled),
)  # fmt: skip


def extend(rule: StopRule, runs: int, stats: SeriesStats | None) -> bool:
    """Rule 5: T above the unstable threshold, but not by more than 1/sqrt(runs) scaling to
    extended_runs can make up."""
    limit = rule.unstable_threshold
    if limit is None or stats is None or stats.threshold is None:
        return False
    if rule.extended_runs <= runs:
        return False
    return limit <= stats.threshold <= limit * math.sqrt(rule.extended_runs / runs)


def promising(rule: StopRule, runs: int, stats: SeriesStats | None) -> bool:
    """The study variant of rule 5 (`promising_p`): at max_runs, |D| at least the minimum
    effect on every process set and p at most `promising_p`, but not significant."""
    level = rule.promising_p
    if level is None or rule.unstable_threshold is None or rule.extended_runs <= runs:
        return False
    if stats is None or stats.diff is None or stats.significant:
        return False
    return (
        abs(stats.diff) >= rule.min_effect
        and stats.p_value <= level
        and not not_on_every_process(stats, stats.diff, rule.min_effect)
    )


def futile(rule: StopRule, runs: int, stats: SeriesStats) -> bool:
    """Rule 6: T above the target but below the unstable threshold, and a change at max_runs
    has conditional power below `futility_power` if the current D is the true change."""
    limit = rule.unstable_threshold
    if not rule.futility or limit is None or stats.diff is None or stats.threshold is None:
        return False
    if runs >= rule.max_runs:
        return False
    if stats.threshold >= limit and (
        rule.unstable_futility_from is None or runs < rule.unstable_futility_from
    ):
        return False
    spread = future_spread(rule, runs, stats.threshold)
    z = NormalDist().inv_cdf(1 - rule.futility_power)  # 1.2816 at the default 10%
    return abs(stats.diff) + z * spread < change_need(rule, runs, stats.threshold)


def future_spread(rule: StopRule, runs: int, threshold: float) -> float:
    """The standard deviation of D at max_runs around the current D: the remaining
    max_runs - runs pairs' share of the noise, with D's standard error now T / Z_THRESHOLD."""
    error = threshold / Z_THRESHOLD
    return error * math.sqrt(runs * (rule.max_runs - runs)) / rule.max_runs


def change_need(rule: StopRule, runs: int, threshold: float) -> float:
    """The |D| a change would need at max_runs: T there, if T keeps shrinking like
    1/sqrt(runs), or the minimum effect, whichever is larger."""
    return max(boundary_reach(rule, runs, threshold), rule.min_effect)


def boundary_reach(rule: StopRule, runs: int, threshold: float) -> float:
    """T at max_runs if it keeps shrinking like 1/sqrt(runs) from `threshold` at `runs`."""
    return threshold * math.sqrt(runs / rule.max_runs)


def boundary_futile(rule: StopRule, runs: int, stats: SeriesStats) -> bool:
    """Rule 7: |D| so close to the minimum effect that max_runs would not move it T/2 away.
    With the pooled method, not for a D beyond T below the minimum effect: with every run of
    one side beyond the other's, its T is about |D|, so "T below the target" only says |D| is,
    and the change may be larger. The paired statistic's T is the distance from D to its
    interval's end, so it has no such case."""
    if not rule.futility or stats.diff is None or stats.threshold is None:
        return False
    if stats.method != PAIRED and stats.beyond_threshold and abs(stats.diff) < rule.min_effect:
        return False
    distance = abs(abs(stats.diff) - rule.min_effect)
    return distance < boundary_reach(rule, runs, stats.threshold) / 2


def discovery_level(rule: StopRule, discoveries: int) -> float:
    assert rule.fdr_q is not None
    return (discoveries + 1) * rule.fdr_q / max(rule.queries, 1)


def is_checkpoint(rule: StopRule, runs: int) -> bool:
    """Whether to compute statistics after `runs` runs per side."""
    if runs == rule.max_runs:
        return True  # rule 5 decides there
    if runs > rule.max_runs:  # during an extension, rule 4 alone
        return runs < rule.extended_runs and (runs - rule.max_runs) % CHECK_EVERY == 0
    return rule.min_runs <= runs and (runs - rule.min_runs) % CHECK_EVERY == 0


def hold_for_interference(
    rule: StopRule, runs: int, spent_seconds: float, disturbed: int, decision: StopDecision
) -> StopDecision:
    """A stop, unless more than DISTURBED_SHARE of the pairs so far coincided with
    interference and neither max_runs nor the query's budget is reached: then more runs."""
    if not decision.stop or disturbed <= DISTURBED_SHARE * runs:
        return decision
    if runs >= rule.max_runs or spent_seconds >= rule.budget_seconds:
        return decision
    return StopDecision(
        False,
        f"{disturbed} of {runs} pairs coincided with interference (more than "
        f"{DISTURBED_SHARE:.0%}): more runs",
    )
