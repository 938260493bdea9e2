"""The first run after an adaptive look: how much slower it runs, and what the wake query
(runner/measure.py WAKE_QUERY) leaves of that.

An A/A pair of servers, both pinned to one CPU as `--pin-cpu auto` pins them, one
single-threaded query over a 3M-row MergeTree table. Each cycle does, in a random order of
conditions, a gap and then the runs R P P R (R: reference, P: patched):
  warm         no gap: the runs follow the previous cycle's runs at once
  look         one interim look (runner/interim.py, the chDB statistics of a 12-pair query)
  look + wake  the same look, then WAKE_QUERY on R, the server that runs next
The penalty of a cycle is ln(first R / last R): the first R follows the gap, the last R
follows two P runs. Printed per condition: its 25% trimmed mean and mean (with standard
error) over the cycles, and each condition's trimmed mean minus warm's, measured in this one
run (the machine is shared and noisy: compare conditions within a run, not across runs).

Usage: .venv/bin/python bench/bench_wake.py [--cycles N] [--binary PATH] [--cpu N]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

# Run as a script (`python bench/<name>.py`): the repository root holds the `bench` package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from compare.interim import InterimJudge
from compare.verdict import Thresholds
from runner.executor import HttpExecutor
from runner.measure import WAKE_QUERY, WAKE_SETTINGS, samples_of
from runner.server import ServerSpec
from runner.servers import started_servers

# The midmean: a robust centre of a wake-up series.
TRIM = 0.25
SETUP = (
    "CREATE TABLE wake_t (k UInt64, s String, v Float64) ENGINE = MergeTree ORDER BY k",
    "INSERT INTO wake_t SELECT number, toString(number % 10000), number / 3 FROM numbers(3000000)",
)
QUERY = "SELECT sum(v) FROM wake_t WHERE s = '1234'"
SETTINGS = {"max_threads": "1"}


def trimmed_mean(values: list[float]) -> float:
    """The 25% trimmed mean (TRIM a side)."""
    ordered = sorted(values)
    k = int(len(ordered) * TRIM)
    return statistics.fmean(ordered[k : len(ordered) - k])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cycles", type=int, default=250)
    parser.add_argument("--binary", type=Path, default=Path("/usr/sbin/clickhouse-server"))
    parser.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    args = parser.parse_args()
    rng = random.Random(20261123)
    judge = InterimJudge(Thresholds(0.05, 0.10))

    def look() -> None:
        reference = [0.05 * rng.lognormvariate(0, 0.05) for _ in range(12)]
        patched = [r * rng.lognormvariate(0, 0.05) for r in reference]
        judge.stats(samples_of({"reference": reference, "patched": patched}, 2))

    look()  # the session tables of 12 pairs exist before the first measured cycle
    cpus = (args.cpu,)
    reference_spec = ServerSpec("reference", args.binary, cpus=cpus)
    patched_spec = ServerSpec("patched", args.binary, cpus=cpus)
    with started_servers(reference_spec, patched_spec) as pair:
        executors = {
            "reference": HttpExecutor(pair.reference.process.ports.http, 30),
            "patched": HttpExecutor(pair.patched.process.ports.http, 30),
        }

        def run(
            side: str, label: str, sql: str = QUERY, settings: dict[str, str] = SETTINGS
        ) -> float:
            outcome = executors[side].execute(sql, f"bench.wake.{label}", settings)
            if not outcome.ok:
                raise SystemExit(f"{side} server: {outcome.message}")
            return outcome.elapsed

        def look_and_wake() -> None:
            look()
            run("reference", f"wake{rng.random()}", WAKE_QUERY, WAKE_SETTINGS)

        for executor in executors.values():
            for statement in SETUP:
                outcome = executor.execute(statement, f"bench.wake.setup{rng.random()}", {})
                if not outcome.ok:
                    raise SystemExit(f"setup on port {executor.port}: {outcome.message}")
        gaps: dict[str, Callable[[], None]] = {
            "warm": lambda: None,
            "look": look,
            "look + wake": look_and_wake,
        }
        penalties: dict[str, list[float]] = {name: [] for name in gaps}
        number = 0
        for cycle in range(args.cycles):
            order = list(gaps)
            rng.shuffle(order)
            for name in order:
                gaps[name]()
                times = []
                for side in ("reference", "patched", "patched", "reference"):
                    number += 1
                    times.append(run(side, str(number)))
                penalties[name].append(math.log(times[0] / times[3]))
            if (cycle + 1) % 50 == 0:
                print(f"{cycle + 1}/{args.cycles} cycles", file=sys.stderr)
        for executor in executors.values():
            executor.close()
    judge.close()
    warm = trimmed_mean(penalties["warm"])
    print(f"first run after the gap against the last run of R P P R, {args.cycles} cycles, "
          f"servers on CPU {args.cpu}:")  # fmt: skip
    for name, values in penalties.items():
        error = statistics.pstdev(values) / math.sqrt(len(values))
        print(
            f"  {name:12s} trimmed mean {trimmed_mean(values):+.4f}, mean "
            f"{statistics.fmean(values):+.4f} +- {error:.4f}; "
            f"trimmed minus warm {trimmed_mean(values) - warm:+.4f}"
        )


if __name__ == "__main__":
    main()
