"""Replays the adaptive stop rule (runner/stopping.py) over the runs of an existing long
fixed run, without servers: for each query, in run order, the rule sees the same interim
statistics the runner would have computed after each run and stops where the runner would
have stopped; `chperf compare` then judges the truncated runs. The first 15 runs of the same
data give the fixed 15-run mode. Both modes therefore see exactly the same measurements, so
the difference between them is the rule's alone (on the machine, the modes also differ in
when they ran).

A query can only be replayed up to the runs the source has: use a run with at least
`extended_runs` (40) runs a side (`chperf run --runs 41`); a rule that wants more is cut
there and the count of such queries is printed. An adaptive source works for rules that
stop no later than the source did; its fixed-15 client time is then extrapolated from the
mean pair time of queries it stopped earlier.

With --truth DIR (a run of at least 41 runs a side with the same change), prints for both
modes what bench/bench_known_change.py prints: recall on true changes of at least 10%, flags
in the wrong direction, flags on true changes below 2%, and the client time of adaptive over
fixed-15. Without it, the source itself is the truth (its own full-length verdicts).

Usage: .venv/bin/python bench/replay_stops.py RUN [--truth DIR] [--no-fdr] [--min-effect F]
                                              [--unstable-futility-from N] [--budget S]
                                              [--also-fixed N [N ...]] [--promising-p P]
                                              [--futility-power P]
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Run as a script (`python bench/<name>.py`): the repository root holds the `bench` package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from artifacts.manifest import read_manifest
from artifacts.tables import QUERY_LOG, RUNS
from artifacts.tsv import read_table, write_table
from bench.runs import LARGE, SMALL, Key, run_pairs, side_times, truth_undetermined
from compare import CompareOptions, compare_directory
from compare.fdr import FDR_Q
from compare.interim import InterimJudge
from compare.randomization import SeriesStats
from compare.stopping import StopRule, is_checkpoint, should_stop
from compare.verdict import MIN_EFFECT, Thresholds
from runner.measure import samples_of

FIXED = 15


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run", type=Path, help="a fixed run with many runs a side")
    parser.add_argument("--truth", type=Path, default=None)
    parser.add_argument("--no-fdr", action="store_true")
    parser.add_argument("--no-futility", action="store_true", help="without rules 6 and 7")
    parser.add_argument("--no-extension", action="store_true", help="without rule 5")
    parser.add_argument(
        "--futility-power",
        type=float,
        default=StopRule.futility_power,
        help="rule 6 gives up below this conditional power",
    )
    parser.add_argument("--max-runs", type=int, default=StopRule.max_runs)
    parser.add_argument("--min-runs", type=int, default=StopRule.min_runs)
    parser.add_argument("--min-effect", type=float, default=MIN_EFFECT, help="also the target")
    parser.add_argument(
        "--budget",
        type=float,
        default=StopRule.budget_seconds,
        help="a query's time budget: both sides' client time, seconds",
    )
    parser.add_argument(
        "--unstable-futility-from",
        type=int,
        default=None,
        help="rule 6 also above the unstable threshold from this many runs on",
    )
    add_promising_p(parser)
    parser.add_argument(
        "--also-fixed",
        type=int,
        nargs="+",
        default=[],
        metavar="N",
        help="also judge the first N runs of every query (fixed N runs) and print its "
        "verdicts and adaptive / fixed-N client time",
    )
    args = parser.parse_args()
    thresholds = Thresholds(min_effect=args.min_effect)
    options = CompareOptions(thresholds=thresholds, fdr=None if args.no_fdr else FDR_Q)
    runs = run_pairs(args.run)
    rule = StopRule(
        target=args.min_effect,
        min_effect=args.min_effect,
        min_runs=args.min_runs,
        max_runs=args.max_runs,
        fdr_q=options.fdr,
        queries=len(runs),
        futility=not args.no_futility,
        futility_power=args.futility_power,
        unstable_threshold=None if args.no_extension else options.thresholds.unstable_threshold,
        unstable_futility_from=args.unstable_futility_from,
        promising_p=args.promising_p,
        budget_seconds=args.budget,
    )
    options_of_run = read_manifest(args.run).get("options") or {}
    sets = int(options_of_run.get("processes") or 1)  # older runs: one process a side
    stops, short = replay(rule, runs, options.thresholds, sets)
    with tempfile.TemporaryDirectory(prefix="chperf-replay-") as scratch:
        adaptive = _judge(args.run, Path(scratch) / "adaptive", stops, options)
        fixed = _judge(args.run, Path(scratch) / "fixed", dict.fromkeys(runs, FIXED), options)
        truth_dir = args.truth or args.run
        full = {k: max(len(v), 1) for k, v in run_pairs(truth_dir).items()}
        truth = _judge(truth_dir, Path(scratch) / "truth", full, options)
        others = {
            n: _judge(args.run, Path(scratch) / f"fixed{n}", dict.fromkeys(runs, n), options)
            for n in args.also_fixed
        }
    counts = collections.Counter(stops.values())
    print(f"replayed {len(runs)} queries of {args.run}; runs a side: "
          + ", ".join(f"{n}: {c}" for n, c in sorted(counts.items())))  # fmt: skip
    if short:
        print(f"{short} queries wanted more runs than the source has (cut there)")
    for name, verdicts, spent in (
        ("adaptive", adaptive, _client_seconds(runs, stops)),
        ("fixed 15", fixed, _client_seconds(runs, dict.fromkeys(runs, FIXED))),
    ):
        print(f"{name}: client time {spent:.1f} s; " + _accuracy(verdicts, truth))
    ratio = _client_seconds(runs, stops) / _client_seconds(runs, dict.fromkeys(runs, FIXED))
    print(f"adaptive / fixed-15 client time: {ratio:.2f} (bar <= 0.6)")
    for n, verdicts in others.items():
        spent = _client_seconds(runs, dict.fromkeys(runs, n))
        print(f"fixed {n}: client time {spent:.1f} s; " + _accuracy(verdicts, truth))
        print(f"adaptive / fixed-{n} client time: {_client_seconds(runs, stops) / spent:.2f}")
    differ = [k for k in adaptive if adaptive[k]["verdict"] != fixed.get(k, {}).get("verdict")]
    print(f"verdicts that differ between the modes: {len(differ)}")
    for key in differ:
        a, f, t = adaptive[key], fixed[key], truth.get(key, {})
        print(f"  {key[0]} #{key[1]}: adaptive {a['verdict']} ({stops[key]} runs), fixed-15 "
              f"{f['verdict']}, true D {_pct(t.get('diff'))}")  # fmt: skip


def add_promising_p(parser: argparse.ArgumentParser) -> None:
    """--promising-p, the study variant of rule 5 (StopRule.promising_p); inject_change.py too."""
    parser.add_argument(
        "--promising-p",
        type=float,
        default=None,
        help="also extend to the extended run count a query that looks like a change at the "
        "run cap with p at most this (compare/stopping.py promising_p)",
    )


def replay(
    rule: StopRule,
    runs: dict[Key, list[tuple[float, float]]],
    thresholds: Thresholds,
    sets: int,
    reasons: dict[Key, str] | None = None,
) -> tuple[dict[Key, int], int]:
    """Where the rule stops each query, and how many wanted more runs than the source has. With
    `reasons`, each stop's reason goes there."""
    judge = InterimJudge(thresholds)
    stops: dict[Key, int] = {}
    short = 0
    try:
        for stop in stop_points(rule, runs, judge, sets):
            stops[stop.key] = stop.runs
            if stop.reason is None:
                short += len(runs[stop.key]) < rule.extended_runs
            if reasons is not None:
                reasons[stop.key] = stop.reason or "the end of the source's runs"
    finally:
        judge.close()
    return stops, short


