"""A known change: patched = the same server with the max_block_size 8192 overlay, which
slows some queries by 5-30% and leaves others alone.

1. Ground truth: a long fixed run (--runs 41) with the overlay; a query's true change is its D,
   unless the truth's server process sets disagree about it (opposite directions, one by at
   least 5%: bench/runs.py truth_undetermined): such queries are listed and left out.
2. An adaptive run and a fixed 15-run run with the same overlay.
Prints, for both: recall on queries whose true change is >= 10% (bar >= 95%), flags in the
wrong direction (bar 0), flags whose true change is < 2% (bar 0); the measured machine time
of adaptive / fixed-15 (bar <= 0.6: run.json measured_runs_seconds, and the sum of client
times), total wall times; where the adaptive and fixed-15 verdicts disagree; and what a
confirmation measured later would do: the fixed run follows the adaptive one by about the
length of a run, on new server processes, and an adaptive "changed" counts as confirmed when
the fixed run's D lies on the same side beyond the minimum effect.

A truth is itself a measurement: long truths taken hours apart disagree on some queries.
With --also-truth (other long runs of the same change, e.g. OUT/truth of earlier benches), it
also prints how far the truths are apart and the same counts against what all of them agree
on (bench/runs.py consensus): recall on queries >= 10% in every truth, flags opposite to a
direction every truth shows by >= 2%, flags on queries below 2% in every truth.

Usage: .venv/bin/python bench/bench_known_change.py [--tests DIR] [--out DIR] [--quick]
                                                   [--reuse-truth | --rescore]
                                                   [--also-truth DIR ...] [--pin-cpu CPUS]
                                                   [--interferer] [--adaptive-only]
                                                   [--renew-set]
  --quick: tests/data/runner_small with 11 ground-truth runs (a smoke run of a few minutes)
  --interferer: the adaptive and fixed runs beside stress-ng (bench/interferer.py)
  --adaptive-only: no fixed 15-run run (recall and errors of the adaptive mode alone)
  --renew-set: chperf run --renew-set for the adaptive and fixed runs (not the truth)
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any

# Run as a script (`python bench/<name>.py`): the repository root holds the `bench` package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.interferer import Interferer
from bench.runs import (
    CHANGED,
    LARGE,
    QUICK_TESTS,
    REPO,
    SMALL,
    Consensus,
    Key,
    RunResult,
    chperf_run,
    consensus,
    existing_run,
    pair_noise,
    same_pace_ratio,
    truth_spread,
    truth_undetermined,
)
from compare.noise import PAIRS

OVERLAY = REPO / "overlays" / "max_block_size_8192"
BAR_RECALL = 0.95
BAR_TIME_RATIO = 0.6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tests", type=Path, default=REPO / "perf_tests")
    parser.add_argument("--out", type=Path, default=Path("/tmp/chperf-bench-known-change"))
    parser.add_argument("--truth-runs", type=int, default=41)
    parser.add_argument("--quick", action="store_true", help="the small smoke suite")
    parser.add_argument(
        "--reuse-truth",
        action="store_true",
        help="judge OUT/truth of an earlier run again instead of measuring it (same suite)",
    )
    parser.add_argument(
        "--also-truth",
        type=Path,
        action="append",
        default=[],
        help="another long run of the same change: also score against what all truths agree on",
    )
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="judge all three runs of OUT again, measuring nothing (implies --reuse-truth)",
    )
    parser.add_argument(
        "--pin-cpu", default=None, metavar="CPUS", help="chperf run --pin-cpu, for every run made"
    )
    parser.add_argument(
        "--interferer",
        action="store_true",
        help="the adaptive and fixed runs beside a noisy neighbour (bench/interferer.py); "
        "the truth stays quiet",
    )
    parser.add_argument(
        "--adaptive-only",
        action="store_true",
        help="measure only the adaptive run (no fixed 15-run run: no measured-time ratio)",
    )
    parser.add_argument(
        "--renew-set",
        action="store_true",
        help="chperf run --renew-set for the adaptive and fixed runs (not the truth)",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=None,
        metavar="N",
        help="chperf run --processes N for the adaptive and fixed runs (not the truth)",
    )
    args = parser.parse_args()
    args.reuse_truth = args.reuse_truth or args.rescore
    tests = QUICK_TESTS if args.quick else args.tests
    truth_runs = 11 if args.quick else args.truth_runs
    overlay = ["--patched-config", str(OVERLAY)]
    overlay += ["--pin-cpu", args.pin_cpu] if args.pin_cpu else []
    if args.reuse_truth:
        truth_run = existing_run(args.out / "truth")
    else:
        truth_run = chperf_run(args.out / "truth", tests, [*overlay, "--runs", str(truth_runs)])
    fixed: RunResult | None = None
    if args.rescore:
        adaptive = existing_run(args.out / "adaptive")
        if not args.adaptive_only:
            fixed = existing_run(args.out / "fixed15")
    else:
        measured = [*overlay, "--renew-set"] if args.renew_set else overlay
        measured += ["--processes", str(args.processes)] if args.processes else []
        with Interferer() if args.interferer else contextlib.nullcontext():
            adaptive = chperf_run(args.out / "adaptive", tests, measured)
            if not args.adaptive_only:
                fixed = chperf_run(args.out / "fixed15", tests, [*measured, "--runs", "15"])
    truth = _true_changes(truth_run)
    undetermined = [k for k, q in truth_run.verdicts().items() if truth_undetermined(q)]
    for k in undetermined:
        q = truth_run.verdicts()[k]
        sets = ", ".join(f"{d:+.1%}" for d in q["process_diffs"])
        print(f"left out: {k[0]} #{k[1]}: the truth's process sets disagree ({sets}; D "
              f"{q['diff']:+.1%})")  # fmt: skip
    others = [_true_changes(existing_run(d)) for d in args.also_truth]
    if missing := set(adaptive.verdicts()) - set(truth_run.verdicts()):
        print(f"warning: the truth run lacks {len(missing)} of the queries measured here")
    print(f"ground truth: {truth_runs} runs a side, {len(truth)} measured queries with a "
          f"determined change ({len(undetermined)} left out), "
          f"{sum(abs(d) >= LARGE for d in truth.values())} with |change| >= {LARGE:.0%}, "
          f"{sum(abs(d) < SMALL for d in truth.values())} below {SMALL:.0%}")  # fmt: skip
    modes = (("adaptive", adaptive),) + ((("fixed 15", fixed),) if fixed else ())
    for name, run in modes:
        _print_accuracy(name, run, truth)
    if others:
        _print_consensus(args.also_truth, truth, others, modes)
    if fixed is None:
        print(f"adaptive client time over 15 runs a query at its own pace: "
              f"{same_pace_ratio(adaptive):.2f}; machine noise {pair_noise(adaptive):.3f}; "
              f"wall {adaptive.wall_seconds:.0f} s")  # fmt: skip
        return
    _print_time(adaptive, fixed)
    _print_agreement(adaptive, fixed, truth)
    _print_confirmation(adaptive, fixed, truth)


def _true_changes(run: RunResult) -> dict[Key, float]:
    """Each determined query's D (left out: those whose process sets disagree)."""
    return {
        k: q["diff"]
        for k, q in run.verdicts().items()
        if q["diff"] is not None and not truth_undetermined(q)
    }


