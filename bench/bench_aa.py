"""A/A over the whole suite in adaptive mode (the bar: 0 changed, at most 1; at most 3%
unstable): the reference server against itself, then the same artifacts compared again
without false-discovery control, to show what the FDR holds back.

Prints per-verdict counts, changed count, unstable share, wall time, the slowest five tests,
and the calibration file the run wrote (OUT/calibration.tsv) in numbers.

Usage: .venv/bin/python bench/bench_aa.py [--tests DIR] [--out DIR] [--binary PATH] [--quick]
                                          [--interferer]
  --quick: tests/data/runner_small (a smoke run of about a minute)
  --interferer: beside stress-ng whose load changes over time (bench/interferer.py)
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
from pathlib import Path

# Run as a script (`python bench/<name>.py`): the repository root holds the `bench` package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from artifacts.calibration import CALIBRATION_FILE
from bench.interferer import Interferer
from bench.runs import (
    CHANGED,
    QUICK_TESTS,
    REPO,
    chperf_run,
    pair_noise,
    same_pace_ratio,
    side_bias,
    slowest_tests,
)
from compare.calibration import read_calibration
from compare.noise import PAIRS

BAR_CHANGED = 1
BAR_UNSTABLE_SHARE = 0.03


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tests", type=Path, default=REPO / "perf_tests")
    parser.add_argument("--out", type=Path, default=Path("/tmp/chperf-bench-aa"))
    parser.add_argument("--binary", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="the small smoke suite")
    parser.add_argument("--pin-cpu", default=None, metavar="CPUS", help="chperf run --pin-cpu")
    parser.add_argument(
        "--interferer", action="store_true", help="beside a noisy neighbour (bench/interferer.py)"
    )
    parser.add_argument(
        "--processes", type=int, default=None, metavar="N", help="chperf run --processes N"
    )
    args = parser.parse_args()
    tests = QUICK_TESTS if args.quick else args.tests
    extra = ["--aa"] + (["--reference", str(args.binary)] if args.binary else [])
    extra += ["--pin-cpu", args.pin_cpu] if args.pin_cpu else []
    extra += ["--processes", str(args.processes)] if args.processes else []
    with Interferer() if args.interferer else contextlib.nullcontext() as neighbour:
        result = chperf_run(args.out, tests, extra)
    if neighbour is not None:
        print(f"interferer phases: {', '.join(neighbour.log)}")
    counts = result.summary["counts"]
    measured = sum(counts[v] for v in (*CHANGED, "unstable", "unchanged"))
    changed = sum(counts[v] for v in CHANGED)
    unstable_share = counts["unstable"] / measured if measured else float("nan")
    print(f"A/A adaptive over {tests}: {measured} measured queries")
    print("verdicts: " + ", ".join(f"{v} {n}" for v, n in counts.items()))
    print(f"equivalence of unchanged: {result.summary.get('equivalence')}")
    print(
        f"changed {changed} (bar <= {BAR_CHANGED}): {'ok' if changed <= BAR_CHANGED else 'MISSED'}"
    )
    print(
        f"unstable {unstable_share:.1%} of measured (bar <= {BAR_UNSTABLE_SHARE:.0%}): "
        f"{'ok' if unstable_share <= BAR_UNSTABLE_SHARE else 'MISSED'}"
    )
    print(f"fdr: {result.summary.get('fdr')}")
    print(_without_fdr(args.out))
    print(
        f"wall {result.wall_seconds:.1f} s (measured runs {result.measured_seconds:.1f} s, "
        f"client time {result.client_seconds:.1f} s; {same_pace_ratio(result):.2f} of 15 runs a "
        f"query at the same per-query pace; machine noise {pair_noise(result):.3f}: the median "
        f"sd of ln(patched/reference) over each query's first {PAIRS} pairs)"
    )
    bias = side_bias(args.out)
    print(
        "side bias, mean ln(reference / patched) over all pairs (0 up to noise in an A/A): "
        + ", ".join(f"{name} {value:+.2%}" for name, value in bias.items())
    )
    print(f"servers: {result.placement()}")
    print("slowest tests: " + ", ".join(f"{t} {s:.1f} s" for t, s in slowest_tests(args.out, 5)))
    _print_calibration(args.out / CALIBRATION_FILE)


def _without_fdr(out: Path) -> str:
    """Recompare the same artifacts with --fdr 0: the per-query rule's own false positives."""
    done = subprocess.run(
        [sys.executable, "-m", "chperf", "compare", str(out), "--fdr", "0"],
        check=False, cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    # the verdict line; compare's note that it removed the previous report comes first
    lines = [x for x in done.stderr.strip().splitlines() if "removed the report" not in x]
    line = lines[0] if lines else "(no output)"
    # leave OUT as the default run wrote it
    subprocess.run([sys.executable, "-m", "chperf", "compare", str(out), "--aa"],
                   check=False, cwd=REPO, capture_output=True)  # fmt: skip
    return f"the same artifacts without FDR: {line}"


def _print_calibration(path: Path) -> None:
    rows = list(read_calibration(path).rows.values())
    if not rows:
        print(f"{path}: no calibrated queries")
        return
    flagged = sum(r.flagged for r in rows)
    print(
        f"{path}: {len(rows)} queries; flagged by the per-query rule {flagged} "
        f"({flagged / len(rows):.1%}); mean flag rate "
        f"{statistics.fmean(r.flag_rate for r in rows):.3%}; median T "
        f"{statistics.median(r.threshold for r in rows):.1%}; median |A/A D| "
        f"{statistics.median(abs(r.diff) for r in rows):.1%}; median MDE "
        f"{statistics.median(r.mde for r in rows):.1%}; noise floor above 3.3% (raises the 5% "
        f"min effect): {sum(r.noise_floor > 0.05 / 1.5 for r in rows)}"
    )


if __name__ == "__main__":
    main()
