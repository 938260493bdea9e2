"""Result equality end to end on real servers (18.16 and the 26.9 engine fixture): an overlay
that cuts large results is a wrong result that fails the check, with both hashes and row
counts in summary.json, the report and the PR comment; an A/A run over a query with a new
result on every execution, or over a table each server fills with random numbers, calls it
non-deterministic, does not fail, and lint reports it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import DATA, REPO, run_chperf

OVERLAY = REPO / "overlays" / "max_result_rows_break"
ROWS = 300000  # tests/data/result_equality/result_rows.xml query 0


def _run(binary: Path, out: Path, *extra: str) -> tuple[int, dict[str, object]]:
    done = run_chperf(
        [
            "run", "--reference", str(binary), "--patched", str(binary), "--runs", "6",
            "--no-profile", "--out", str(out), *extra,
        ]
    )  # fmt: skip
    assert (out / "summary.json").exists(), done.stderr[-3000:]
    return done.returncode, json.loads((out / "summary.json").read_text())


def test_an_overlay_that_cuts_results_is_a_wrong_result(
    server_binary: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    code, summary = _run(
        server_binary, out,
        "--tests", str(DATA / "result_equality"), "--patched-config", str(OVERLAY),
    )  # fmt: skip
    assert code == 1 and summary["status"] == "failure"
    assert str(summary["message"]).startswith("1 wrong result, ")
    results = summary["results"]
    assert isinstance(results, dict)
    assert results["counts"]["wrong result"] == 1 and results["counts"]["equal"] == 1
    assert results["not_compared"] == 1  # FORMAT Null: nothing to compare
    (wrong,) = results["queries"]
    assert (wrong["test"], wrong["query_index"], wrong["result"]) == (
        "result_rows",
        0,
        "wrong result",
    )
    (reference,), (patched,) = wrong["reference"], wrong["patched"]
    assert reference["rows"] == ROWS and 0 < patched["rows"] < ROWS
    assert reference["hash"] != patched["hash"]
    # each side ran the query on both its processes, and once more after the disagreement
    rows = (out / "results.tsv").read_text().splitlines()
    executions = [line.split("\t")[4] for line in rows[1:] if line.startswith("result_rows\t0\t")]
    assert sorted(executions) == ["prewarm"] * 4 + ["recheck"] * 4
    (query,) = [q for q in summary["queries"] if q["query_index"] == 0]  # type: ignore[attr-defined]
    verdicts = (out / "verdicts.tsv").read_text()
    assert f"wrong result: reference {ROWS} rows, hash {reference['hash']}" in verdicts
    assert query["verdict"] not in ("error", "partial")  # the timing verdict stays
    done = run_chperf(["report", str(out)])  # the report reruns from the files
    assert done.returncode == 0, done.stderr
    report = (out / "report.html").read_text()
    assert "<strong>wrong result</strong> in result_rows query 0" in report
    assert reference["hash"] in report and patched["hash"] in report
    _check_comment(out, reference, patched)


def _check_comment(out: Path, reference: dict[str, object], patched: dict[str, object]) -> None:
    """The PR comment (python -m ci summary) names both sides' row counts and hashes."""
    done = subprocess.run(
        [sys.executable, "-m", "ci", "summary", str(out)],
        capture_output=True, text=True, cwd=REPO, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    comment = (out / "summary.md").read_text()
    assert (
        f"| result\\_rows query 0 | {reference['rows']} rows, hash {reference['hash']} | "
        f"{patched['rows']} rows, hash {patched['hash']} |"
    ) in comment


def test_a_random_result_is_non_deterministic_not_wrong(
    server_binary: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    tests = DATA / "result_nondeterministic"
    code, summary = _run(server_binary, out, "--tests", str(tests), "--processes", "1")
    assert summary["status"] != "failure" and code in (0, 4), summary["message"]
    results = summary["results"]
    assert isinstance(results, dict)
    assert results["counts"]["non-deterministic"] == 2 and results["counts"]["wrong result"] == 0
    varying, filled = sorted(results["queries"], key=lambda q: q["test"] != "random_results")
    assert varying["query_index"] == 0 and "between executions on one" in varying["reason"]
    assert len(varying["reference"]) == 2 or len(varying["patched"]) == 2
    # One server process a side: only the test's random fill tells its sides' results apart
    # from a wrong one.
    assert filled["test"] == "random_fill" and "random_fill.xml:8 rand()" in filled["reason"]
    assert len(filled["reference"]) == 1 and len(filled["patched"]) == 1
    assert filled["reference"] != filled["patched"]
    assert "note: 2 non-deterministic results" in str(summary["message"])
    lint = run_chperf(["lint", str(tests), "--timings", str(out)])
    assert lint.returncode == 1
    assert "random_results.xml:6: query 0 in" in lint.stderr
    assert "random_results.xml:7: query 1 in" not in lint.stderr


def test_no_result_check_hashes_nothing(server_binary: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, summary = _run(
        server_binary, out, "--tests", str(DATA / "result_equality"), "--query-index", "0",
        "--patched-config", str(OVERLAY), "--no-result-check",
    )  # fmt: skip
    assert (out / "results.tsv").read_text().count("\n") == 1  # the header only
    assert "results" not in summary
    assert "wrong result" not in str(summary["message"])
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["options"]["check_results"] is False
    assert code == (
        1 if summary["status"] == "failure" else 0 if summary["status"] == "success" else 4
    )
