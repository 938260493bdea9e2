"""How much a query's change moves between two runs of the same comparison, and whether the
server process sets of each run agree with each other: the variation no statistic within one
run can see.

  .venv/bin/python bench/between_runs.py RUN_A RUN_B [--min-pairs 6] [--apart 0.05]

For every query measured in both runs with at least --min-pairs pairs, D is the median of
ln(patched / reference) over its pairs (per run, and per process set within a run). Prints
the quantiles of |D_A - D_B| over the queries, the same spread between the two process sets
of one run, and the queries that move most. When runs move apart by much more than the
process sets of one run do, the change itself depends on when it was measured (the state
of the machine), and a verdict within one run carries that uncertainty unseen. It also counts
the queries on which every process set of run B differs from run A's D in the same direction
by more than --apart: a difference between runs that the rule "every set must show the
change" cannot catch.
"""

from __future__ import annotations

import argparse
import collections
import math
import statistics
import sys
from pathlib import Path

# Run as a script (`python bench/<name>.py`): the repository root holds the packages.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from artifacts.tables import RUNS
from artifacts.tsv import read_table

Key = tuple[str, int]
QUANTILES = (0.5, 0.9, 0.95, 0.99, 1.0)


def changes(run: Path, min_pairs: int) -> tuple[dict[Key, float], dict[Key, dict[int, float]]]:
    """Per query, D over all its pairs and D per process set (sets with min_pairs / 2)."""
    times: dict[tuple[str, int, int], dict[str, tuple[float, int]]] = collections.defaultdict(dict)
    for row in read_table(run, RUNS).rows:
        times[(row.test, row.query_index, row.run)][row.server] = (row.client_time, row.process)
    logs: dict[Key, list[float]] = collections.defaultdict(list)
    by_set: dict[Key, dict[int, list[float]]] = collections.defaultdict(
        lambda: collections.defaultdict(list)
    )
    for (test, index, _), sides in times.items():
        if "reference" in sides and "patched" in sides:
            d = math.log(sides["patched"][0] / sides["reference"][0])
            logs[(test, index)].append(d)
            by_set[(test, index)][sides["reference"][1]].append(d)
    overall = {k: statistics.median(v) for k, v in logs.items() if len(v) >= min_pairs}
    sets = {
        k: {s: statistics.median(v) for s, v in by_set[k].items() if len(v) >= min_pairs // 2}
        for k in overall
    }
    return overall, sets


def every_set_apart(reference: float, sets: list[float], apart: float) -> bool:
    """Two or more sets, all beyond `reference` by more than `apart` on the same side."""
    return len(sets) >= 2 and (
        all(d - reference > apart for d in sets) or all(reference - d > apart for d in sets)
    )


def quantiles(values: list[float]) -> str:
    ordered = sorted(values)
    if not ordered:
        return "none"
    picks = [ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in QUANTILES]
    return ", ".join(f"{q:.0%} {p:.1%}" for q, p in zip(QUANTILES, picks, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("--min-pairs", type=int, default=6)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--apart", type=float, default=0.05)
    args = parser.parse_args()
    a, sets_a = changes(args.run_a, args.min_pairs)
    b, sets_b = changes(args.run_b, args.min_pairs)
    common = sorted(set(a) & set(b))
    between = [abs(a[k] - b[k]) for k in common]
    within = [
        abs(v[0] - v[1])
        for sets in (sets_a, sets_b)
        for k in common
        if len(v := list(sets[k].values())) == 2
    ]
    print(f"{len(common)} queries in both runs (at least {args.min_pairs} pairs each)")
    print(f"|D_A - D_B| between the runs (log scale): {quantiles(between)}")
    print(f"|D_set0 - D_set1| within a run:           {quantiles(within)}")
    shared = sum(every_set_apart(a[k], list(sets_b[k].values()), args.apart) for k in common)
    print(f"every process set of B off A's D the same way by more than {args.apart:.0%}: "
          f"{shared} of {len(common)}")  # fmt: skip
    print("moved most: query, D in A, D in B, D per process set in A / in B")
    for k in sorted(common, key=lambda k: -abs(a[k] - b[k]))[: args.top]:
        set_a = " ".join(f"{v:+.1%}" for v in sets_a[k].values())
        set_b = " ".join(f"{v:+.1%}" for v in sets_b[k].values())
        print(f"  {k[0]} query {k[1]}: {a[k]:+.1%} {b[k]:+.1%}  ({set_a} / {set_b})")


if __name__ == "__main__":
    main()
