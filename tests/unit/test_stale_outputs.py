"""A stage removes its previous outputs, and those made from them, before it starts: a compare
or report that fails never leaves an earlier result in place looking current, and a compare
with new thresholds never leaves the report of the old verdicts behind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from artifacts.errors import ExitCode
from tests.conftest import DATA
from tests.conftest import chperf_main as chperf
from tests.runs import aa_run

COMPARE_OUTPUTS = ("verdicts.tsv", "metrics.tsv", "summary.json")
CI_OUTPUTS = ("status.json", "summary.md")


@pytest.fixture()
def judged(tmp_path: Path) -> Path:
    """A run compared and reported, with the CI summary of it."""
    out = tmp_path / "out"
    shutil.copytree(DATA / "compare_small", out)
    assert chperf("compare", str(out)) == ExitCode.CHECK_FAILED
    assert chperf("report", str(out)) == ExitCode.CHECK_FAILED  # run.json lacks keys
    for name in CI_OUTPUTS:
        (out / name).write_text("the previous check's\n")
    return out


def damage_runs(out: Path) -> None:
    text = (out / "runs.tsv").read_text()
    (out / "runs.tsv").write_text(text.replace("\t0.102\n", "\tinf\n", 1))


def present(out: Path, names: tuple[str, ...]) -> list[str]:
    return [name for name in names if (out / name).exists()]


def test_a_compare_that_fails_leaves_none_of_the_previous_outputs(judged: Path) -> None:
    damage_runs(judged)
    assert chperf("compare", str(judged)) == ExitCode.BAD_INPUT
    assert present(judged, (*COMPARE_OUTPUTS, "report.html", "details", *CI_OUTPUTS)) == []


def test_the_details_pages_go_with_the_report_they_belong_to(judged: Path) -> None:
    assert any((judged / "details").iterdir())  # the report wrote them
    damage_runs(judged)
    assert chperf("report", str(judged)) == ExitCode.BAD_INPUT
    assert present(judged, ("report.html", "details")) == []


def test_a_report_that_fails_leaves_no_previous_report(judged: Path) -> None:
    damage_runs(judged)
    assert chperf("report", str(judged)) == ExitCode.BAD_INPUT
    assert present(judged, ("report.html",)) == []
    assert present(judged, COMPARE_OUTPUTS) == list(COMPARE_OUTPUTS)  # report's inputs stay


def test_compare_with_new_thresholds_removes_the_old_report_and_says_how_to_get_a_new_one(
    judged: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert chperf("compare", "--min-effect", "0.9", str(judged)) == ExitCode.CHECK_FAILED
    err = capsys.readouterr().err
    assert present(judged, ("report.html", *CI_OUTPUTS)) == []
    assert f"removed the report.html of the previous verdicts; `chperf report {judged}`" in err
    message = json.loads((judged / "summary.json").read_text())["message"]
    assert "0 slower" not in message and "slower" not in message.split(";")[0]
    assert chperf("report", str(judged)) == ExitCode.CHECK_FAILED
    assert message in (judged / "report.html").read_text()


def test_only_compare_aa_replaces_calibration_tsv(tmp_path: Path) -> None:
    out = aa_run(tmp_path)
    assert chperf("compare", "--aa", str(out)) == ExitCode.OK
    calibration = (out / "calibration.tsv").read_text()
    assert chperf("compare", str(out)) == ExitCode.OK  # an A/A result may be another's input
    assert (out / "calibration.tsv").read_text() == calibration
    runs = (out / "runs.tsv").read_text()
    (out / "runs.tsv").write_text(runs.replace("\t0.101\t", "\tinf\t", 1))
    assert chperf("compare", "--aa", str(out)) == ExitCode.BAD_INPUT
    assert present(out, ("calibration.tsv", *COMPARE_OUTPUTS)) == []


pytestmark = pytest.mark.usefixtures("signal_handlers_restored")
