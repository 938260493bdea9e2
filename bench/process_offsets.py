"""Whether the speed offsets of server processes belong to each process or to a side.

  .venv/bin/python bench/process_offsets.py RUN [RUN ...] [--min-runs 4] [--top 5]

For every query with at least --min-runs runs on each of at least two processes of both sides,
m[side, k] is the median of ln(client time) over the runs of process k of that side. Two
figures of the same variance under the model "each process has an offset of its own, drawn
independently, plus noise":

- the side effect S = mean_k m[patched, k] - mean_k m[reference, k], scaled by sqrt(k / 2);
- the within-side contrasts (m[side, i] - m[side, j]) / sqrt(2), over all process pairs i < j
  of a side.

Both have variance sigma^2 (the variance of one process's median) under that model. In an A/A
run the side effect has nothing else in it; when it spreads wider than the within-side
contrasts, the processes of one side share an offset that a change of process set cannot
reveal, and the rule "every process set must show the change" does not guard against it. In a
run with a real change, S also holds the change, so only the contrasts mean the same thing.
Prints the quantiles of both and the queries with the largest |S|.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

# Run as a script (`python bench/<name>.py`): the repository root holds the packages.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from artifacts.tables import REFERENCE, RUNS
from artifacts.tsv import read_table
from bench.runs import Key

QUANTILES = (0.5, 0.9, 0.98)


@dataclass(frozen=True)
class Offsets:
    key: Key
    side_effect: float  # S, scaled by sqrt(k / 2)
    contrasts: tuple[float, ...]  # within-side, each over sqrt(2)
    medians: dict[str, tuple[float, ...]]  # per side, per process: median of ln(time)


def process_medians(run: Path, min_runs: int) -> dict[Key, dict[str, tuple[float, ...]]]:
    """Per query and side, the median ln(client time) of each process, for the queries whose
    every process of both sides has at least min_runs runs (two processes a side or more)."""
    logs: dict[Key, dict[str, dict[int, list[float]]]] = collections.defaultdict(
        lambda: collections.defaultdict(lambda: collections.defaultdict(list))
    )
    for row in read_table(run, RUNS).rows:
        if row.client_time > 0:
            logs[(row.test, row.query_index)][row.server][row.process].append(
                math.log(row.client_time)
            )
    result = {}
    for key, sides in logs.items():
        processes = {frozenset(by_process) for by_process in sides.values()}
        if len(sides) != 2 or len(processes) != 1 or len(next(iter(processes))) < 2:
            continue
        if any(len(v) < min_runs for by_process in sides.values() for v in by_process.values()):
            continue
        result[key] = {
            side: tuple(statistics.median(by_process[k]) for k in sorted(by_process))
            for side, by_process in sides.items()
        }
    return result


def offsets(key: Key, medians: dict[str, tuple[float, ...]]) -> Offsets:
    reference = medians[REFERENCE]
    patched = medians["patched"]
    k = len(reference)
    side = (statistics.fmean(patched) - statistics.fmean(reference)) * math.sqrt(k / 2)
    contrasts = tuple(
        (a - b) / math.sqrt(2)
        for values in (reference, patched)
        for a, b in itertools.combinations(values, 2)
    )
    return Offsets(key, side, contrasts, medians)


def quantiles(values: list[float]) -> str:
    ordered = sorted(abs(v) for v in values)
    if not ordered:
        return "-"
    return " / ".join(
        f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))]:.1%}" for q in QUANTILES
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--min-runs", type=int, default=4)
    parser.add_argument("--top", type=int, default=5)
    args = parser.parse_args()
    labels = "/".join(f"p{round(q * 100)}" for q in QUANTILES)
    for run in args.runs:
        found = [offsets(k, m) for k, m in process_medians(run, args.min_runs).items()]
        print(
            f"{run}: {len(found)} queries; |S| {labels}: "
            f"{quantiles([o.side_effect for o in found])}; within-side contrasts: "
            f"{quantiles([c for o in found for c in o.contrasts])}"
        )
        for o in sorted(found, key=lambda o: -abs(o.side_effect))[: args.top]:
            each = "; ".join(
                f"{side} " + " ".join(f"{100 * (m - o.medians[REFERENCE][0]):+.1f}" for m in ms)
                for side, ms in sorted(o.medians.items(), key=lambda item: item[0] != REFERENCE)
            )
            print(f"  {o.key[0]} #{o.key[1]}: S {o.side_effect:+.1%} (process medians, % from "
                  f"the first reference process: {each})")  # fmt: skip


if __name__ == "__main__":
    main()
