"""Synthetic classes of queries through the real verdict pipeline: the paired statistic in
chDB (compare/blocked.sql) and compare/verdict.py's rules, on runs simulated in chperf's run
order (R P, P R, P R, R P, ...; process sets switching every two pairs).

  .venv/bin/python bench/bench_classes.py [--queries 1000] [--seed 1]

Each class is a noise model and a true change; per class and run count it prints the share of
queries called slower, faster, unstable, unchanged and inconclusive. The bars (the same as the
known-change benchmark's and the A/A's): a true change of 10% or more called in its direction
in at least 95% of queries at 15 runs, a true change below 2% never called changed (at most
1%), never a change in the wrong direction, at most 3% unstable at 3% noise.

  --process-sets N     simulate N server process sets a side (chperf run --processes N)
  --no-process-rule    judge as if a change need not show on every process set
  --only TEXT          only the classes whose name contains TEXT
The "one process" classes give one of the servers' processes its own speed for its whole life:
what the rule that a change must show on every process set is for (docs/method.md, "Two
server processes a side").
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

# Run as a script (`python bench/<name>.py`): the repository root holds the packages.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from compare.engine import SqlEngine
from compare.paired import PAIRED
from compare.randomization import Samples
from compare.statistics import QueryStatistics
from compare.verdict import QueryEvidence, Thresholds, Verdict, classify
from runner.schedule import reference_first, server_set

PROCESS_SETS = 2
Noise = Callable[[np.random.Generator, int], np.ndarray]  # log-scale noise of 2 * runs slots


@dataclass(frozen=True)
class SyntheticClass:
    name: str
    change: float  # the true relative change of the patched side
    noise: Noise


def lognormal(sigma: float) -> Noise:
    return lambda rng, slots: sigma * rng.standard_normal(slots)


def heavy_tailed(sigma: float) -> Noise:
    """Student's t with 3 degrees of freedom, scaled to `sigma` at its centre."""
    return lambda rng, slots: sigma * rng.standard_t(3, slots)


def with_disturbance(sigma: float, size: float, length: int) -> Noise:
    """One disturbance `length` consecutive runs long (either side, wherever it falls)."""

    def noise(rng: np.random.Generator, slots: int) -> np.ndarray:
        values = sigma * rng.standard_normal(slots)
        start = int(rng.integers(0, slots - length + 1))
        values[start : start + length] += np.log1p(size)
        return values

    return noise


def with_drift(sigma: float, total: float) -> Noise:
    """The machine slows down steadily by `total` over the runs (both sides alike)."""
    return lambda rng, slots: (
        sigma * rng.standard_normal(slots) + np.linspace(0.0, np.log1p(total), slots)
    )


def with_process_offset(sigma: float, offset: float) -> Noise:
    """Each server process runs at its own speed, up to `offset` apart (memory layout)."""

    def noise(rng: np.random.Generator, slots: int) -> np.ndarray:
        speeds = rng.uniform(-offset / 2, offset / 2, (PROCESS_SETS, 2))
        values = sigma * rng.standard_normal(slots)
        for slot in range(slots):
            run, second = divmod(slot, 2)
            patched = second == 1 if reference_first(run) else second == 0
            values[slot] += speeds[server_set(run, PROCESS_SETS), int(patched)]
        return values

    return noise


def with_unlucky_process(sigma: float, offset: float) -> Noise:
    """One of the servers' processes (any side, any set) runs `offset` slower all its life."""

    def noise(rng: np.random.Generator, slots: int) -> np.ndarray:
        unlucky = (int(rng.integers(PROCESS_SETS)), int(rng.integers(2)))
        values = sigma * rng.standard_normal(slots)
        for slot in range(slots):
            run, second = divmod(slot, 2)
            patched = second == 1 if reference_first(run) else second == 0
            if (server_set(run, PROCESS_SETS), int(patched)) == unlucky:
                values[slot] += np.log1p(offset)
        return values

    return noise


