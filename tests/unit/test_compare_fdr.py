"""False-discovery control: the Benjamini-Hochberg procedure (compare/fdr.py), its place in
the classification, and its interaction with small run counts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from compare import CompareOptions, compare_directory
from compare.fdr import benjamini_hochberg, sure_discovery_level
from compare.paired import POOLED
from compare.randomization import SeriesStats
from compare.verdict import FdrStatus, QueryEvidence, Thresholds, Verdict, classify
from tests.runs import verdict_rows, write_artifacts


@pytest.mark.parametrize(
    ("p_values", "q", "expected", "cutoff"),
    [
        ([], 0.05, [], 0.0),
        ([0.01], 0.05, [True], 0.01),
        ([0.06], 0.05, [False], 0.0),
        # the step-up: 0.03 > 2 * 0.05 / 4 at rank 2, but rank 3 passes (0.035 <= 0.0375),
        # which carries every smaller p-value with it
        ([0.03, 0.035, 0.2, 0.001], 0.05, [True, True, False, True], 0.035),
        ([0.03, 0.04, 0.2, 0.001], 0.05, [False, False, False, True], 0.001),
        ([0.0125, 0.5, 0.9, 0.7], 0.05, [True, False, False, False], 0.0125),  # on the line
        ([0.013, 0.5, 0.9, 0.7], 0.05, [False, False, False, False], 0.0),
        ([0.01, 0.02, 0.03, 0.04], 0.05, [True, True, True, True], 0.04),  # all on or under
        ([0.02, 0.02, 0.02], 0.05, [True, True, True], 0.02),  # ties go together
        ([0.0117] * 5 + [0.9] * 95, 0.05, [False] * 100, 0.0),  # 5 clear changes at 7 runs
        ([0.0117] * 24 + [0.9] * 76, 0.05, [True] * 24 + [False] * 76, 0.0117),
    ],
)
def test_benjamini_hochberg_finds_the_largest_rank_under_the_line(
    p_values: list[float], q: float, expected: list[bool], cutoff: float
) -> None:
    found = benjamini_hochberg(p_values, q)
    assert list(found.discovered) == expected
    assert found.cutoff == cutoff
    assert found.tests == len(p_values)
    assert found.expected_false_at_most == pytest.approx(q * sum(expected))


@pytest.mark.parametrize("q", [0.0, -0.1, 1.5])
def test_benjamini_hochberg_rejects_a_q_outside_0_to_1(q: float) -> None:
    with pytest.raises(ValueError, match="q must be in"):
        benjamini_hochberg([0.01], q)


def test_a_p_value_at_the_sure_level_is_a_discovery_whatever_the_others_are() -> None:
    rng = np.random.default_rng(4)
    for _ in range(50):
        others = list(rng.uniform(0, 1, 200))
        level = sure_discovery_level(0.05, 201)
        assert benjamini_hochberg([level, *others], 0.05).discovered[0]


def test_benjamini_hochberg_keeps_false_discoveries_rare_among_uniform_p_values() -> None:
    rng = np.random.default_rng(5)
    false_runs = sum(benjamini_hochberg(list(rng.uniform(0, 1, 500))).count > 0 for _ in range(200))
    assert false_runs / 200 <= 0.08  # under the global null, FWER = FDR <= q


def evidence(diff: float, threshold: float, p: float, fdr: FdrStatus | None) -> QueryEvidence:
    stats = SeriesStats(7, 7, 1.0, 1.0 + diff, diff, threshold, threshold, p, True)
    return QueryEvidence("t", 0, "SELECT 1", None, runs_reference=7, runs_patched=7,
                         stats=stats, fdr=fdr)  # fmt: skip


@pytest.mark.parametrize(
    ("diff", "threshold", "fdr", "expected"),
    [
        (0.20, 0.03, None, Verdict.SLOWER),  # no control: the per-query rule alone
        (0.20, 0.03, FdrStatus(True, 0.05, 0.02), Verdict.SLOWER),
        (-0.20, 0.03, FdrStatus(True, 0.05, 0.02), Verdict.FASTER),
        (0.20, 0.03, FdrStatus(False, 0.05, 0.001), Verdict.UNCHANGED),
        (0.20, 0.12, FdrStatus(False, 0.05, 0.0), Verdict.UNSTABLE),  # noisy: unstable
        (0.01, 0.03, FdrStatus(True, 0.05, 0.02), Verdict.UNCHANGED),  # discovery, too small
    ],
)
def test_a_query_is_changed_only_when_it_passes_the_rule_and_is_a_discovery(
    diff: float, threshold: float, fdr: FdrStatus | None, expected: Verdict
) -> None:
    assert classify(evidence(diff, threshold, 0.0117, fdr), Thresholds()).verdict is expected


def test_a_change_held_back_by_the_fdr_says_so_in_its_reason() -> None:
    verdict = classify(evidence(0.2, 0.03, 0.0117, FdrStatus(False, 0.05, 0.0)), Thresholds())
    assert "would be slower, but not a discovery at FDR 5% (p 0.012" in verdict.reason
    assert "no query is a discovery" in verdict.reason
    assert verdict.fails_check is False


STEADY7 = (0.100, 0.101, 0.099, 0.1005, 0.102, 0.0995, 0.1015)


# These tests pin the pooled method's documented p-value floors (compare/fdr.py).
POOLED_OPTIONS = CompareOptions(method=POOLED)


def lone_change_run(tmp_path: Path, unchanged: int, factor: float = 1.08) -> Path:
    """One query `factor` slower, fully separated at 7 runs a side (so T = D), among
    `unchanged` others."""
    series = {0: (STEADY7, tuple(v * factor for v in STEADY7))}
    for i in range(1, unchanged + 1):
        series[i] = (STEADY7, STEADY7[::-1])
    return write_artifacts(tmp_path / "out", series)


def test_a_lone_change_at_7_runs_among_20_queries_cannot_be_a_discovery(tmp_path: Path) -> None:
    """The smallest p-value at 7 runs a side is 0.0117 (module docstring of compare/fdr.py),
    above q / m = 0.0025: the documented interaction with the adaptive rule's minimum."""
    out = lone_change_run(tmp_path, 19)
    result = compare_directory(out, POOLED_OPTIONS)
    row = verdict_rows(out)[("t", "0")]
    assert row[2] == "unchanged"
    assert float(row[8]) == pytest.approx(0.011655, abs=1e-6)
    assert "not a discovery at FDR 5%" in row[3]
    assert result.exit_code == 0
    without = compare_directory(out, CompareOptions(fdr=None, method=POOLED))
    assert verdict_rows(out)[("t", "0")][2] == "slower"
    assert without.exit_code == 1


