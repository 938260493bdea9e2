"""Benchmark of `chperf compare` and of the pooled randomization threshold, in one run.

  .venv/bin/python bench/bench_compare.py [--queries 3000] [--runs 15]

Times the analysis of QUERIES queries x 2 sides x RUNS runs (client_time only):
  compare   the whole of `chperf compare` (compare_directory, the default paired method) over
            a run directory holding the simulated runs as ABBA pairs on two process sets:
            reading the artifacts, the statistics of every query, FDR, verdicts, outputs
  chperf    the pooled method alone, compare.randomization in chDB: exact split distribution
            by order statistics (computed once per run-count pair), per query a quantile
  baseline  straightforward numpy: per query, sort the groups of 10,000 random permutations
and prints the times and their ratios (the bars: compare at least 20x faster than the
baseline; the pooled method alone at most 0.5 of it).

The machine is shared: its speed moves over the minute the baseline takes. So compare and the
baseline alternate: the baseline runs in SLICES slices of the queries, and compare runs before
the first slice and after every slice. The baseline's time is the sum of its slices; compare's
the median of its SLICES + 1 calls. Each slice also gives a ratio of its own (the slice scaled
to all queries, over the mean of the compare calls on either side of it), printed with the
median, so a ratio that only one quiet or busy moment made shows as such.

Agreement: chperf's T is exact; the baseline's is a 10,000-split estimate of the same
quantity, so they differ by sampling error only. The script prints how far apart they are,
and checks a few queries against a 400,000-permutation estimate, which must land closer to
the exact T than the 10,000-split one does on average.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

# Run as a script (`python bench/<name>.py`): the repository root holds the packages.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from artifacts.manifest import write_manifest
from artifacts.tables import (
    ERRORS,
    PROFILE_EVENTS,
    QUERIES,
    QUERY_LOG,
    RUNS,
    SIDES,
    TESTS,
    QueryRow,
    RunRow,
    TestRow,
)
from artifacts.tsv import write_table
from compare.compare import CompareOptions, compare_directory
from compare.engine import SqlEngine
from compare.randomization import QUANTILE, Randomization, Samples

PERMUTATIONS = 10_000
Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Options:
    queries: int
    runs: int
    seed: int


def parse_args(argv: list[str]) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    return Options(args.queries, args.runs, args.seed)


def simulate(options: Options) -> list[tuple[Array, Array]]:
    """Runs with 3% to 20% multiplicative noise; a third of the queries 10% slower."""
    rng = np.random.default_rng(options.seed)
    data = []
    for i in range(options.queries):
        base, noise = rng.uniform(0.005, 2.0), rng.uniform(0.03, 0.2)
        change = 0.10 if i % 3 == 0 else 0.0
        reference = base * np.exp(noise * rng.standard_normal(options.runs))
        patched = base * (1 + change) * np.exp(noise * rng.standard_normal(options.runs))
        data.append((reference, patched))
    return data


def chperf_thresholds(data: list[tuple[Array, Array]]) -> npt.NDArray[np.float64]:
    series = {i: Samples(tuple(r.tolist()), tuple(p.tolist())) for i, (r, p) in enumerate(data)}
    with SqlEngine() as engine:
        stats = Randomization(engine).statistics(series)
    return np.array([stats[i].threshold or 0.0 for i in range(len(data))])


def baseline_threshold(
    reference: Array, patched: Array, rng: np.random.Generator, permutations: int
) -> float:
    """The straightforward way: shuffle the pooled runs, sort both groups, take medians."""
    pooled = np.concatenate([reference, patched])
    shuffled = rng.permuted(np.tile(pooled, (permutations, 1)), axis=1)
    group1 = np.sort(shuffled[:, : len(reference)], axis=1)
    group2 = np.sort(shuffled[:, len(reference) :], axis=1)
    differences = np.abs(np.median(group1, axis=1) - np.median(group2, axis=1))
    threshold = np.quantile(differences, QUANTILE, method="inverted_cdf")
    return float(threshold / np.median(reference))


def baseline_thresholds(data: list[tuple[Array, Array]], seed: int) -> npt.NDArray[np.float64]:
    rng = np.random.default_rng(seed)
    return np.array([baseline_threshold(r, p, rng, PERMUTATIONS) for r, p in data])


def timed(
    label: str, work: Callable[[], npt.NDArray[np.float64]]
) -> tuple[float, npt.NDArray[np.float64]]:
    start = time.perf_counter()
    result = work()
    elapsed = time.perf_counter() - start
    print(f"{label:9} {elapsed:8.2f} s", file=sys.stderr)
    return elapsed, result


def report_agreement(
    data: list[tuple[Array, Array]], exact: npt.NDArray[np.float64], sampled: Array
) -> None:
    relative = np.abs(sampled - exact) / exact
    print(
        f"T agreement (exact vs 10,000 sampled splits): median |rel. difference| "
        f"{np.median(relative):.2%}, 95th percentile {np.quantile(relative, 0.95):.2%}, "
        f"identical in {np.mean(relative == 0):.1%} of queries"
    )
    rng = np.random.default_rng(1)
    picks = list(range(0, len(data), max(1, len(data) // 10)))[:10]
    fine = np.array([baseline_threshold(*data[i], rng, 400_000) for i in picks])
    fine_error = np.abs(fine - exact[picks]) / exact[picks]
    print(
        f"on {len(picks)} queries, 400,000 permutations: mean |rel. difference| to exact T "
        f"{fine_error.mean():.2%} (10,000 permutations: {relative[picks].mean():.2%})"
    )


def run_directory(data: list[tuple[Array, Array]], out: Path) -> Path:
    """The simulated runs as a run's artifacts: run n of both sides is pair n, and pairs go
    to two process sets in blocks of two, as runner/schedule.py sends them."""
    out.mkdir(parents=True, exist_ok=True)
    write_manifest(out, {})
    write_table(
        out, QUERIES, [QueryRow(f"t{i // 10}", i % 10, f"q{i}", None) for i in range(len(data))]
    )
    runs = [
        RunRow(
            f"t{i // 10}", i % 10, side, n, f"t{i // 10}.{i % 10}.run{n}", float(v), (n // 2) % 2
        )
        for i, sides in enumerate(data)
        for side, values in zip(SIDES, sides, strict=True)
        for n, v in enumerate(values)
    ]
    write_table(out, RUNS, runs)
    write_table(out, QUERY_LOG, [])
    write_table(out, PROFILE_EVENTS, [])
    write_table(out, ERRORS, [])
    tests = sorted({i // 10 for i in range(len(data))})
    write_table(out, TESTS, [TestRow(f"t{t}", f"t{t}.xml", "ran", "", 1.0) for t in tests])
    return out


SLICES = 5


@dataclass(frozen=True)
class Alternated:
    compare: list[float]  # SLICES + 1 calls of compare_directory, each before or after a slice
    baseline: list[float]  # the baseline's time on each slice of the queries
    sizes: list[int]  # queries in each slice

    @property
    def compare_time(self) -> float:
        return float(np.median(self.compare))

    @property
    def baseline_time(self) -> float:
        return sum(self.baseline)

    def slice_ratios(self) -> list[float]:
        """Each slice scaled to all queries over the compare calls on either side of it."""
        total = sum(self.sizes)
        return [
            self.baseline[i] * total / self.sizes[i] / ((self.compare[i] + self.compare[i + 1]) / 2)
            for i in range(len(self.baseline))
        ]


def alternate(data: list[tuple[Array, Array]], directory: Path, seed: int) -> Alternated:
    """compare, slice 1 of the baseline, compare, slice 2, ..., compare. One compare call on
    10 queries first loads chDB's library (the baseline's numpy is loaded before it is
    timed, too)."""
    compare_directory(run_directory(data[:10], directory / "warm-up"), CompareOptions())
    out = run_directory(data, directory / "run")
    rng = np.random.default_rng(seed)
    bounds = np.linspace(0, len(data), SLICES + 1).astype(int).tolist()
    compares, baselines = [], []
    for i in range(SLICES + 1):
        start = time.perf_counter()
        result = compare_directory(out, CompareOptions())
        compares.append(time.perf_counter() - start)
        if i == SLICES:
            break
        part = data[bounds[i] : bounds[i + 1]]
        start = time.perf_counter()
        for reference, patched in part:
            baseline_threshold(reference, patched, rng, PERMUTATIONS)
        baselines.append(time.perf_counter() - start)
    shown = ", ".join(f"{t:.2f}" for t in compares)
    print(f"compare   calls {shown} s ({result.message})", file=sys.stderr)
    shown = ", ".join(f"{t:.2f}" for t in baselines)
    print(f"baseline  slices {shown} s", file=sys.stderr)
    sizes = [bounds[i + 1] - bounds[i] for i in range(SLICES)]
    return Alternated(compares, baselines, sizes)


def main(argv: list[str]) -> int:
    options = parse_args(argv)
    data = simulate(options)
    print(f"{options.queries} queries x 2 sides x {options.runs} runs", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="chperf-bench-compare-") as tmp:
        alternated = alternate(data, Path(tmp), options.seed)
    fast_time, exact = timed("chperf", lambda: chperf_thresholds(data))
    slow_time, sampled = timed("baseline", lambda: baseline_thresholds(data, options.seed))
    compare_time = alternated.compare_time
    print(f"chperf compare, whole (paired, exact): {compare_time:.2f} s (median of "
          f"{len(alternated.compare)} calls alternated with the baseline's slices)")  # fmt: skip
    print(f"chperf pooled threshold alone (chDB, exact order statistics): {fast_time:.2f} s")
    print(f"baseline (numpy, {PERMUTATIONS:,} permutations per query): "
          f"{alternated.baseline_time:.2f} s in {SLICES} slices; {slow_time:.2f} s in one go "
          f"after them")  # fmt: skip
    speedup = alternated.baseline_time / compare_time
    slices = alternated.slice_ratios()
    print(
        f"chperf compare is {speedup:.1f}x faster than the baseline "
        f"(bar: >= 20x): {'ok' if speedup >= 20 else 'MISSED'}; per slice "
        f"{', '.join(f'{r:.1f}x' for r in slices)} (median {np.median(slices):.1f}x)"
    )
    print(f"ratio pooled threshold / baseline: {fast_time / slow_time:.4f} (bar: <= 0.5)")
    report_agreement(data, exact, sampled)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
