"""Whether a CPU speed probe next to each run could take the machine's speed out of the pair
differences the verdict rests on.

An A/A pair of servers, both pinned to one CPU as `--pin-cpu auto` pins them, runs a few
single-threaded queries over numbers() (no tables) in chperf's run order (runner/schedule.py),
with a probe right before and right after every run: a fixed loop of Python arithmetic in a
helper process pinned to the same CPU, its wall time a measure of how fast that CPU runs at
that moment. A run's probe is the geometric mean of its two. Per query, printed:
  run r     correlation of ln(run time) with ln(probe) over all runs (both centred per side):
            how much of the run-to-run spread is the CPU's speed as the probe sees it
  pair r    the same for the pair differences d = ln(P / R) against g = ln(probe P / probe R):
            what a normalisation could remove from the statistic's input
  spread    the robust spread (1.4826 x MAD) and the standard deviation of d; of d - g (the
            run time divided by its probe); of d - b g with b the least-squares slope fitted
            on the same pairs (an optimistic bound: b is fitted in-sample)

Usage: .venv/bin/python bench/speed_probe.py [--pairs N] [--binary PATH] [--cpu N]
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

# Run as a script (`python bench/<name>.py`): the repository root holds the `bench` package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np

from artifacts.tables import PATCHED, REFERENCE
from bench.noise_sources import robust_spread
from runner.executor import HttpExecutor
from runner.schedule import run_schedule
from runner.server import ServerSpec
from runner.servers import started_servers

QUERIES = (
    "SELECT sum(cityHash64(number)) FROM numbers(6000000)",
    "SELECT max(c) FROM (SELECT intHash64(number) % 3000000 AS k, count() AS c "
    "FROM numbers(4000000) GROUP BY k)",
    "SELECT sum(length(lower(toString(number)))) FROM numbers(3000000)",
    "SELECT quantileExact(number * 7 % 1000003) FROM numbers(3000000)",
    "SELECT uniqExact(intHash64(number)) FROM numbers(2000000)",
    "SELECT count() FROM (SELECT number % 200000 AS k, count() FROM numbers(4000000) GROUP BY k)",
)
SETTINGS = {"max_threads": "1"}
SIDES = (REFERENCE, PATCHED)
# About 5 ms of interpreter arithmetic on this machine's vCPUs.
PROBE_ITERATIONS = 150_000


def _probe_loop(connection: Connection, cpu: int) -> None:
    os.sched_setaffinity(0, {cpu})
    while connection.recv():
        start = time.perf_counter()
        total = 0
        for i in range(PROBE_ITERATIONS):
            total += i * i
        connection.send(time.perf_counter() - start)


def correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r; NaN when either series is constant."""
    if x.std() == 0 or y.std() == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


@dataclass(frozen=True)
class ProbeFigures:
    median_time: float  # seconds
    run_r: float
    pair_r: float
    slope: float  # least squares of d on g, fitted on the same pairs
    spread: tuple[float, float, float]  # robust spread of d, d - g, d - slope g
    sd: tuple[float, float, float]  # their standard deviations


def probe_figures(runs: Sequence[tuple[str, int, float, float]]) -> ProbeFigures:
    """`runs`: (side, pair number, ln run time, ln probe) in run order, both runs of every
    pair."""
    centred_t: list[float] = []
    centred_p: list[float] = []
    for side in SIDES:
        ts = np.array([t for s, _, t, _ in runs if s == side])
        ps = np.array([p for s, _, _, p in runs if s == side])
        centred_t.extend(ts - np.median(ts))
        centred_p.extend(ps - np.median(ps))
    by_pair: dict[int, dict[str, tuple[float, float]]] = {}
    for side, pair, t, p in runs:
        by_pair.setdefault(pair, {})[side] = (t, p)
    d = np.array([v[PATCHED][0] - v[REFERENCE][0] for v in by_pair.values()])
    g = np.array([v[PATCHED][1] - v[REFERENCE][1] for v in by_pair.values()])
    # The least-squares slope; 0 when the probe never differed within a pair (nothing to fit).
    slope = float(np.cov(g, d)[0, 1] / g.var(ddof=1)) if g.var() > 0 else 0.0
    series = (d, d - g, d - slope * g)
    return ProbeFigures(
        median_time=math.exp(statistics.median(t for _, _, t, _ in runs)),
        run_r=correlation(np.array(centred_t), np.array(centred_p)),
        pair_r=correlation(d, g),
        slope=slope,
        spread=(
            robust_spread(series[0].tolist()),
            robust_spread(series[1].tolist()),
            robust_spread(series[2].tolist()),
        ),
        sd=(float(series[0].std()), float(series[1].std()), float(series[2].std())),
    )


def summarize(query: int, figures: ProbeFigures) -> str:
    f = figures
    return (
        f"query {query} ({f.median_time:.3f} s): run r {f.run_r:+.2f}, pair r {f.pair_r:+.2f}; "
        f"spread of d {f.spread[0]:.3f} (sd {f.sd[0]:.3f}), "
        f"d - g {f.spread[1]:.3f} ({f.sd[1]:.3f}), "
        f"d - {f.slope:.2f} g {f.spread[2]:.3f} ({f.sd[2]:.3f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=40, help="pairs a query")
    parser.add_argument("--binary", type=Path, default=Path("/usr/sbin/clickhouse-server"))
    parser.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    args = parser.parse_args()
    ours, theirs = multiprocessing.Pipe()
    helper = multiprocessing.Process(target=_probe_loop, args=(theirs, args.cpu), daemon=True)
    helper.start()

    def probe() -> float:
        ours.send(True)
        return float(ours.recv())

    cpus = (args.cpu,)
    specs = (ServerSpec(REFERENCE, args.binary, cpus=cpus),
             ServerSpec(PATCHED, args.binary, cpus=cpus))  # fmt: skip
    try:
        with started_servers(*specs) as pair:
            executors = {
                side: HttpExecutor(pair.side(side).process.ports.http, 60) for side in SIDES
            }
            number = 0

            def run(side: str, sql: str) -> float:
                nonlocal number
                number += 1
                outcome = executors[side].execute(sql, f"bench.probe.{number}", SETTINGS)
                if not outcome.ok:
                    raise SystemExit(f"{side} server: {outcome.message}")
                return outcome.elapsed

            print(f"servers and probe on CPU {args.cpu}, {args.pairs} pairs a query:")
            for index, sql in enumerate(QUERIES):
                for side in executors:  # one prewarm a server, as chperf does
                    run(side, sql)
                runs = []
                for slot in run_schedule(args.pairs):  # chperf's order of runs
                    before = probe()
                    elapsed = run(slot.side, sql)
                    after = probe()
                    level = (math.log(before) + math.log(after)) / 2
                    runs.append((slot.side, slot.run, math.log(elapsed), level))
                print(summarize(index, probe_figures(runs)), flush=True)
            for executor in executors.values():
                executor.close()
    finally:
        ours.send(False)
        helper.join(5)


if __name__ == "__main__":
    main()