def _print_consensus(
    paths: list[Path],
    truth: dict[Key, float],
    others: list[dict[Key, float]],
    runs: tuple[tuple[str, RunResult], ...],
) -> None:
    for path, other in zip(paths, others, strict=True):
        median, p90 = truth_spread(truth, other)
        shared = set(truth) & set(other)
        apart = sum(1 for k in shared if abs(truth[k] - other[k]) > 0.04)
        crossing = sum(1 for k in shared if (abs(truth[k]) >= LARGE) != (abs(other[k]) >= LARGE))
        print(f"truth vs {path}: |difference| median {median:.1%}, 90th percentile {p90:.1%}; "
              f"{apart} queries more than 4 points apart, {crossing} on opposite sides of "
              f"{LARGE:.0%}")  # fmt: skip
    agreed = consensus([truth, *others], LARGE, SMALL)
    print(f"consensus of {len(others) + 1} truths: {agreed.queries} queries determined in all; "
          f"{len(agreed.large)} >= {LARGE:.0%} in every one, {len(agreed.small)} below "
          f"{SMALL:.0%} in every one")  # fmt: skip
    for name, run in runs:
        _print_consensus_accuracy(name, run, agreed)


def _print_consensus_accuracy(name: str, run: RunResult, agreed: Consensus) -> None:
    verdicts = run.verdicts()
    large = agreed.large
    found = [k for k in large if verdicts.get(k, {}).get("verdict") == _direction(large[k])]
    flagged = [k for k, q in verdicts.items() if q["verdict"] in CHANGED]
    wrong = [
        k
        for k in flagged
        if k in agreed.directed and verdicts[k]["verdict"] != _direction(agreed.directed[k])
    ]
    small = [k for k in flagged if k in agreed.small]
    recall = len(found) / len(large) if large else float("nan")
    missed = [k for k in large if k not in found]
    verdict = "ok" if recall >= BAR_RECALL else "MISSED"
    print(f"  {name} against the consensus: recall {len(found)}/{len(large)} = {recall:.1%} "
          f"({verdict}) {_keys(missed)}; wrong direction {len(wrong)} {_keys(wrong)}; "
          f"flagged below {SMALL:.0%} {len(small)} {_keys(small)}")  # fmt: skip


