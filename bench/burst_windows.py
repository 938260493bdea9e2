"""Whether short bursts of a long run's own pairs flag changes its whole run does not see: the
part of the known-change errors that a schedule spreading a query's runs over time could
remove.

  .venv/bin/python bench/burst_windows.py TRUTH [--pairs 6] [--truth-pairs 41]

TRUTH is a long fixed run (`chperf run --patched-config overlays/max_block_size_8192 --runs
41`). For every query and every window of --pairs consecutive pairs starting at a whole block
(what an adaptive run sees when it stops early), the window is judged by compare's per-query
rule (significant at 1%, |D| >= 5%, every process set's own D at least 5% in D's direction)
and scored against the D of the query's first --truth-pairs pairs: windows flagged on a query
whose whole-run change is below 2%, and windows flagged in the direction opposite to it.
Zero of both means the run's own states within a query's window (the machine speeding up or
slowing down for seconds) do not make false flags on their own; the errors of a separate
adaptive run against this truth then come from what differs between runs (the servers'
processes and their state), which no schedule within one run reaches.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

# Run as a script (`python bench/<name>.py`): the repository root holds the packages.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from artifacts.manifest import read_manifest
from bench.runs import LARGE, SMALL, Key, run_pairs
from compare.blocked import PAIRS_PER_BLOCK, Pair, blocked_stats, process_diffs
from compare.verdict import MIN_EFFECT, every_process_shows
from runner.schedule import server_set

DEFAULT_SETS = 2  # chperf's default process sets: block b runs on set b % 2


@dataclass
class Tally:
    windows: int = 0
    flagged: int = 0
    small_queries: int = 0
    flagged_small: int = 0
    flagged_wrong: int = 0
    large_windows: int = 0
    found_large: int = 0


def window_flag(pairs: list[Pair], first_run: int, sets: int = DEFAULT_SETS) -> float | None:
    """D when compare's per-query rule calls the window changed, else None."""
    stats = blocked_stats(pairs)
    diffs = process_diffs(pairs, [server_set(first_run + i, sets) for i in range(len(pairs))])
    if (
        stats.significant
        and abs(stats.diff) >= MIN_EFFECT
        and every_process_shows(diffs, stats.diff, MIN_EFFECT)
    ):
        return stats.diff
    return None


def score(
    series: dict[Key, list[Pair]], window: int, truth_pairs: int, sets: int = DEFAULT_SETS
) -> tuple[Tally, list[str]]:
    tally, notes = Tally(), []
    for key, pairs in series.items():
        if len(pairs) < truth_pairs:
            continue
        whole = blocked_stats(pairs[:truth_pairs]).diff
        tally.small_queries += abs(whole) < SMALL
        for start in range(0, truth_pairs - window + 1, PAIRS_PER_BLOCK):
            tally.windows += 1
            tally.large_windows += abs(whole) >= LARGE
            flag = window_flag(pairs[start : start + window], start, sets)
            if flag is None:
                continue
            tally.flagged += 1
            tally.found_large += abs(whole) >= LARGE and flag * whole > 0
            small, wrong = abs(whole) < SMALL, flag * whole < 0
            tally.flagged_small += small
            tally.flagged_wrong += wrong and not small
            if small or wrong:
                notes.append(f"{key[0]} #{key[1]} pairs {start}-{start + window - 1}: "
                             f"{flag:+.1%} against {whole:+.1%}"
                             + ("" if small else " (wrong direction)"))  # fmt: skip
    return tally, notes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("truth", type=Path, help="a long fixed run (41 runs a side)")
    parser.add_argument("--pairs", type=int, default=6, help="pairs in a window (whole blocks)")
    parser.add_argument("--truth-pairs", type=int, default=41)
    args = parser.parse_args()
    if args.pairs < 6 or args.pairs % PAIRS_PER_BLOCK:
        raise SystemExit("--pairs must be an even number of at least 6 (whole blocks)")
    options = read_manifest(args.truth).get("options") or {}
    sets = int(options.get("processes") or 1)  # older runs: one process a side
    tally, notes = score(run_pairs(args.truth), args.pairs, args.truth_pairs, sets)
    print(f"windows of {args.pairs} pairs: {tally.windows}, flagged {tally.flagged}")
    print(f"  on queries whose {args.truth_pairs}-pair change is below {SMALL:.0%} "
          f"({tally.small_queries} queries): {tally.flagged_small} flagged windows")  # fmt: skip
    print(f"  in the direction opposite to the whole run's change: {tally.flagged_wrong}")
    print(f"  on queries whose change is at least {LARGE:.0%}: {tally.found_large} of "
          f"{tally.large_windows} windows called in its direction")  # fmt: skip
    for note in notes[:20]:
        print(f"    {note}")


if __name__ == "__main__":
    main()
