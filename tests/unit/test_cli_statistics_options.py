"""The comparison's statistics options on the command line: --fdr, --calibration, --aa."""

from __future__ import annotations

from pathlib import Path

import pytest

from artifacts.calibration import CALIBRATION_COLUMNS
from artifacts.errors import ChperfError
from chperf.options import compare_options as _compare_options
from chperf.options import run_options as _run_options
from chperf.parser import build_parser
from compare.fdr import FDR_Q
from runner.options import RunOptions


def test_the_fdr_is_on_at_005_by_default_and_0_turns_it_off() -> None:
    parser = build_parser()
    assert _compare_options(parser.parse_args(["compare", "out"])).fdr == FDR_Q
    assert _compare_options(parser.parse_args(["compare", "out", "--fdr", "0.1"])).fdr == 0.1
    assert _compare_options(parser.parse_args(["compare", "out", "--fdr", "0"])).fdr is None


def test_an_fdr_above_1_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as raised:
        build_parser().parse_args(["compare", "out", "--fdr", "5"])
    assert raised.value.code == 2


def test_calibration_and_aa_reach_the_compare_options(tmp_path: Path) -> None:
    calibration = tmp_path / "c.tsv"
    calibration.write_text("\t".join(CALIBRATION_COLUMNS) + "\n")
    args = build_parser().parse_args(["compare", "out", "--aa", "--calibration", str(calibration)])
    options = _compare_options(args)
    assert (options.aa, options.calibration) == (True, calibration)


def test_run_aa_makes_the_patched_side_the_reference_binary_and_overlays(tmp_path: Path) -> None:
    overlay = tmp_path / "overlay"
    (overlay / "users.d").mkdir(parents=True)
    args = build_parser().parse_args(
        ["run", "--aa", "--reference", "/bin/true", "--reference-config", str(overlay)]
    )
    options = _run_options(args)
    assert isinstance(options, RunOptions)
    assert options.patched.binary == options.reference.binary == Path("/bin/true")
    assert options.patched.overlays == options.reference.overlays == (overlay,)
    assert options.patched.side == "patched"


def test_run_aa_refuses_a_patched_binary() -> None:
    args = build_parser().parse_args(["run", "--aa", "--patched", "/bin/true"])
    with pytest.raises(ChperfError, match="--aa runs the reference against itself"):
        _run_options(args)


def test_process_sets_live_the_whole_run_unless_renew_set() -> None:
    parser = build_parser()
    default = _run_options(parser.parse_args(["run", "--reference", "/bin/true"]))
    renewed = _run_options(parser.parse_args(["run", "--reference", "/bin/true", "--renew-set"]))
    assert default.renew_set is False and renewed.renew_set is True
    assert renewed.manifest_options()["renew_set"] is True
