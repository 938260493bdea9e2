"""compare/noise.py: the machine-noise figure of summary.json and the report."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from compare import CompareOptions, compare_directory
from compare.noise import PAIRS, machine_noise, pair_spread
from compare.randomization import Samples
from compare.stopping import MIN_RUNS
from report import render_report
from tests.runs import write_artifacts


def alternating(spread: float, later: float = 0.0, base: float = 0.1) -> Samples:
    """PAIRS pairs whose log ratios alternate +spread, -spread, then 3 pairs at `later`."""
    logs = [spread if n % 2 == 0 else -spread for n in range(PAIRS)] + [later] * 3
    pairs = tuple((base, base * math.exp(x)) for x in logs)
    return Samples(tuple(r for r, _ in pairs), tuple(p for _, p in pairs), pairs)


def sd(spread: float) -> float:
    """The population sd of PAIRS values alternating +spread, -spread (one more +spread when
    PAIRS is odd)."""
    return spread * math.sqrt(1 - (PAIRS % 2 / PAIRS) ** 2)


def test_every_query_of_an_adaptive_run_counts() -> None:
    # A query the stop rule settles at its first look has MIN_RUNS pairs: counted all the same,
    # so an adaptive run's figure is over the same queries as a fixed run's.
    quiet = Samples((0.1,) * MIN_RUNS, (0.1,) * MIN_RUNS, ((0.1, 0.1),) * MIN_RUNS)
    found = pair_spread([quiet, alternating(0.05)])
    assert found is not None and found[1] == 2


def test_the_spread_is_the_median_over_queries_of_the_first_pairs_only() -> None:
    # pairs after the first PAIRS do not count, however far out
    series = [alternating(0.02, later=2.0), alternating(0.05, later=-2.0), alternating(0.30)]
    short = Samples((0.1,) * 5, (0.1,) * 5, ((0.1, 0.1),) * 5)  # too few pairs: left out
    found = pair_spread([*series, short])
    assert found is not None and found[0] == pytest.approx(sd(0.05)) and found[1] == 3
    assert pair_spread([short]) is None


def test_a_change_shifts_the_ratios_but_not_their_spread() -> None:
    steady = alternating(0.04)
    slower = Samples(steady.reference, tuple(p * 1.3 for p in steady.patched),
                     tuple((r, p * 1.3) for r, p in steady.pairs))  # fmt: skip
    assert pair_spread([slower]) == pytest.approx(pair_spread([steady]))


def test_machine_noise_carries_the_median_threshold() -> None:
    noise = machine_noise({1: alternating(0.02)}, [0.05, None, 0.07, 0.09])
    assert noise is not None and noise.median_threshold == pytest.approx(0.07)
    assert noise.as_json()["pairs"] == PAIRS and noise.queries == 1
    assert machine_noise({}, [0.05]) is None


def test_summary_and_report_state_the_machine_noise(tmp_path: Path) -> None:
    series = {index: alternating(spread) for index, spread in enumerate((0.01, 0.03, 0.08))}
    out = write_artifacts(
        tmp_path / "run", {i: (s.reference, s.patched) for i, s in series.items()}
    )
    compare_directory(out, CompareOptions())
    noise = json.loads((out / "summary.json").read_text())["noise"]
    assert noise["pair_spread"] == pytest.approx(sd(0.03))
    assert noise["queries"] == 3 and noise["pairs"] == PAIRS
    assert noise["median_threshold"] > 0
    html = render_report(out).path.read_text()
    assert f"Machine noise: {sd(0.03):.1%}, the median over 3 queries" in html
