"""Shared by the benchmarks: run `chperf run` as a subprocess and read its outputs."""

from __future__ import annotations

import collections
import json
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from artifacts.manifest import read_manifest
from artifacts.tables import QUERIES, REFERENCE, RUNS, TESTS
from artifacts.tsv import read_table
from compare.evidence import gather
from compare.noise import pair_spread
from runner.schedule import run_pair

REPO = Path(__file__).resolve().parents[1]
QUICK_TESTS = REPO / "tests" / "data" / "runner_small"
CHANGED = ("faster", "slower")
# The known-change bar: recall on true changes at least LARGE; a flag on a true change below
# SMALL is a false one.
LARGE, SMALL = 0.10, 0.02


@dataclass(frozen=True)
class RunResult:
    out: Path
    exit_code: int
    wall_seconds: float  # the whole `chperf run` process, servers and compare included
    measured_seconds: float  # run.json measured_runs_seconds: the ABBA runs alone
    client_seconds: float  # sum of client_time over all measured runs, both sides
    summary: dict[str, Any]

    def verdicts(self) -> dict[tuple[str, int], dict[str, Any]]:
        return {(q["test"], q["query_index"]): q for q in self.summary["queries"]}

    def placement(self) -> str:
        """run.json options.pin: where the servers ran (--pin-cpu), in words."""
        options = read_manifest(self.out).get("options") or {}
        return str(options.get("pin") or f"pin_cpus {options.get('pin_cpus') or 'none'}")


def chperf_run(out: Path, tests: Path, extra: list[str]) -> RunResult:
    command = [sys.executable, "-m", "chperf", "run", "--tests", str(tests), "--out", str(out),
               "--force", "--no-profile", *extra]  # fmt: skip
    print("$ " + " ".join(command), file=sys.stderr)
    start = time.perf_counter()
    done = subprocess.run(command, check=False, cwd=REPO)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"chperf run failed with exit code {done.returncode}; see {out}")
    return _load(out, done.returncode, wall)


def existing_run(out: Path) -> RunResult:
    """A finished run, judged again by this checkout's `chperf compare`; its wall time is
    run.json duration_seconds (the run itself, without that compare)."""
    print(f"$ chperf compare {out}  (reusing an earlier run)", file=sys.stderr)
    done = subprocess.run([sys.executable, "-m", "chperf", "compare", str(out)],
                          check=False, cwd=REPO, capture_output=True, text=True)  # fmt: skip
    if done.returncode not in (0, 1):
        raise SystemExit(f"chperf compare {out} failed ({done.returncode}): {done.stderr}")
    return _load(out, done.returncode, float(read_manifest(out).get("duration_seconds", 0.0)))


def _load(out: Path, exit_code: int, wall: float) -> RunResult:
    manifest = read_manifest(out)
    client = sum(r.client_time for r in read_table(out, RUNS).rows)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return RunResult(
        out, exit_code, wall, float(manifest.get("measured_runs_seconds", 0.0)), client,
        summary,
    )  # fmt: skip


def slowest_tests(out: Path, count: int) -> list[tuple[str, float]]:
    rows = read_table(out, TESTS).rows
    return sorted(((r.test, r.wall_time) for r in rows), key=lambda t: -t[1])[:count]


def same_pace_ratio(run: RunResult, runs: int = 15) -> float:
    """Client time of `run` over what `runs` runs per side of every query would have cost at
    the same per-query pace (each query's own mean client time per run and side). Two runs
    back to back on a shared machine can differ in speed; this ratio does not depend on
    that."""
    per_query: dict[tuple[str, int], list[float]] = {}
    for row in read_table(run.out, RUNS).rows:
        per_query.setdefault((row.test, row.query_index), []).append(row.client_time)
    spent = sum(sum(times) for times in per_query.values())
    fixed = sum(sum(times) / len(times) * 2 * runs for times in per_query.values())
    return spent / fixed if fixed else float("nan")


def truth_undetermined(query: dict[str, Any], min_effect: float = 0.05) -> bool:
    """Whether a ground-truth query's server process sets disagree about its change: opposite
    directions, one of them by at least the minimum effect. Its pooled D then mixes a
    difference between two processes of the same binary (memory layout) into the "true
    change". Such queries are left out of the recall, wrong-direction and below-2% counts,
    and listed."""
    diffs = query.get("process_diffs") or []
    if len(diffs) < 2:
        return False
    return bool(min(diffs) < 0 < max(diffs) and max(abs(d) for d in diffs) >= min_effect)


