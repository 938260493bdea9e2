"""compare_directory end to end on artifact directories: golden outputs, damaged inputs,
and the check status."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from artifacts.errors import ChperfError, ExitCode
from artifacts.tables import (
    ErrorRow,
)
from compare import CompareOptions, CompareResult, compare_directory
from compare.paired import POOLED
from tests.conftest import DATA
from tests.runs import verdict_rows, write_artifacts

SMALL = DATA / "compare_small"
EXPECTED = DATA / "compare_small_expected"
OUTPUTS = ("verdicts.tsv", "metrics.tsv", "summary.json")

STEADY = (0.100, 0.101, 0.099, 0.100, 0.102, 0.0995, 0.1005)
# The per-query rules alone: at 7 runs a side no lone p-value can pass the false-discovery
# control (compare/fdr.py), which test_compare_fdr.py covers.
# The goldens were computed with the pooled method; test_compare_paired.py covers the paired one.
PER_QUERY = CompareOptions(fdr=None, method=POOLED)


def small_copy(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(SMALL, out)
    return out


# --- golden -------------------------------------------------------------------------------


def test_small_artifacts_give_the_golden_verdicts_metrics_and_summary(tmp_path: Path) -> None:
    out = small_copy(tmp_path)
    compare_directory(out, PER_QUERY)
    for name in OUTPUTS:
        assert (out / name).read_text() == (EXPECTED / name).read_text(), name


def test_small_artifacts_fail_the_check_for_the_slower_and_the_patched_only_failure(
    tmp_path: Path,
) -> None:
    result = compare_directory(small_copy(tmp_path), PER_QUERY)
    assert result.exit_code is ExitCode.CHECK_FAILED
    assert [f.split(":")[0] for f in result.failures] == ["partial query 0", "sum query 1"]
    assert result.counts == {
        "faster": 1, "slower": 1, "unstable": 1, "unchanged": 2,
        "partial": 2, "error": 2, "skipped": 1, "inconclusive": 0, "too long": 0,
        "not run": 0,
    }  # fmt: skip


def test_summary_json_has_the_version_1_schema_with_the_additive_issue_8_keys(
    tmp_path: Path,
) -> None:
    out = small_copy(tmp_path)
    compare_directory(out, CompareOptions())
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary) == [
        "schema_version", "status", "message", "counts", "method", "equivalence", "fdr",
        "calibration", "noise", "interference", "queries",
    ]  # fmt: skip
    assert summary["schema_version"] == 1
    assert list(summary["noise"]) == ["pair_spread", "pairs", "queries", "median_threshold"]
    assert summary["method"] == "paired"
    assert list(summary["counts"]) == [
        "faster", "slower", "unstable", "unchanged", "partial", "error", "skipped",
        "inconclusive", "too long", "not run",
    ]  # fmt: skip
    keys = ["test", "query_index", "query", "verdict", "reference_median", "patched_median",
            "diff", "threshold", "runs", "p_value", "ci_low", "ci_high", "ci_level",
            "equivalence", "min_effect", "calibration", "process_diffs"]  # fmt: skip
    assert all(list(q) == keys for q in summary["queries"])


def test_rerunning_compare_gives_identical_files(tmp_path: Path) -> None:
    out = small_copy(tmp_path)
    compare_directory(out, CompareOptions())
    first = [(out / name).read_bytes() for name in OUTPUTS]
    compare_directory(out, CompareOptions())
    assert [(out / name).read_bytes() for name in OUTPUTS] == first


# --- the check ----------------------------------------------------------------------------


def test_unchanged_queries_pass_the_check(tmp_path: Path) -> None:
    out = write_artifacts(tmp_path / "out", {0: (STEADY, STEADY), 1: (STEADY, STEADY[::-1])})
    result = compare_directory(out, CompareOptions())
    assert (result.status, result.exit_code, result.message) == (
        "success",
        ExitCode.OK,
        "2 unchanged",
    )


def test_unstable_passes_unless_fail_on_unstable(tmp_path: Path) -> None:
    noisy = (
        (0.05, 0.08, 0.06, 0.10, 0.055, 0.09, 0.062),
        (0.07, 0.052, 0.095, 0.058, 0.065, 0.061, 0.088),
    )
    out = write_artifacts(tmp_path / "out", {0: noisy, 1: (STEADY, STEADY)})
    assert compare_directory(out, CompareOptions()).exit_code is ExitCode.OK
    strict = compare_directory(out, CompareOptions(fail_on_unstable=True))
    assert strict.exit_code is ExitCode.CHECK_FAILED
    assert strict.failures[0].startswith("t query 0: unstable")


def test_faster_queries_pass_the_check(tmp_path: Path) -> None:
    faster = tuple(v * 0.7 for v in STEADY)
    out = write_artifacts(tmp_path / "out", {0: (STEADY, faster)})
    result = compare_directory(out, PER_QUERY)
    assert (result.exit_code, result.message) == (ExitCode.OK, "1 faster")


def test_no_query_measured_fails_closed(tmp_path: Path) -> None:
    out = write_artifacts(tmp_path / "out", {})
    result = compare_directory(out, CompareOptions())
    assert result.exit_code is ExitCode.CHECK_FAILED
    assert "no query was measured on both sides" in result.failures
    assert "no reference runs at all" in result.failures


def test_a_side_with_no_runs_fails_closed(tmp_path: Path) -> None:
    out = write_artifacts(tmp_path / "out", {0: (STEADY, ())})
    result = compare_directory(out, CompareOptions())
    assert "no patched runs at all" in result.failures
    assert verdict_rows(out)[("t", "0")][2] == "error"


def test_a_run_error_fails_the_check_even_on_the_reference_side(tmp_path: Path) -> None:
    error = ErrorRow("t", 1, "reference", "run", 241, "Memory limit exceeded")
    out = write_artifacts(tmp_path / "out", {0: (STEADY, STEADY), 1: (STEADY[:2], STEADY)}, [error])
    result = compare_directory(out, CompareOptions())
    assert result.exit_code is ExitCode.CHECK_FAILED
    assert verdict_rows(out)[("t", "1")][2:4] == [
        "partial",
        "fails on reference only: run on reference: Memory limit exceeded",
    ]


# --- damaged input ------------------------------------------------------------------------


def test_truncated_runs_line_becomes_an_error_verdict_of_its_query(tmp_path: Path) -> None:
    out = write_artifacts(tmp_path / "out", {0: (STEADY, STEADY), 1: (STEADY, STEADY)})
    text = (out / "runs.tsv").read_text()
    client_time = text.rindex("\t", 0, text.rindex("\t"))
    (out / "runs.tsv").write_text(text[: client_time + 3])  # cut inside the client time
    result = compare_directory(out, CompareOptions())
    row = verdict_rows(out)[("t", "1")]
    assert row[2] == "error" and "truncated line" in row[3]
    assert verdict_rows(out)[("t", "0")][2] == "unchanged"
    assert result.exit_code is ExitCode.CHECK_FAILED


@pytest.mark.parametrize("missing", ["runs.tsv", "queries.tsv", "errors.tsv", "tests.tsv"])
def test_a_missing_table_fails_the_check_with_its_name(tmp_path: Path, missing: str) -> None:
    out = write_artifacts(tmp_path / "out", {0: (STEADY, STEADY)})
    (out / missing).unlink()
    result = compare_directory(out, CompareOptions())
    assert result.exit_code is ExitCode.CHECK_FAILED
    assert f"{missing}:0: file is missing" in result.message


def test_missing_server_metrics_do_not_fail_the_check(tmp_path: Path) -> None:
    out = write_artifacts(tmp_path / "out", {0: (STEADY, STEADY)})
    (out / "query_log.tsv").unlink()
    (out / "profile_events.tsv").unlink()
    assert compare_directory(out, CompareOptions()).exit_code is ExitCode.OK
    assert (out / "metrics.tsv").read_text().count("\n") == 1  # header only


def test_fewer_than_three_runs_a_side_is_an_error_verdict(tmp_path: Path) -> None:
    out = write_artifacts(tmp_path / "out", {0: (STEADY, STEADY), 1: (STEADY[:2], STEADY)})
    result = compare_directory(out, CompareOptions())
    row = verdict_rows(out)[("t", "1")]
    assert row[2] == "error" and "too few runs: 2 reference and 7 patched" in row[3]
    assert result.exit_code is ExitCode.CHECK_FAILED


def test_an_inconclusive_verdict_says_why_its_runs_ended(tmp_path: Path) -> None:
    out = write_artifacts(tmp_path / "out", {0: (STEADY, STEADY), 1: (STEADY[:4], STEADY[:4])})
    (out / "stops.tsv").write_text(
        "test\tquery_index\truns\treason\n"
        "t\t0\t7\tfixed 7 runs\n"
        "t\t1\t4\tthe test budget of 25 s ran out after 4 runs\n"
    )
    result = compare_directory(out, CompareOptions())
    row = verdict_rows(out)[("t", "1")]
    assert row[2] == "inconclusive" and row[3].endswith(
        "; measuring stopped: the test budget of 25 s ran out after 4 runs"
    )
    assert "measuring stopped" not in verdict_rows(out)[("t", "0")][3]
    assert result.exit_code is ExitCode.INCOMPLETE
    # Without stops.tsv (or with a damaged one) the verdict stands, without the why.
    (out / "stops.tsv").write_text("garbage\n")
    assert compare_directory(out, CompareOptions()).exit_code is ExitCode.INCOMPLETE
    assert verdict_rows(out)[("t", "1")][3].endswith("needs at least 6")


def test_unequal_run_counts_are_compared_with_groups_of_the_original_sizes(
    tmp_path: Path,
) -> None:
    out = write_artifacts(tmp_path / "out", {0: (STEADY, STEADY[:4])})
    compare_directory(out, CompareOptions())
    assert verdict_rows(out)[("t", "0")][9:11] == ["7", "4"]


def test_unknown_manifest_schema_version_is_a_bad_input_error(tmp_path: Path) -> None:
    out = small_copy(tmp_path)
    (out / "run.json").write_text('{"schema_version": 99}\n')
    with pytest.raises(ChperfError) as raised:
        compare_directory(out, CompareOptions())
    assert raised.value.exit_code is ExitCode.BAD_INPUT
    assert "schema_version 99" in str(raised.value)


def test_exit_code_follows_the_status() -> None:
    assert CompareResult("success", "1 unchanged").exit_code is ExitCode.OK
    assert CompareResult("failure", "1 slower").exit_code is ExitCode.CHECK_FAILED


def test_queries_not_run_make_a_passing_check_incomplete_with_exit_code_4(
    tmp_path: Path,
) -> None:
    from artifacts.tables import ErrorRow
    from tests.runs import STEADY_7, write_artifacts

    stopped = ErrorRow("t", 1, "both", "not run", 0, "the suite budget of 30m ran out")
    out = write_artifacts(tmp_path / "run", {0: (STEADY_7, STEADY_7[::-1]), 1: ((), ())}, [stopped])
    result = compare_directory(out, CompareOptions())
    assert result.status == "incomplete" and result.exit_code is ExitCode.INCOMPLETE
    assert result.counts["not run"] == 1 and result.counts["unchanged"] == 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "incomplete"
    assert "1 not run" in summary["message"]


def test_a_run_stopped_before_its_first_query_is_incomplete_not_failed(tmp_path: Path) -> None:
    from artifacts.tables import TESTS, TestRow
    from artifacts.tsv import write_table
    from tests.runs import write_artifacts

    out = write_artifacts(tmp_path / "run", {0: ((), ())})
    write_table(out, TESTS, [TestRow("t", "t.xml", "not run", "terminated (SIGTERM)", 0.0)])
    result = compare_directory(out, CompareOptions())
    assert result.status == "incomplete", result.failures
    assert result.counts["not run"] == 1


@pytest.mark.parametrize(
    "damage",
    [
        "",  # clean: the grouped path reads it
        "t\t0\treference\t0\tt-0-0\t0.1\t0\n",  # run 0 recorded twice
        "t\t0\treference\t99\tt-0-99\t0\t0\n",  # a time not above 0
        "t\t0\tother\t97\tt-0-97\t0.1\t0\n",  # an unknown server
        "t\t1\tpatched\t0\tt-1-0\t0.1\t1\n",  # run 0 of query 1 on two process sets
        "t\t0\treference\t3",  # a truncated last line
    ],
)
def test_runs_grouped_in_chdb_give_the_same_evidence_as_reading_line_by_line(
    tmp_path: Path, damage: str
) -> None:
    from compare.engine import SqlEngine
    from compare.evidence import gather
    from tests.runs import STEADY_7, write_artifacts

    out = write_artifacts(tmp_path / "run", {0: (STEADY_7, STEADY_7[::-1]), 1: (STEADY, STEADY)})
    with (out / "runs.tsv").open("a") as f:
        f.write(damage)
    careful = gather(out)
    with SqlEngine() as engine:
        grouped = gather(out, engine, grouped_from=0)
    assert grouped == careful
    assert bool(damage) == bool(careful.problems or any(q.problems for q in careful.queries))


def test_a_run_measured_on_one_side_only_counts_there_and_in_no_pair_on_both_paths(
    tmp_path: Path,
) -> None:
    from compare.engine import SqlEngine
    from compare.evidence import gather
    from tests.runs import STEADY_7, write_artifacts

    out = write_artifacts(tmp_path / "run", {0: (STEADY_7, STEADY_7[::-1])})
    with (out / "runs.tsv").open("a") as f:
        f.write("t\t0\treference\t7\tt-0-7\t0.5\t1\t1.0\n")  # no patched run 7
    careful = gather(out)
    with SqlEngine() as engine:
        grouped = gather(out, engine, grouped_from=0)
    assert grouped == careful
    samples = careful.client_time[("t", 0)]
    assert len(samples.reference) == 8 and len(samples.patched) == 7
    assert len(samples.pairs) == len(samples.processes) == 7
    assert 0.5 not in [r for r, _ in samples.pairs]