def _print_accuracy(name: str, run: RunResult, truth: dict[Key, float]) -> None:
    verdicts = run.verdicts()
    large = [k for k, d in truth.items() if abs(d) >= LARGE]
    found = [k for k in large if verdicts.get(k, {}).get("verdict") == _direction(truth[k])]
    flagged = [k for k, q in verdicts.items() if q["verdict"] in CHANGED and k in truth]
    wrong = [k for k in flagged if verdicts[k]["verdict"] != _direction(truth[k])]
    small = [k for k in flagged if abs(truth[k]) < SMALL]
    recall = len(found) / len(large) if large else float("nan")
    print(f"{name}: counts {run.summary['counts']}; fdr {run.summary.get('fdr')}")
    print(f"  recall on |true change| >= {LARGE:.0%}: {len(found)}/{len(large)} = {recall:.1%} "
          f"(bar >= {BAR_RECALL:.0%}: {'ok' if recall >= BAR_RECALL else 'MISSED'})")  # fmt: skip
    missed = [k for k in large if k not in found]
    for k in missed[:10]:
        print(f"    missed {k[0]} #{k[1]}: true {truth[k]:+.1%}, {_describe(verdicts.get(k))}")
    print(f"  wrong direction: {len(wrong)} (bar 0) {_keys(wrong)}")
    print(f"  flagged with |true change| < {SMALL:.0%}: {len(small)} (bar 0) {_keys(small)}")


def _direction(diff: float) -> str:
    return "slower" if diff > 0 else "faster"


def _describe(q: dict[str, Any] | None) -> str:
    if q is None:
        return "no verdict"
    diff = "n/a" if q["diff"] is None else f"{q['diff']:+.1%}"
    return f"{q['verdict']} (D {diff}, runs {q['runs']}, p {q.get('p_value')})"


def _keys(keys: list[Key]) -> str:
    return ", ".join(f"{t} #{i}" for t, i in keys[:10])


