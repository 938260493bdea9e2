"""A/A calibration (compare/calibration.py): calibration.tsv from an A/A run, per-query noise
floors in later comparisons, "not calibrated" for queries the file lacks; and the
equivalent / inconclusive split of unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from artifacts.calibration import CALIBRATION_COLUMNS
from artifacts.errors import ChperfError
from artifacts.manifest import write_manifest
from compare import CompareOptions, compare_directory
from compare.bootstrap import RatioInterval
from compare.calibration import CALIBRATION_FACTOR, read_calibration
from compare.randomization import SeriesStats
from compare.verdict import EQUIVALENT, INCONCLUSIVE, QueryEvidence, Thresholds, Verdict, classify
from tests.runs import SERVER, STEADY_7, aa_run, verdict_rows, write_artifacts

STEADY = STEADY_7


def test_an_aa_run_writes_calibration_tsv_with_floors_and_flag_rates(tmp_path: Path) -> None:
    out = aa_run(tmp_path)
    compare_directory(out, CompareOptions(aa=True))
    lines = (out / "calibration.tsv").read_text().splitlines()
    assert tuple(lines[0].split("\t")) == CALIBRATION_COLUMNS
    calibration = read_calibration(out / "calibration.tsv")
    rows = calibration.rows
    quiet, offset = rows[("t", 0)], rows[("t", 1)]
    assert quiet.runs == 7 and quiet.query == "SELECT 0"
    # The paired test's exact size at 7 runs a side: 2 of 432 arrangements (an upper bound).
    assert quiet.flagged is False and quiet.flag_rate == pytest.approx(2 / 432)
    assert offset.noise_floor == pytest.approx(0.04, rel=1e-6)  # |D|, above its T
    min_effect, status = calibration.lookup("t", 1, offset.query)
    assert min_effect == pytest.approx(CALIBRATION_FACTOR * 0.04, rel=1e-6)
    assert status == "calibrated"
    assert offset.mde == pytest.approx(max(0.05, 2 * offset.threshold))
    assert 0 <= offset.flag_rate <= 0.02


def test_calibrating_a_run_of_two_different_servers_is_refused(tmp_path: Path) -> None:
    out = aa_run(tmp_path)
    other = {**SERVER, "overlays": ["overlays/max_block_size_8192"]}
    write_manifest(out, {"servers": {"reference": SERVER, "patched": other}})
    with pytest.raises(ChperfError, match="differ in overlays"):
        compare_directory(out, CompareOptions(aa=True))


def test_an_aa_run_is_told_by_the_overlays_content_not_their_paths(tmp_path: Path) -> None:
    """Manifests with the overlays' digest compare it, so one overlay at two paths is the
    same configuration, and two contents at one path are not."""
    out = aa_run(tmp_path)
    here = {**SERVER, "overlays": ["/a/overlay"], "overlays_sha256": "1" * 64}
    there = {**here, "overlays": ["/b/overlay"]}
    write_manifest(out, {"servers": {"reference": here, "patched": there}})
    compare_directory(out, CompareOptions(aa=True))
    assert (out / "calibration.tsv").exists()
    changed = {**here, "overlays_sha256": "2" * 64}
    write_manifest(out, {"servers": {"reference": here, "patched": changed}})
    with pytest.raises(ChperfError, match="differ in overlays_sha256"):
        compare_directory(out, CompareOptions(aa=True))


def test_a_calibrated_floor_holds_back_a_change_inside_the_aa_offset(tmp_path: Path) -> None:
    aa = aa_run(tmp_path)
    compare_directory(aa, CompareOptions(aa=True))
    # the later run: query 1 moves 5.5% (inside 1.5 x its 4% A/A offset), query 2 is new;
    # 13 pairs with ratios 1.049-1.061, so the default paired statistic can reach p <= 0.01
    steady = STEADY + STEADY[:6]
    moved = tuple(v * (1.049 + 0.001 * i) for i, v in enumerate(steady))
    later = write_artifacts(tmp_path / "later", {1: (steady, moved), 2: (steady, steady[::-1])})
    options = CompareOptions(fdr=None, calibration=aa / "calibration.tsv")
    compare_directory(later, options)
    rows = verdict_rows(later)
    assert rows[("t", "1")][2] == "unchanged"
    assert "min effect 6.0%" in rows[("t", "1")][3]
    assert rows[("t", "1")][15] == "calibrated"
    assert rows[("t", "2")][15] == f"not calibrated: not in {aa / 'calibration.tsv'}"
    summary = json.loads((later / "summary.json").read_text())
    assert summary["calibration"]["calibrated"] == 1
    assert summary["calibration"]["not_calibrated"] == 1
    compare_directory(later, CompareOptions(fdr=None))
    assert verdict_rows(later)[("t", "1")][2] == "slower"  # the default 5% alone


def test_a_query_whose_sql_changed_since_calibration_is_not_calibrated(tmp_path: Path) -> None:
    aa = aa_run(tmp_path)
    compare_directory(aa, CompareOptions(aa=True))
    calibration = read_calibration(aa / "calibration.tsv")
    assert calibration.lookup("t", 1, "SELECT 1")[1] == "calibrated"
    assert calibration.lookup("t", 1, "SELECT 1 + 1") == (
        None,
        f"not calibrated: its SQL changed since {aa / 'calibration.tsv'} was made",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("test\tquery_index\n", "calibration.tsv:1: expected the columns"),
        ("\t".join(CALIBRATION_COLUMNS) + "\nt\t0\tSELECT 1\n", "calibration.tsv:2: expected 12"),
        (
            "\t".join(CALIBRATION_COLUMNS) + "\nt\t0\tq\t7\t0.1\t0\t0.01\t1\t2\t0\t0.05\t0.01\n",
            "calibration.tsv:2: bad value: flagged must be 0 or 1",
        ),
        ("\t".join(CALIBRATION_COLUMNS) + "\nt\t0", "calibration.tsv:2: truncated line"),
    ],
)
def test_a_malformed_calibration_file_is_a_bad_input_error_naming_the_line(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "calibration.tsv"
    path.write_text(text)
    with pytest.raises(ChperfError, match=message) as raised:
        read_calibration(path)
    assert raised.value.exit_code == 2


def unchanged(diff: float, interval: RatioInterval | None) -> QueryEvidence:
    stats = SeriesStats(15, 15, 1.0, 1.0 + diff, diff, 0.03, 0.03, 0.5, True)
    return QueryEvidence("t", 0, "SELECT 1", None, runs_reference=15, runs_patched=15,
                         stats=stats, interval=interval)  # fmt: skip


@pytest.mark.parametrize(
    ("diff", "interval", "expected"),
    [
        (0.01, RatioInterval(0.98, 1.03), EQUIVALENT),
        (0.01, RatioInterval(0.94, 1.03), INCONCLUSIVE),  # could be 6% faster
        (0.02, RatioInterval(1.01, 1.07), INCONCLUSIVE),
        (0.0, None, INCONCLUSIVE),
    ],
)
def test_unchanged_is_equivalent_only_when_the_whole_interval_is_inside_the_min_effect(
    diff: float, interval: RatioInterval | None, expected: str
) -> None:
    verdict = classify(unchanged(diff, interval), Thresholds())
    assert verdict.verdict is Verdict.UNCHANGED
    assert verdict.equivalence == expected
    assert f"; {expected}: " in verdict.reason


def test_changed_and_unstable_queries_have_no_equivalence() -> None:
    stats = SeriesStats(15, 15, 1.0, 1.2, 0.2, 0.03, 0.03, 0.001, True)
    evidence = QueryEvidence("t", 0, "q", None, runs_reference=15, runs_patched=15, stats=stats,
                             interval=RatioInterval(1.15, 1.25))  # fmt: skip
    verdict = classify(evidence, Thresholds())
    assert (verdict.verdict, verdict.equivalence) == (Verdict.SLOWER, None)
    assert verdict.interval == RatioInterval(1.15, 1.25)
