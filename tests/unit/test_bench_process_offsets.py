"""bench/process_offsets.py: per-process medians of a run's runs.tsv, the side effect and the
within-side contrasts. No servers: runs.tsv written here."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from artifacts.tables import RUNS, RunRow
from artifacts.tsv import write_table
from bench.process_offsets import offsets, process_medians


def _runs(query: int, factors: dict[tuple[str, int], float], runs: int) -> list[RunRow]:
    """`runs` runs of each (side, process), at 0.1 s times its factor, with a little spread."""
    return [
        RunRow(
            "t",
            query,
            side,
            n,
            f"q{query}-{side}-{process}-{n}",
            0.1 * factor * (1 + 0.001 * (n % 3)),
            process,
        )
        for (side, process), factor in factors.items()
        for n in range(runs)
    ]


def test_a_side_effect_and_contrasts_from_the_process_medians(tmp_path: Path) -> None:
    """Reference processes at 1.0 and 1.2, patched both at 1.1: S is the patched mean over the
    reference mean; the reference contrast is ln(1.2) / sqrt(2), the patched one 0."""
    factors = {
        ("reference", 0): 1.0,
        ("reference", 1): 1.2,
        ("patched", 0): 1.1,
        ("patched", 1): 1.1,
    }
    write_table(tmp_path, RUNS, _runs(0, factors, 5))
    medians = process_medians(tmp_path, 4)
    assert list(medians) == [("t", 0)]
    found = offsets(("t", 0), medians[("t", 0)])
    spread = math.log(1.001)  # the median run of each process is its middle one
    assert found.medians["reference"] == pytest.approx(
        (math.log(0.1) + spread, math.log(0.12) + spread)
    )
    assert found.side_effect == pytest.approx(math.log(1.1) - math.log(1.2) / 2)
    assert sorted(found.contrasts) == pytest.approx([-math.log(1.2) / math.sqrt(2), 0.0])


def test_three_processes_scale_the_side_effect_and_give_three_contrasts_a_side(
    tmp_path: Path,
) -> None:
    factors = {
        (side, k): 1.0 + 0.1 * k * (side == "patched")
        for side in ("reference", "patched")
        for k in range(3)
    }
    write_table(tmp_path, RUNS, _runs(0, factors, 4))
    found = offsets(("t", 0), process_medians(tmp_path, 4)[("t", 0)])
    mean_patched = sum(math.log(1.0 + 0.1 * k) for k in range(3)) / 3
    assert found.side_effect == pytest.approx(mean_patched * math.sqrt(3 / 2))
    assert len(found.contrasts) == 6
    assert found.contrasts[:3] == pytest.approx([0.0, 0.0, 0.0])


def test_queries_without_enough_runs_on_every_process_are_left_out(tmp_path: Path) -> None:
    two = {(side, k): 1.0 for side in ("reference", "patched") for k in range(2)}
    one = {("reference", 0): 1.0, ("patched", 0): 1.0}
    rows = _runs(0, two, 4) + _runs(1, two, 3) + _runs(2, one, 8)
    # query 3: the patched side lacks process 1
    rows += _runs(3, {**one, ("reference", 1): 1.0}, 8)
    write_table(tmp_path, RUNS, rows)
    assert list(process_medians(tmp_path, 4)) == [("t", 0)]
    assert sorted(process_medians(tmp_path, 3)) == [("t", 0), ("t", 1)]
