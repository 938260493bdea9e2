"""The report shows the suite-level statistics: the FDR statement, equivalence of unchanged
queries and queries a calibration file lacks."""

from __future__ import annotations

from pathlib import Path

from compare import CompareOptions, compare_directory
from report import render_report
from tests.runs import STEADY_7 as STEADY
from tests.runs import aa_run, write_artifacts


def test_report_states_the_fdr_equivalence_and_uncalibrated_queries(tmp_path: Path) -> None:
    aa = aa_run(tmp_path)
    compare_directory(aa, CompareOptions(aa=True))
    later = write_artifacts(
        tmp_path / "later", {1: (STEADY, STEADY[::-1]), 7: (STEADY, STEADY[::-1])}
    )
    compare_directory(later, CompareOptions(calibration=aa / "calibration.tsv"))
    html = render_report(later).path.read_text()
    assert "Benjamini-Hochberg at q = 0.05 over 2 measured queries: 0 discoveries" in html
    assert "unchanged <small>(equivalent)</small>" in html
    assert "1 queries calibrated, 1 not calibrated" in html
    assert html.count('<span class="flag" title="not calibrated: not in ') == 1