@dataclass(frozen=True)
class Stop:
    key: Key
    runs: int
    reason: str | None  # None: the source's runs ended first
    stats: SeriesStats | None  # at the stop, when it was a look


def stop_points(
    rule: StopRule, runs: dict[Key, list[tuple[float, float]]], judge: InterimJudge, sets: int
) -> Iterator[Stop]:
    """Each query in order, as a live run measures them, with the run's discovery count so far:
    where the rule stops it. Run n of the source ran on process set server_set(n, sets), as the
    live rule saw it."""
    discoveries = 0
    for key, pairs in runs.items():
        stop = Stop(key, len(pairs), None, None)
        for n in range(1, len(pairs) + 1):
            times = side_times(pairs[:n])
            spent = sum(times["reference"]) + sum(times["patched"])
            stats = judge.stats(samples_of(times, sets)) if is_checkpoint(rule, n) else None
            decision = should_stop(rule, n, spent, stats, discoveries)
            if decision.stop:
                stop = Stop(key, n, decision.reason, stats)
                discoveries += decision.discovery
                break
        yield stop


def _judge(
    source: Path, copy: Path, keep: dict[Key, int], options: CompareOptions
) -> dict[Key, dict[str, Any]]:
    """compare over a copy of `source` holding the first keep[query] runs of each query."""
    shutil.copytree(source, copy)
    rows = [
        r for r in read_table(source, RUNS).rows if r.run < keep.get((r.test, r.query_index), 0)
    ]
    write_table(copy, RUNS, rows)
    ids = {r.query_id for r in rows}
    write_table(
        copy, QUERY_LOG, [r for r in read_table(source, QUERY_LOG).rows if r.query_id in ids]
    )
    compare_directory(copy, options)
    data = json.loads((copy / "summary.json").read_text())
    return {(q["test"], q["query_index"]): q for q in data["queries"]}


def _client_seconds(runs: dict[Key, list[tuple[float, float]]], keep: dict[Key, int]) -> float:
    """Client time of the first keep[query] runs; a query with fewer runs in the source (an
    adaptive source stopped it earlier) counts its mean pair time for each missing run."""
    total = 0.0
    for key, pairs in runs.items():
        kept = pairs[: keep[key]]
        if kept:
            total += sum(r + p for r, p in kept) * max(1.0, keep[key] / len(kept))
    return total


def _accuracy(verdicts: dict[Key, dict[str, Any]], truth: dict[Key, dict[str, Any]]) -> str:
    true_d = {
        k: q["diff"]
        for k, q in truth.items()
        if q.get("diff") is not None and not truth_undetermined(q)
    }
    flagged = {k: q["verdict"] for k, q in verdicts.items() if q["verdict"] in ("faster", "slower")}
    large = [k for k, d in true_d.items() if abs(d) >= LARGE]
    found = [k for k in large if flagged.get(k) == ("slower" if true_d[k] > 0 else "faster")]
    wrong = [k for k, v in flagged.items() if k in true_d and (v == "slower") != (true_d[k] > 0)]
    small = [k for k in flagged if k in true_d and abs(true_d[k]) < SMALL]
    counts = collections.Counter(q["verdict"] for q in verdicts.values())
    recall = len(found) / len(large) if large else float("nan")
    return (
        ", ".join(f"{v} {n}" for v, n in sorted(counts.items()))
        + f"; recall on |true| >= {LARGE:.0%}: {len(found)}/{len(large)} ({recall:.0%}); "
        f"wrong direction {len(wrong)}; flagged with |true| < {SMALL:.0%}: {len(small)}"
    )


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1%}"


if __name__ == "__main__":
    main()