def test_a_large_lone_change_held_back_at_7_runs_is_unstable_not_unchanged(
    tmp_path: Path,
) -> None:
    out = lone_change_run(tmp_path, 19, factor=1.3)  # fully separated: T = D = 30%
    compare_directory(out, POOLED_OPTIONS)
    row = verdict_rows(out)[("t", "0")]
    assert row[2] == "unstable"
    assert "would be slower, but not a discovery at FDR 5%" in row[3]


def test_the_summary_states_the_fdr_and_the_expected_false_discoveries(tmp_path: Path) -> None:
    out = lone_change_run(tmp_path, 3)  # 4 queries: q / m = 0.0125 >= 0.0117
    compare_directory(out, CompareOptions(fdr=0.05, method=POOLED))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["fdr"] == {
        "q": 0.05, "tests": 4, "discoveries": 1, "cutoff": pytest.approx(0.011655, abs=1e-6),
        "changed": 1, "expected_false_discoveries_at_most": pytest.approx(0.05),
        "lone_discovery_level": 0.0125, "smallest_p_value": None,  # pooled, exact splits
    }  # fmt: skip
    assert summary["counts"]["slower"] == 1


def test_without_fdr_the_summary_says_null(tmp_path: Path) -> None:
    out = lone_change_run(tmp_path, 1)
    compare_directory(out, CompareOptions(fdr=None))
    assert json.loads((out / "summary.json").read_text())["fdr"] is None


def test_a_run_where_no_change_alone_can_be_a_discovery_says_so(tmp_path: Path) -> None:
    """Paired, 7 pairs: no p-value goes below 2/432 (compare/blocked.py smallest_p_value),
    above q / m = 0.0025 for 20 queries; summary.json and the report state it."""
    from report import render_report

    out = lone_change_run(tmp_path, 19, factor=1.3)
    compare_directory(out, CompareOptions())
    fdr = json.loads((out / "summary.json").read_text())["fdr"]
    assert fdr["lone_discovery_level"] == pytest.approx(0.0025)
    assert fdr["smallest_p_value"] == pytest.approx(2 / 432)
    html = render_report(out).path.read_text()
    assert "No change alone can be a discovery in this run" in html
    assert "0.0025" in html and "0.0046" in html


def test_a_run_where_a_lone_change_can_be_a_discovery_does_not_warn(tmp_path: Path) -> None:
    from report import render_report

    # Paired, 11 pairs: the floor 2/15552 is below q / m = 0.0125 for 4 queries.
    steady = tuple(0.1 + 0.0007 * ((3 * i) % 11) for i in range(11))
    series = {0: (steady, tuple(v * (1.3 + 0.01 * i) for i, v in enumerate(steady)))}
    series.update({i: (steady, steady[::-1]) for i in range(1, 4)})
    out = write_artifacts(tmp_path / "out", series)
    compare_directory(out, CompareOptions())
    fdr = json.loads((out / "summary.json").read_text())["fdr"]
    assert fdr["smallest_p_value"] == pytest.approx(2 / 15552) and fdr["discoveries"] == 1
    assert "No change alone" not in render_report(out).path.read_text()


def test_a_lone_change_at_20_pairs_is_a_discovery_among_600_queries(
    tmp_path: Path,
) -> None:
    """q / m = 8.3e-5 for 600 queries: the exact p-value of complete separation at 20 pairs,
    2 / 6^10, is far below it, and so is the p-value with one pair reversed (no sampling
    floor: every p-value is exact)."""
    steady = tuple(0.1 + 0.0007 * ((7 * i) % 20) for i in range(20))
    slower = tuple(v * (1.2 + 0.003 * i) for i, v in enumerate(steady))
    series = {0: (steady, slower)}
    series.update({i: (steady, steady[::-1]) for i in range(1, 600)})
    out = write_artifacts(tmp_path / "separated", series)
    compare_directory(out, CompareOptions())
    row = verdict_rows(out)[("t", "0")]
    assert row[2] == "slower"
    assert float(row[8]) == pytest.approx(2 / 6**10, rel=1e-6)
    fdr = json.loads((out / "summary.json").read_text())["fdr"]
    assert fdr["lone_discovery_level"] == pytest.approx(0.05 / 600)
    assert fdr["smallest_p_value"] == pytest.approx(2 / 6**10, rel=1e-6)

    reversed_pair = (*slower[:-1], steady[-1] * 0.9)
    series[0] = (steady, reversed_pair)
    out = write_artifacts(tmp_path / "one-reversed", series)
    compare_directory(out, CompareOptions())
    row = verdict_rows(out)[("t", "0")]
    assert 2 / 6**10 < float(row[8]) < 0.05 / 600
    assert row[2] == "slower"