def pair_noise(run: RunResult) -> float:
    """The machine's noise while `run` ran, as compare computes it for summary.json
    (compare/noise.py): per query, the standard deviation of ln(patched / reference) over its
    first PAIRS (6) pairs, which every query of either mode has, then the median over the
    queries. The mode that ran in the noisier state needs more runs to settle, which its
    time ratio then shows."""
    spread = pair_spread(gather(run.out).client_time.values())
    return float("nan") if spread is None else spread[0]


Key = tuple[str, int]


@dataclass(frozen=True)
class Consensus:
    """What several independent long truths of the same change agree on: long truths taken
    hours apart disagree on some queries by several points, so one truth alone mislabels
    some queries the bar counts."""

    large: dict[Key, float]  # |change| >= `large` in every truth, one direction: the mean
    directed: dict[Key, float]  # |change| >= `small` in every truth, one direction: the mean
    small: frozenset[Key]  # |change| < `small` in every truth
    queries: int  # determined in every truth


def run_pairs(run: Path) -> dict[Key, list[tuple[float, float]]]:
    """Per query of the run directory `run`, in queries.tsv order, the (reference, patched)
    client times by run number: the pairs replay_stops.py and inject_change.py start from."""
    sides: dict[Key, dict[str, dict[int, float]]] = collections.defaultdict(
        lambda: collections.defaultdict(dict)
    )
    for row in read_table(run, RUNS).rows:
        sides[(row.test, row.query_index)][row.server][row.run] = row.client_time
    order = [(q.test, q.query_index) for q in read_table(run, QUERIES).rows]
    pairs = {}
    for key in order:
        ref, pat = sides[key]["reference"], sides[key]["patched"]
        pairs[key] = [(ref[n], pat[n]) for n in sorted(ref) if n in pat]
    return pairs


def side_times(pairs: Sequence[tuple[float, float]]) -> dict[str, list[float]]:
    """(reference, patched) pairs as each side's times in run order: runner.measure.samples_of's
    input."""
    return {"reference": [r for r, _ in pairs], "patched": [p for _, p in pairs]}


def consensus(truths: list[dict[Key, float]], large: float, small: float) -> Consensus:
    """`truths`: per truth, the true change of each query it determined."""
    common = set(truths[0]).intersection(*truths[1:]) if truths else set()
    big: dict[Key, float] = {}
    directed: dict[Key, float] = {}
    quiet = set()
    for key in common:
        changes = [truth[key] for truth in truths]
        smallest = min(abs(c) for c in changes)
        one_way = all(c > 0 for c in changes) or all(c < 0 for c in changes)
        if one_way and smallest >= small:
            directed[key] = sum(changes) / len(changes)
            if smallest >= large:
                big[key] = directed[key]
        if max(abs(c) for c in changes) < small:
            quiet.add(key)
    return Consensus(big, directed, frozenset(quiet), len(common))


def truth_spread(first: dict[Key, float], second: dict[Key, float]) -> tuple[float, float]:
    """The median and 90th percentile of |first - second| over the queries both determined."""
    gaps = sorted(abs(first[k] - second[k]) for k in set(first) & set(second))
    if not gaps:
        return float("nan"), float("nan")
    return statistics.median(gaps), gaps[min(len(gaps) - 1, int(len(gaps) * 0.9))]


def side_bias(run: Path) -> dict[str, float]:
    """How much slower the reference ran than the patched server, as the mean of
    ln(reference / patched) over all pairs of all queries, in total and by the pair's place in
    its block of two (first/second) and by which side went first (under the current
    runner/schedule.py). In an A/A every figure is
    0 up to noise; a position or a side that is consistently slower shows here before it shows
    as a false "changed"."""
    groups: dict[str, list[float]] = collections.defaultdict(list)
    for pairs in run_pairs(run).values():
        for n, (reference, patched) in enumerate(pairs):
            if reference <= 0 or patched <= 0:
                continue
            value = math.log(reference / patched)
            groups["all"].append(value)
            groups["first pair of a block" if n % 2 == 0 else "second pair of a block"].append(
                value
            )
            groups[
                "reference first" if run_pair(n)[0].side == REFERENCE else "patched first"
            ].append(value)
    return {name: statistics.fmean(values) for name, values in groups.items() if values}
