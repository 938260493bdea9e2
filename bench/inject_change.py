"""The adaptive stop rule against a change of known size, over this machine's real noise.

The known-change benchmark (bench_known_change.py) uses a real patch, whose effect on some
queries moves with the hour: a long truth measured in one hour disagrees with a run in
another on a few queries, whatever the stop rule does. This benchmark takes that variable
out. It keeps each query's real pair-to-pair noise from a long run and replaces its change
with one of known size:

- per query, the log ratios r_i = ln(patched_i / reference_i) of the source run are centred
  on their 25% trimmed mean (the source's own change is removed) and shifted by ln(1 + shift);
- a simulated run draws each query's pairs from those at random (with replacement, seeded),
  in order, and the stop rule of compare/stopping.py decides after every pair, with the
  discovery count of the simulated run so far, exactly as in a live run;
- at each query's stop, compare's per-query rule (significant: the 99% interval beyond the
  1% margin, p <= 0.01; |D| >= the minimum effect, every process set alike) and then
  Benjamini-Hochberg over the simulated run's final p-values give the verdict.

With --shift 0.10 the share of queries found changed is the rule's recall on a true 10%
change; with --shift 0 every query found changed is a false positive (the A/A rate of the
rule over resampled pairs). It also prints the client time against 15 pairs of the same
sequences. No server is started; statistics run in chDB as in a live run.

--own-change keeps each query's own change (its centre) instead of one shift for all: a
simulated known-change run whose truth is the source's, scored as bench_known_change.py
scores (recall on true changes of at least 10%, wrong direction, flags below 2%).
--noise-scale K multiplies each centred log ratio by K before the shift: the same queries on
a machine with K times this one's pair-to-pair noise, for how the time ratio of the rule
depends on the machine's noise rather than on the rule.
--promising-p P also extends to 40 runs a query that at 24 runs has |D| of at least the minimum
effect on every process set and p at most P but is not yet significant (a study variant of
the stop rule's rule 5, off by default).
--margin M tests against a change of M on D's side instead of compare's 1% (0: against no
change), in the stop rule and the verdicts alike.

Usage: .venv/bin/python bench/inject_change.py RUN [--shift 0.10 | --own-change]
                                                  [--noise-scale 1.0] [--reps 2] [--seed 7]
                                                  [--margin 0.01] [--promising-p P]
  RUN: a run with many pairs a query (e.g. a 41-run truth: `chperf run --runs 41`)
"""

from __future__ import annotations

import argparse
import collections
import math
import random
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# Run as a script (`python bench/<name>.py`): the repository root holds the `bench` package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from artifacts.manifest import read_manifest
from bench.replay_stops import add_promising_p, stop_points
from bench.runs import LARGE, SMALL, Key, run_pairs, side_times
from compare.blocked import MARGIN
from compare.fdr import FDR_Q, benjamini_hochberg
from compare.interim import InterimJudge
from compare.randomization import SeriesStats
from compare.stopping import StopRule
from compare.verdict import Thresholds, not_on_every_process
from runner.measure import samples_of

FIXED = 15
MIN_EFFECT, UNSTABLE = 0.05, 0.10


@dataclass(frozen=True)
class Outcome:
    runs: int
    reason: str
    stats: SeriesStats | None
    client_seconds: float  # both sides, the pairs the rule used
    fixed_seconds: float  # both sides, the first FIXED pairs of the same sequence


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run", type=Path, help="a run with many pairs a query")
    parser.add_argument("--shift", type=float, default=0.10, help="the injected change")
    parser.add_argument("--reps", type=int, default=2, help="simulated runs")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--own-change", action="store_true", help="each query keeps its change")
    parser.add_argument("--noise-scale", type=float, default=1.0, help="noise times this")
    parser.add_argument(
        "--margin", type=float, default=MARGIN, help="the paired test's margin (0: none)"
    )
    add_promising_p(parser)
    args = parser.parse_args()
    sources = run_pairs(args.run)
    shifts = {
        k: math.expm1(centre_of(v)) if args.own_change else args.shift for k, v in sources.items()
    }
    sets = int((read_manifest(args.run).get("options") or {}).get("processes") or 1)
    rule = StopRule(fdr_q=FDR_Q, queries=len(sources), promising_p=args.promising_p)
    rng = random.Random(args.seed)
    totals: collections.Counter[str] = collections.Counter()
    judge = InterimJudge(Thresholds(MIN_EFFECT, UNSTABLE), margin_log=math.log1p(args.margin))
    try:
        for rep in range(args.reps):
            sequences = {
                k: draw(v, shifts[k], rule.extended_runs, rng, args.noise_scale)
                for k, v in sources.items()
            }
            outcomes = simulate(rule, sequences, judge, sets)
            counts = judge_run(outcomes, shifts)
            print(f"run {rep + 1}: " + summary(counts))
            totals.update(counts)
    finally:
        judge.close()
    change = "each query's own change" if args.own_change else f"shift {args.shift:+.1%}"
    print(f"{args.reps} simulated runs of {len(sources)} queries, {change}, noise x "
          f"{args.noise_scale:g}: " + summary(totals))  # fmt: skip