def _print_time(adaptive: RunResult, fixed: RunResult) -> None:
    measured = adaptive.measured_seconds / fixed.measured_seconds
    client = adaptive.client_seconds / fixed.client_seconds
    wall = adaptive.wall_seconds / fixed.wall_seconds
    verdict = "ok" if measured <= BAR_TIME_RATIO else "MISSED"
    print(
        f"measured runs (run.json measured_runs_seconds): adaptive "
        f"{adaptive.measured_seconds:.1f} s, fixed 15 {fixed.measured_seconds:.1f} s, "
        f"ratio {measured:.2f} (bar <= {BAR_TIME_RATIO}: {verdict})"
    )
    print(
        f"client time of measured runs: adaptive {adaptive.client_seconds:.1f} s, "
        f"fixed 15 {fixed.client_seconds:.1f} s, ratio {client:.2f}"
    )
    print(
        f"total wall: adaptive {adaptive.wall_seconds:.1f} s, "
        f"fixed 15 {fixed.wall_seconds:.1f} s, ratio {wall:.2f}"
    )
    print(
        f"adaptive client time over 15 runs a query at the adaptive run's own pace: "
        f"{same_pace_ratio(adaptive):.2f} (independent of the machine's speed between runs)"
    )
    print(
        f"machine noise (median over queries of the sd of ln(patched/reference) over the first "
        f"{PAIRS} pairs): adaptive {pair_noise(adaptive):.3f}, fixed 15 {pair_noise(fixed):.3f}; "
        f"the time ratio compares like with like only when these are close"
    )
    print(f"servers: adaptive {adaptive.placement()}; fixed 15 {fixed.placement()}")


def _print_agreement(adaptive: RunResult, fixed: RunResult, truth: dict[Key, float]) -> None:
    a, f = adaptive.verdicts(), fixed.verdicts()
    keys = sorted(set(a) & set(f))
    differ = [k for k in keys if a[k]["verdict"] != f[k]["verdict"]]
    print(f"verdicts agree between adaptive and fixed 15 on {len(keys) - len(differ)}/{len(keys)}"
          f" queries{'' if differ else ' (all)'}")  # fmt: skip
    for k in differ[:20]:
        true = f"{truth[k]:+.1%}" if k in truth else "n/a"
        print(f"  {k[0]} #{k[1]} (true {true}): adaptive {_describe(a[k])}; "
              f"fixed 15 {_describe(f[k])}")  # fmt: skip


def _print_confirmation(adaptive: RunResult, fixed: RunResult, truth: dict[Key, float]) -> None:
    """The adaptive run's changed verdicts, kept only where the later fixed run's D is on the
    same side beyond the query's minimum effect: flags and true changes before and after."""
    a, f = adaptive.verdicts(), fixed.verdicts()
    flagged = [k for k, q in a.items() if q["verdict"] in CHANGED and k in truth]

    def confirmed(k: Key) -> bool:
        later = f.get(k, {}).get("diff")
        floor = float(a[k].get("min_effect") or 0.0)
        if later is None:
            return False
        return bool(later >= floor if a[k]["verdict"] == "slower" else later <= -floor)

    kept = [k for k in flagged if confirmed(k)]
    large = [k for k, d in truth.items() if abs(d) >= LARGE]
    found = [k for k in large if a.get(k, {}).get("verdict") == _direction(truth[k])]
    small = [k for k in flagged if abs(truth[k]) < SMALL]
    kept_small = [k for k in small if k in kept]
    print(f"confirmed by the fixed run (D on the same side beyond the minimum effect): "
          f"{len(kept)} of {len(flagged)} changed verdicts; true >= {LARGE:.0%} found "
          f"{len(found)} -> {sum(k in kept for k in found)}; flags below {SMALL:.0%} "
          f"{len(small)} -> {len(kept_small)} {_keys(kept_small)}")  # fmt: skip
    for k in [k for k in flagged if k not in kept][:10]:
        print(f"    not confirmed {k[0]} #{k[1]} (true {truth[k]:+.1%}): adaptive "
              f"{_describe(a[k])}; fixed {_describe(f.get(k))}")  # fmt: skip


if __name__ == "__main__":
    main()
