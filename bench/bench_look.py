"""What one adaptive look costs: the statistics the stop rule reads after each run
(compare/interim.py InterimJudge.stats: the paired statistic of compare/blocked.py in numpy,
the same numbers compare's chDB query gives), per pair count. The bar: at most 2 ms a look.

Each look runs between two measured runs, with both servers idle, and its time counts in
run.json measured_runs_seconds. Printed per pair count: the median and 90th percentile of
one look over --looks looks of random pairs (the first look of a pair count, which tabulates
its null distribution, is timed apart). With --run DIR (an adaptive run's artifacts), also
the number of looks that run made (stops.tsv: one after each run from MIN_RUNS to the
query's last, up to MAX_RUNS), and their share of its measured time at the medians measured
here, against the time measured beyond the client times of the runs (looks, wake queries,
HTTP and bookkeeping).

Usage: .venv/bin/python bench/bench_look.py [--looks N] [--run DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import sys
import time
from pathlib import Path

# Run as a script (`python bench/<name>.py`): the repository root holds the `bench` package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from compare.interim import InterimJudge
from compare.stopping import MAX_RUNS, MIN_RUNS
from compare.verdict import Thresholds
from runner.measure import samples_of

SIZES = (7, 10, 13, 16, 20, 25, 40)
BAR_LOOK_S = 0.002


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--looks", type=int, default=60)
    parser.add_argument("--run", type=Path, default=None, help="an adaptive run's directory")
    args = parser.parse_args()
    rng = random.Random(20261123)
    judge = InterimJudge(Thresholds(0.05, 0.10))
    medians: dict[int, float] = {}
    try:
        for n in SIZES:
            first, times = _time_looks(judge, rng, n, args.looks)
            medians[n] = statistics.median(times)
            p90 = statistics.quantiles(times, n=10)[-1]
            print(f"{n:2d} pairs: one look {medians[n] * 1e3:5.1f} ms median, "
                  f"{p90 * 1e3:5.1f} ms 90th percentile; first of its size "
                  f"{first * 1e3:5.1f} ms")  # fmt: skip
    finally:
        judge.close()
    worst = max(medians.values())
    print(f"slowest median look {worst * 1e3:.2f} ms (bar <= {BAR_LOOK_S * 1e3:.0f} ms): "
          f"{'ok' if worst <= BAR_LOOK_S else 'MISSED'}")  # fmt: skip
    if args.run is not None:
        _run_share(args.run, medians)


def _time_looks(
    judge: InterimJudge, rng: random.Random, n: int, looks: int
) -> tuple[float, list[float]]:
    """The first look of pair count n and `looks` more, in seconds."""
    timed: list[float] = []
    for _ in range(looks + 1):
        reference = [0.1 * rng.lognormvariate(0, 0.05) for _ in range(n)]
        patched = [0.1 * rng.lognormvariate(0, 0.05) for _ in range(n)]
        samples = samples_of({"reference": reference, "patched": patched}, 2)
        start = time.perf_counter()
        judge.stats(samples)
        timed.append(time.perf_counter() - start)
    return timed[0], timed[1:]


def _run_share(run: Path, medians: dict[int, float]) -> None:
    manifest = json.loads((run / "run.json").read_text(encoding="utf-8"))
    measured = float(manifest.get("measured_runs_seconds") or 0)
    with (run / "runs.tsv").open(encoding="utf-8", newline="") as f:
        client = sum(float(row["client_time"]) for row in csv.DictReader(f, delimiter="\t"))
    looks: dict[int, int] = {}
    with (run / "stops.tsv").open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            for n in range(MIN_RUNS, min(int(row["runs"]), MAX_RUNS) + 1):
                looks[n] = looks.get(n, 0) + 1
    if not measured or not looks:
        print(f"{run}: no measured time or no looks (a fixed run?)")
        return
    estimate = sum(count * _nearest(medians, n) for n, count in looks.items())
    print(f"{run}: {sum(looks.values())} looks; at the medians above {estimate:.1f} s = "
          f"{estimate / measured:.1%} of its measured {measured:.1f} s; measured beyond the "
          f"runs' client times: {measured - client:.1f} s = "
          f"{(measured - client) / measured:.1%}")  # fmt: skip


def _nearest(medians: dict[int, float], n: int) -> float:
    return medians[min(medians, key=lambda size: abs(size - n))]


if __name__ == "__main__":
    main()