def draw(
    pairs: Sequence[tuple[float, float]],
    shift: float,
    length: int,
    rng: random.Random,
    noise_scale: float = 1.0,
) -> list[tuple[float, float]]:
    """`length` pairs drawn with replacement from `pairs`, their change replaced by `shift`
    and their spread around it multiplied by `noise_scale`."""
    usable = [(r, p) for r, p in pairs if r > 0 and p > 0]
    if not usable:
        return []
    centre = centre_of(usable)
    out = []
    for _ in range(length):
        r, p = usable[rng.randrange(len(usable))]
        log = (math.log(p / r) - centre) * noise_scale + math.log1p(shift)
        out.append((r, r * math.exp(log)))
    return out


def centre_of(pairs: Sequence[tuple[float, float]]) -> float:
    """The centre of the pairs' log ratios ln(patched / reference), their midmean (25%
    trimmed a side): what `draw` replaces by the shift (0 if no pair has both times above 0)."""
    logs = sorted(math.log(p / r) for r, p in pairs if r > 0 and p > 0)
    k = len(logs) // 4
    return statistics.fmean(logs[k : len(logs) - k]) if logs else 0.0


def simulate(
    rule: StopRule,
    sequences: dict[Key, list[tuple[float, float]]],
    judge: InterimJudge,
    sets: int,
) -> dict[Key, Outcome]:
    """Each query in order, as a live run measures them, with the run's discovery count."""
    outcomes = {}
    for stop in stop_points(rule, {k: p for k, p in sequences.items() if p}, judge, sets):
        pairs = sequences[stop.key]
        stats = stop.stats
        if stats is None:  # the final verdict needs the statistics at the stop
            stats = judge.stats(samples_of(side_times(pairs[: stop.runs]), sets))
        outcomes[stop.key] = Outcome(
            stop.runs,
            stop.reason or "ran out of pairs",
            stats,
            sum(r + p for r, p in pairs[: stop.runs]),
            sum(r + p for r, p in pairs[:FIXED]),
        )
    return outcomes


def judge_run(
    outcomes: dict[Key, Outcome], shift: float | dict[Key, float]
) -> collections.Counter[str]:
    """Verdicts of one simulated run: the per-query rule, then BH over all its p-values.
    `shift`: the true change of every query, or of each query."""
    keys = [k for k, o in outcomes.items() if o.stats is not None and o.stats.diff is not None]
    found = benjamini_hochberg([_p_value(outcomes[k]) for k in keys])
    counts: collections.Counter[str] = collections.Counter()
    for key, discovered in zip(keys, found.discovered, strict=True):
        outcome = outcomes[key]
        stats = outcome.stats
        assert stats is not None and stats.diff is not None
        changed = (
            discovered
            and stats.significant
            and abs(stats.diff) >= MIN_EFFECT
            and not not_on_every_process(stats, stats.diff, MIN_EFFECT)
        )
        true = shift[key] if isinstance(shift, dict) else shift
        right = changed and (true == 0 or (stats.diff > 0) == (true > 0))
        counts["queries"] += 1
        counts["changed"] += changed
        counts["right direction"] += right
        counts["wrong direction"] += changed and not right
        counts["large"] += abs(true) >= LARGE
        counts["large found"] += abs(true) >= LARGE and right
        counts["small flagged"] += abs(true) < SMALL and changed
        unstable = not changed and (stats.threshold or 0.0) >= UNSTABLE
        counts["unstable"] += unstable
        counts["futility"] += "out of reach" in outcome.reason
        counts["runs"] += outcome.runs
        counts["client_us"] += round(outcome.client_seconds * 1e6)
        counts["fixed_us"] += round(outcome.fixed_seconds * 1e6)
    return counts


def _p_value(outcome: Outcome) -> float:
    assert outcome.stats is not None
    return outcome.stats.p_value


def summary(counts: collections.Counter[str]) -> str:
    queries = max(counts["queries"], 1)
    ratio = counts["client_us"] / max(counts["fixed_us"], 1)
    return (
        f"changed {counts['changed']}/{counts['queries']} ({counts['changed'] / queries:.1%}), "
        f"wrong direction {counts['wrong direction']}, unstable {counts['unstable']}, "
        f"stopped by futility {counts['futility']}, mean runs {counts['runs'] / queries:.1f}, "
        f"client time / {FIXED} runs {ratio:.2f}; recall on true >= {LARGE:.0%}: "
        f"{counts['large found']}/{counts['large']}, flagged with true < {SMALL:.0%}: "
        f"{counts['small flagged']}"
    )


if __name__ == "__main__":
    main()
