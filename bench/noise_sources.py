"""Where a run's noise comes from: whether the servers' own CPU time is any steadier than the
wall time chperf measures, and whether the outlying pairs coincided with what the environment
monitor saw.

For every query of a run directory, the spread of ln(patched / reference) over its pairs
(1.4826 x the median absolute deviation, so one slow run does not dominate it) in three
measures of the same runs: the client's wall time (what the verdict uses), the server's
query_duration_ms and the server's CPU time (ProfileEvents UserTimeMicroseconds +
SystemTimeMicroseconds); the median over the queries of each. If CPU time were much steadier,
the noise would be time the query spent off the CPU (preemption, waits) and CPU time would be
the better measure; if it is as noisy, the CPU itself ran slower, which no choice of measure
removes. Then the pairs by how far they lie from their query's median, in those robust
deviations, with the monitor's CPU pressure (share of time a task waited for a CPU), steal and
foreign CPU during them.

Usage: .venv/bin/python bench/noise_sources.py RUN [RUN ...]
"""

from __future__ import annotations

import argparse
import bisect
import collections
import math
import statistics
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from artifacts.tables import MONITOR, PROFILE_EVENTS, QUERY_LOG, RUNS, MonitorRow
from artifacts.tsv import read_table

CPU_EVENTS = ("UserTimeMicroseconds", "SystemTimeMicroseconds")
MEASURES = ("wall", "server", "cpu")
# Deviation bands, in robust standard deviations of the query's pairs.
BANDS = ((0.0, 2.0), (2.0, 3.0), (3.0, 5.0), (5.0, math.inf))
MIN_PAIRS = 8

Key = tuple[str, int]
Side = dict[str, float]  # measure -> seconds


def robust_spread(values: Sequence[float]) -> float:
    """1.4826 x the median absolute deviation from the median: the standard deviation for
    normal data, little moved by a few outliers."""
    centre = statistics.median(values)
    return 1.4826 * statistics.median(abs(v - centre) for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, nargs="+", help="run directories (chperf run --out)")
    args = parser.parse_args()
    for run in args.runs:
        report(run)


def spreads_by_measure(pairs: dict[Key, dict[int, dict[str, Side]]]) -> dict[str, list[float]]:
    """measure -> the robust spread of ln(patched / reference) of every query with at least
    MIN_PAIRS pairs in that measure."""
    spreads: dict[str, list[float]] = collections.defaultdict(list)
    for sides in pairs.values():
        for measure in MEASURES:
            ratios = _log_ratios(sides.values(), measure)
            if len(ratios) >= MIN_PAIRS:
                spreads[measure].append(robust_spread(ratios))
    return spreads


def report(run: Path) -> None:
    pairs = _pairs(run)
    spreads = spreads_by_measure(pairs)
    print(f"{run}: {len(pairs)} queries")
    for measure in MEASURES:
        values = sorted(spreads[measure])
        if values:
            print(
                f"  {measure:6} median spread of ln(patched/reference) over a query's pairs: "
                f"{statistics.median(values):.4f} (75th percentile "
                f"{values[3 * len(values) // 4]:.4f}, {len(values)} queries)"
            )
    _print_bands(run, pairs)


def _pairs(run: Path) -> dict[Key, dict[int, dict[str, Side]]]:
    """query -> run number -> side -> measure -> seconds, and "start": when the run began
    (wall clock), to place it among the monitor's samples."""
    cpu: dict[tuple[str, str], float] = collections.defaultdict(float)
    for event in read_table(run, PROFILE_EVENTS).rows:
        if event.event in CPU_EVENTS:
            cpu[(event.query_id, event.server)] += event.value / 1e6
    server = {(r.query_id, r.server): r.server_time for r in read_table(run, QUERY_LOG).rows}
    pairs: dict[Key, dict[int, dict[str, Side]]] = collections.defaultdict(
        lambda: collections.defaultdict(dict)
    )
    for row in read_table(run, RUNS).rows:
        key = (row.query_id, row.server)
        pairs[(row.test, row.query_index)][row.run][row.server] = {
            "wall": row.client_time,
            "server": server.get(key, 0.0),
            "cpu": cpu.get(key, 0.0),
            "start": row.start_time,
        }
    return pairs


def _log_ratios(pairs: Iterable[dict[str, Side]], measure: str) -> list[float]:
    ratios = []
    for sides in pairs:
        ref, pat = sides.get("reference", {}), sides.get("patched", {})
        if ref.get(measure, 0.0) > 0 and pat.get(measure, 0.0) > 0:
            ratios.append(math.log(pat[measure] / ref[measure]))
    return ratios


def _print_bands(run: Path, pairs: dict[Key, dict[int, dict[str, Side]]]) -> None:
    samples = sorted(read_table(run, MONITOR).rows, key=lambda s: s.time)
    if not samples:
        print("  no monitor.tsv samples: no pressure figures")
        return
    ends = [s.time for s in samples]
    bands: dict[tuple[float, float], list[MonitorRow]] = collections.defaultdict(list)
    for runs in pairs.values():
        complete = [
            s for s in runs.values() if len(s) == 2 and all(v["wall"] > 0 for v in s.values())
        ]
        ratios = _log_ratios(complete, "wall")
        if len(ratios) < MIN_PAIRS:
            continue
        centre, spread = statistics.median(ratios), robust_spread(ratios) or math.inf
        for sides, ratio in zip(complete, ratios, strict=True):
            start = min(v["start"] for v in sides.values())
            end = max(v["start"] + v["wall"] for v in sides.values())
            worst = _worst(samples, ends, start, end)
            if worst is None:
                continue
            deviation = abs(ratio - centre) / spread
            band = next(b for b in BANDS if b[0] <= deviation < b[1])
            bands[band].append(worst)
    print("  pairs by deviation from their query's median (robust sd), with the monitor's worst")
    print("  interval during the pair: mean CPU pressure, share with pressure above 0.2, mean")
    print("  steal, share with foreign CPU of 0.25 cores or more")
    for band in BANDS:
        rows = bands.get(band, [])
        if not rows:
            continue
        pressure = [r.cpu_pressure or 0.0 for r in rows]
        high = sum(p > 0.2 for p in pressure) / len(rows)
        foreign = sum(r.foreign_cpu >= 0.25 for r in rows) / len(rows)
        print(
            f"    {band[0]:g}-{band[1]:g}: {len(rows)} pairs, pressure "
            f"{statistics.mean(pressure):.3f} ({high:.1%} above 0.2), steal "
            f"{statistics.mean(r.steal for r in rows):.3f}, foreign CPU {foreign:.1%}"
        )


def _worst(
    samples: Sequence[MonitorRow], ends: Sequence[float], start: float, end: float
) -> MonitorRow | None:
    """The sample with the highest CPU pressure among those overlapping [start, end]."""
    first = bisect.bisect_right(ends, start)
    overlapping = []
    for sample in samples[first:]:
        if sample.time - sample.seconds >= end:
            break
        overlapping.append(sample)
    return max(overlapping, key=lambda s: s.cpu_pressure or 0.0, default=None)


if __name__ == "__main__":
    main()