CLASSES = (
    SyntheticClass("A/A, 3% noise", 0.0, lognormal(0.03)),
    SyntheticClass("A/A, heavy tails", 0.0, heavy_tailed(0.03)),
    SyntheticClass("A/A, 2 runs +50%", 0.0, with_disturbance(0.03, 0.5, 2)),
    SyntheticClass("A/A, 4 runs +30%", 0.0, with_disturbance(0.03, 0.3, 4)),
    SyntheticClass("A/A, drift +20%", 0.0, with_drift(0.03, 0.2)),
    SyntheticClass("A/A, processes 3% apart", 0.0, with_process_offset(0.03, 0.03)),
    SyntheticClass("A/A, one process +10%", 0.0, with_unlucky_process(0.03, 0.10)),
    SyntheticClass("A/A, one process +25%", 0.0, with_unlucky_process(0.03, 0.25)),
    SyntheticClass("A/A, 25% noise", 0.0, lognormal(0.25)),
    SyntheticClass("+1%, 3% noise", 0.01, lognormal(0.03)),
    SyntheticClass("-1.5%, 2 runs +50%", -0.015, with_disturbance(0.03, 0.5, 2)),
    SyntheticClass("+10%, 3% noise", 0.10, lognormal(0.03)),
    SyntheticClass("-10%, 3% noise", -0.10, lognormal(0.03)),
    SyntheticClass("+10%, heavy tails", 0.10, heavy_tailed(0.03)),
    SyntheticClass("-10%, 2 runs +50%", -0.10, with_disturbance(0.03, 0.5, 2)),
    SyntheticClass("+20%, 5% noise", 0.20, lognormal(0.05)),
)


def simulate(
    engine: SqlEngine,
    cls: SyntheticClass,
    runs: int,
    queries: int,
    seed: int,
    process_rule: bool = True,
) -> Counter[Verdict]:
    """Without the process rule, each query is judged as if it had one process set: a change
    need not show on every set."""
    rng = np.random.default_rng(seed)
    series = {}
    for i in range(queries):
        base = float(rng.uniform(0.01, 1.0))
        logs = cls.noise(rng, 2 * runs)
        pairs = []
        for run in range(runs):
            first, second = base * np.exp(logs[2 * run]), base * np.exp(logs[2 * run + 1])
            reference, patched = (first, second) if reference_first(run) else (second, first)
            pairs.append((float(reference), float(patched) * (1 + cls.change)))
        processes = tuple(server_set(run, PROCESS_SETS) for run in range(runs))
        series[i] = Samples(
            tuple(p[0] for p in pairs), tuple(p[1] for p in pairs), tuple(pairs), processes
        )
    stats = QueryStatistics(engine, PAIRED).statistics(series)
    found = Counter[Verdict]()
    for i, s in stats.items():
        judged = s if process_rule else replace(s, process_diffs=())
        evidence = QueryEvidence(
            "sim", i, "", None, runs_reference=runs, runs_patched=runs, stats=judged
        )
        found[classify(evidence, Thresholds()).verdict] += 1
    return found


COLUMNS = (
    Verdict.SLOWER,
    Verdict.FASTER,
    Verdict.UNSTABLE,
    Verdict.UNCHANGED,
    Verdict.INCONCLUSIVE,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, nargs="+", default=[7, 15, 25])
    parser.add_argument(
        "--process-sets", type=int, default=2, help="server process sets a side (--processes)"
    )
    parser.add_argument(
        "--no-process-rule",
        action="store_true",
        help="judge without the rule that a change must show on every process set",
    )
    parser.add_argument("--only", default="", help="only the classes whose name contains this")
    args = parser.parse_args()
    global PROCESS_SETS
    PROCESS_SETS = args.process_sets
    header = " ".join(f"{v.value[:12]:>12}" for v in COLUMNS)
    print(f"{'class':<26} runs {header}")
    with SqlEngine() as engine:
        for cls in (c for c in CLASSES if args.only in c.name):
            for runs in args.runs:
                found = simulate(
                    engine, cls, runs, args.queries, args.seed, not args.no_process_rule
                )
                shares = " ".join(f"{found[v] / args.queries:>12.1%}" for v in COLUMNS)
                print(f"{cls.name:<26} {runs:>4} {shares}")


if __name__ == "__main__":
    main()
