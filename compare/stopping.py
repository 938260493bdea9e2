"""The adaptive stop rule: how many ABBA runs a query gets (issue 8). Pure and tested.

After each run (one execution per side) from `min_runs` on, the interim statistics of the
query's client times decide whether more runs can still change its verdict:

1. Stop at `max_runs`, or when the query has used its time budget (both sides' client time
   together): long queries get fewer runs, never fewer than `min_runs`.
2. Keep running while T > the target precision (default: the minimum effect): the query
   cannot yet tell a change of the size that matters from noise. Except (rule 6, futility
   by conditional power: "stochastic curtailment", Lan, Simon & Halperin, Communications in
   Statistics C 1(3), 1982) when T is below the unstable threshold and a change is out of
   reach by `max_runs`. There a change would need |D| >= max(T_max, minimum effect), with
   T_max = T * sqrt(runs / max_runs) (T shrinks like 1/sqrt(runs)). Take the current D as
   the true change: D at max_runs is D plus the remaining pairs' share of the noise, with
   standard deviation s * sqrt(runs * (max_runs - runs)) / max_runs, s = T / 2.576 the
   standard error of D now (T is the 0.99 two-sided quantile of D's null distribution).
   When |D| + 1.2816 of those standard deviations is still below the need, the chance of
   ending changed is below 10%, and the query settles as unchanged (its equivalence test
   will usually say "inconclusive": the report shows that it could not rule out a change
   of min-effect size). Futility never flags a change and never ends a query unstable, so
   it cannot add false positives or unstable verdicts; what it can cost is recall, which
   bench/replay_stops.py measures: on the four 41-run known-change truths of sessions 5-9
   it kept recall, wrong-direction and below-2% counts as they were and took the client
   time from 0.63/0.83/0.88/0.83 of fixed 15 to 0.60/0.74/0.76/0.73. The rule it replaced
   (|D| + T/2 below the minimum effect) implies this one before max_runs.
3. With T at or below the target, stop once |D| is at least T/2 away from the minimum
   effect: a further move of D by half the current noise floor would not flip the verdict.
   Queries whose |D| sits near the minimum effect run on, up to `max_runs`, except (rule 7)
   those that would still sit within T/2 of it at `max_runs`, with T shrunk like
   1/sqrt(runs): |D| - min effect below T * sqrt(runs / max_runs) / 2. More runs cannot settle
   such a query; its true change is about the minimum effect, and either verdict describes
   it (the report shows D and its CI). Not for a query that looks changed (rule 4 decides
   those), nor for one whose |D| is at least T but below the minimum effect: its D is beyond
   what the noise explains, so T says nothing about where D will settle. With every pair
   pointing the same way (complete separation), T is |D| itself, because no sign vector
   gives a larger trimmed mean than the observed one; "T <= target" then only says
   |D| <= target. kc23's adaptive run stopped agg_sum_avg #5 (true +10.7%) this way at 7
   runs, D +4.6% with all 7 pairs positive. bench/inject_change.py over kc23's truth (4
   simulated runs each): with +7% injected in every query, 400 of 604 found changed against
   382 without this exemption; +10%: 533 against 532; no change: 2 of 604 either way.
   A |D| beyond both T and the minimum effect does not look changed only when a server
   process set misses it (compare/verdict.py); rule 4 cannot settle it until the sets agree,
   so it is not exempt: kc24's live run ran three such queries (true +3.9% to +5.3%) to 25
   runs. replay_stops.py over kc24's adaptive run: client time 536.1 s against 548.8 s, the
   same recall (30/31), wrong-direction (0) and below-2% (0) counts, and type_conversion #6
   (true +4.1%) no longer slower. The price, inject_change.py as above: +7% found in 393 of
   604 against 400 (a true +7% drawn near 5% settles instead of waiting for both sets);
   +10%: 533 either way; no change: 2 either way; kc23's replay 564.5 s against 564.6 s.
   Rule 7 itself, bench/replay_stops.py on session 7's 41-run truth: client time
   0.63 of fixed 15 against 0.71, with the same recall, wrong-direction and below-2%
   counts; on session 5's noisier truths 0.83 and 0.88 against 0.87 and 0.96, one fewer
   flag below 2%.
4. With false-discovery control on (`--fdr q`), a query that looks changed stops only once
   (and, whatever its T, as soon as) its randomization p-value is at most (c + 1) * q / m,
   where m is the number of queries of the run and c the number that already stopped this
   way. Every query stopped as
   changed then has p <= C * q / m for the final count C, so all of them are
   Benjamini-Hochberg discoveries at the end, whatever the other p-values. "Looks changed":
   |D| >= T on the method's own scale (the paired method's is logarithmic, so a speedup to
   0.67x counts as far out as a slowdown to 1.5x), |D| >= the minimum effect, and compare's
   rule that every server process set shows the change on its own.
   Without this, a lone change would stop at 7 runs, where no p-value can be below 0.0156
   (paired; 0.0117 pooled), and compare's BH step would then drop it (see
   compare/FORMATS.md, "False-discovery control").
   A query stops this way only when compare's per-query rule holds too (`significant`: for
   the paired method |D| >= T and p <= 1%): with more than 0.01 m / q discoveries (30 of 151
   queries at q = 0.05) the discovery level passes 1%, and a query stopped at, say, p 0.03
   would be a BH discovery that compare still calls "unchanged, not significant".
   bench/inject_change.py found it: with a +10% change injected into every query, 60 of 151
   stopped that way. Outside rule 4 too, a query that looks changed but is not yet
   significant runs on instead of settling (with --fdr off it would settle as unchanged).
5. At `max_runs`, a query whose T is above the unstable threshold (default 10%) but close
   enough that `extended_runs` (1.6 x max_runs: 40) would bring it below, assuming T shrinks
   like 1/sqrt(runs), is extended: it runs on to `extended_runs` (or its time budget), with
   no further looks. The decision to extend uses only T, never D, and once made it is not
   revisited, so it cannot stop a query at a lucky moment; it only spends runs where the
   verdict would otherwise be "unstable" by a small margin.

Looking at the data repeatedly and stopping early changes error rates; the A/A false
positive rate of this rule is measured by bench/bench_aa.py, its recall and machine time
by bench/bench_known_change.py; nothing is assumed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from compare.randomization import SeriesStats
from compare.verdict import MIN_EFFECT, UNSTABLE_THRESHOLD, not_on_every_process

# 7 runs per side: the paired method has 2^7 = 128 sign vectors; the pooled one C(14, 7) =
# 3432 splits. bench/replay_stops.py on a 41-run known-change run: starting at 5 runs saved
# 5% of the machine time but settled two queries with true slowdowns of 7-8% as unchanged
# after their first 5 pairs; ClickHouse's own check also found fewer runs too noisy
# (METHOD.md §7).
MIN_RUNS = 7
# 25 runs per side: beyond this T shrinks like 1/sqrt(n) only slowly; near-boundary queries
# get up to 25 (rule 5: 40 when T is just above the unstable threshold), against the fixed
# mode's 15. The same replay with 20: 3 of 18 true changes >= 10% missed, against 0 of 18.
MAX_RUNS = 25
# Per query, both sides' client time together: a 1 s query stops at 15 runs per side.
QUERY_BUDGET_S = 30.0
# Rule 5: queries just above the unstable threshold at max_runs run on to 1.6 x max_runs.
EXTENSION = 1.6
# Rule 6: the z of the 99% two-sided quantile T (D's standard error is T / Z_THRESHOLD), and
# the z of a move that happens with probability 10% (conditional power below 10%: futile).
Z_THRESHOLD = 2.5758
Z_FUTILITY = 1.2816


# Statistics are computed after every run from min_runs to max_runs (none during an
# extension). The paired p-value floor halves with each pair (2/2^n, compare/paired.py), so a
# clear change can settle one run earlier than with a look every second run; one chDB
# evaluation costs ~20-30 ms, against ~2 x 50-500 ms for the pair it follows in this suite.
# bench/replay_stops.py on the 41-run known-change truth of session 5: client time 0.96 of
# fixed 15 against 1.01 when looking every second run, the same recall.
CHECK_EVERY = 1


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

    @property
    def extended_runs(self) -> int:
        """The most runs a query can get (rule 5)."""
        if self.unstable_threshold is None:
            return self.max_runs
        return math.ceil(self.max_runs * EXTENSION)


@dataclass(frozen=True)
class StopDecision:
    stop: bool
    reason: str
    discovery: bool = False  # stopped as changed with an FDR-safe p-value (rule 4)


def should_stop(
    rule: StopRule,
    runs: int,
    spent_seconds: float,
    stats: SeriesStats | None,
    discoveries: int = 0,
) -> StopDecision:
    """`runs` completed on each side; `stats` of client time, None if not computable;
    `discoveries`: queries of this run already stopped as changed."""
    if runs < rule.min_runs:
        return StopDecision(False, f"fewer than {rule.min_runs} runs")
    if spent_seconds >= rule.budget_seconds:
        return StopDecision(True, f"used the {rule.budget_seconds:.0f} s time budget")
    if runs > rule.max_runs:  # only reached when rule 5 extended the query
        if runs >= rule.extended_runs:
            return StopDecision(True, f"reached {runs} runs (extended)")
        return StopDecision(False, f"extended to {rule.extended_runs} runs")
    if runs == rule.max_runs:
        if extend(rule, runs, stats):
            assert stats is not None and stats.threshold is not None
            return StopDecision(
                False,
                f"T {stats.threshold:.1%} just above the unstable threshold: "
                f"extended to {rule.extended_runs} runs",
            )
        return StopDecision(True, f"reached {rule.max_runs} runs")
    if stats is None or stats.diff is None or stats.threshold is None:
        return StopDecision(False, "no statistics yet")
    threshold, distance = stats.threshold, abs(abs(stats.diff) - rule.min_effect)
    # By magnitude, not `significant`: below 8 pairs the paired method cannot be significant
    # at 1% yet, and a change must run on rather than settle as unchanged.
    # ...and, with several server processes a side, on each of them (compare/verdict.py).
    # On the method's own scale: the paired T is exp(t) - 1, so a clear speedup (D -33%, T
    # +49%) is as far beyond T as the slowdown 1.5x, though |D| < T as plain numbers.
    looks_changed = (
        stats.beyond_threshold
        and abs(stats.diff) >= rule.min_effect
        and not not_on_every_process(stats, stats.diff, rule.min_effect)
    )
    if (
        looks_changed
        and rule.fdr_q is not None
        and stats.significant
        and stats.p_value <= discovery_level(rule, discoveries)
    ):
        # Rule 4 settles a change whatever T is: its p-value already makes it a discovery.
        level = discovery_level(rule, discoveries)
        figures = f"D {stats.diff:+.1%}, p {stats.p_value:.2g}, discovery level {level:.2g}"
        return StopDecision(True, f"settled changed ({figures})", discovery=True)
    if threshold > rule.target:
        if futile(rule, runs, stats):
            need = change_need(rule, runs, threshold)
            return StopDecision(
                True,
                f"settled: T {threshold:.1%} above the target, but a change is out of reach: "
                f"|D| {abs(stats.diff):.1%} would have to reach {need:.1%} by {rule.max_runs} "
                "runs (conditional power below 10%)",
            )
        return StopDecision(False, f"T {threshold:.1%} above the target {rule.target:.1%}")
    if distance < threshold / 2:
        if boundary_futile(rule, runs, stats) and not looks_changed:
            return StopDecision(
                True,
                f"settled at the boundary: |D| {abs(stats.diff):.1%} is within T/2 of the minimum "
                f"effect and would still be with T {boundary_reach(rule, runs, threshold):.1%} "
                f"at {rule.max_runs} runs",
            )
        if stats.beyond_threshold:
            return StopDecision(
                False,
                f"|D| {abs(stats.diff):.1%} within T/2 of the minimum effect and at least T "
                f"{threshold:.1%}",
            )
        return StopDecision(False, f"|D| within T/2 of the minimum effect {rule.min_effect:.1%}")
    if looks_changed and not stats.significant:
        # compare's per-query rule also needs the p-value (paired: at most 1%): settling now
        # would report "unchanged, not significant" for what looks like a change
        figures = f"D {stats.diff:+.1%}, p {stats.p_value:.2g}"
        return StopDecision(False, f"looks changed, not yet significant ({figures})")
    if looks_changed and rule.fdr_q is not None:
        level = discovery_level(rule, discoveries)
        figures = f"D {stats.diff:+.1%}, p {stats.p_value:.2g}, discovery level {level:.2g}"
        if stats.p_value > level:
            return StopDecision(False, f"looks changed, p above the discovery level ({figures})")
        return StopDecision(True, f"settled changed ({figures})", discovery=True)
    return StopDecision(True, f"settled: T {threshold:.1%}, D {stats.diff:+.1%}")


def extend(rule: StopRule, runs: int, stats: SeriesStats | None) -> bool:
    """Rule 5: T above the unstable threshold, but not by more than 1/sqrt(runs) scaling to
    extended_runs can make up."""
    limit = rule.unstable_threshold
    if limit is None or stats is None or stats.threshold is None:
        return False
    if rule.extended_runs <= runs:
        return False
    return limit <= stats.threshold <= limit * math.sqrt(rule.extended_runs / runs)


def futile(rule: StopRule, runs: int, stats: SeriesStats) -> bool:
    """Rule 6: T above the target but below the unstable threshold, and a change at max_runs
    has conditional power below 10% if the current D is the true change."""
    limit = rule.unstable_threshold
    if not rule.futility or limit is None or stats.diff is None or stats.threshold is None:
        return False
    if stats.threshold >= limit or runs >= rule.max_runs:
        return False
    spread = future_spread(rule, runs, stats.threshold)
    return abs(stats.diff) + Z_FUTILITY * spread < change_need(rule, runs, stats.threshold)


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
    """Rule 7: |D| so close to the minimum effect that max_runs would not move it T/2 away,
    and not a D beyond T below the minimum effect (with every pair on one side T is |D|: not
    noise to wait out, but possibly a larger change)."""
    if not rule.futility or stats.diff is None or stats.threshold is None:
        return False
    if stats.beyond_threshold and abs(stats.diff) < rule.min_effect:
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
    return rule.min_runs <= runs < rule.max_runs and (runs - rule.min_runs) % CHECK_EVERY == 0
