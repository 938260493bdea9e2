"""Time limits on real servers: queries over their limit are "too long", a suite budget ends
the run with a complete summary and report, and an interrupt leaves both behind."""

from __future__ import annotations

import csv
import json
import signal
import time
from pathlib import Path

import pytest

from artifacts.tables import ERRORS, TESTS
from artifacts.tsv import read_table
from tests.conftest import DATA, run_chperf
from tests.integration.test_reliability import (
    processes_under,
    run_rows,
    servers_started,
    start_chperf,
    wait_for,
)

pytestmark = pytest.mark.integration
BUDGET_TESTS = DATA / "budget"
SUITE_BUDGET_S = 25
# What may follow the budget: the run in progress (its limit is cut to what is left), query_log
# collection, stopping the servers, compare and report.
ALLOWED_OVERRUN_S = 60


def summary_tests(out: Path) -> dict[str, set[str]]:
    """Verdicts per test in summary.json."""
    found: dict[str, set[str]] = {}
    for query in json.loads((out / "summary.json").read_text())["queries"]:
        found.setdefault(query["test"], set()).add(query["verdict"])
    return found


def test_a_suite_under_a_budget_ends_in_time_with_every_test_accounted_for(
    tmp_path: Path, server_binary: Path
) -> None:
    out, servers_dir = tmp_path / "out", tmp_path / "servers"
    servers_dir.mkdir()
    started = time.monotonic()
    done = run_chperf(
        ["run", "--tests", str(BUDGET_TESTS), "--out", str(out), "--no-profile",
         "--servers-dir", str(servers_dir), "--reference", str(server_binary),
         "--patched", str(server_binary), "--runs", "300", "--query-budget", "1000",
         "--budget", f"{SUITE_BUDGET_S}s"],
        timeout=SUITE_BUDGET_S + 240,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert elapsed <= SUITE_BUDGET_S + ALLOWED_OVERRUN_S, done.stderr
    # Nothing failed the check, but the budget left queries unmeasured: incomplete.
    assert done.returncode == 4, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "incomplete"
    tests = summary_tests(out)
    assert set(tests) == {p.stem for p in BUDGET_TESTS.glob("*.xml")}
    # Every prewarm of the 1 s test is stopped at its limit: too long, nothing measured.
    assert tests["long_queries"] == {"too long"}
    errors = read_table(out, ERRORS).rows
    too_long = [e for e in errors if e.stage == "too long" and e.test == "long_queries"]
    assert len({e.query_index for e in too_long}) == 4
    assert all("1 s limit" in e.message for e in too_long)
    assert "long_queries: no query was measured on both sides: too long on" in done.stderr
    # The fill fails on every server: the test is an error with the server's own message.
    assert tests["badfill"] == {"error"}
    rows = {t.test: t for t in read_table(out, TESTS).rows}
    assert rows["badfill"].status == "error"
    assert "budget_fill_source" in rows["badfill"].reason
    assert "badfill: setup failed:" in done.stderr
    # A test whose <preconditions> table is missing is skipped with the reason.
    assert tests["dataset_missing"] == {"skipped"}
    assert "table hits_100m_single does not exist" in rows["dataset_missing"].reason
    # So is one without <preconditions> that reads ClickHouse's datasets; the first it reads.
    assert tests["dataset_read"] == {"skipped"}
    assert "table test.hits does not exist" in rows["dataset_read"].reason
    assert "reads this ClickHouse test dataset" in rows["dataset_read"].reason
    assert not [e for e in errors if e.test.startswith("dataset_")], errors  # no teardown
    # One whose <ram_size> is more than the machine has is skipped without being run.
    assert tests["needs_ram"] == {"skipped"}
    assert "needs 1000000.0 GB of RAM (<ram_size>)" in rows["needs_ram"].reason
    # max_ignored_relative_change="1.0" is accepted: the test runs.
    assert tests["ignored"] <= {"unchanged", "unstable", "faster", "slower"}
    # A query that connects to another loopback address fails on both sides and says why;
    # the test's query on the servers' own address is measured.
    assert tests["loopback_remote"] <= {"unchanged", "unstable", "faster", "slower", "error"}
    refused = [e for e in read_table(out, ERRORS).rows if e.test == "loopback_remote"]
    assert {(e.query_index, e.server) for e in refused} == {(1, "reference"), (1, "patched")}
    assert all(
        e.message.startswith("the query connects to 127.0.0.2, and chperf's servers listen")
        for e in refused
    ), refused
    # The legacy elements are noted once, in one line.
    legacy = [line for line in done.stderr.splitlines() if "legacy.xml" in line]
    assert len(legacy) == 1 and "<type>, <stop_conditions>" in legacy[0], legacy
    # The budget ran out among the 8 heavy queries (or, on a faster server, just after
    # them): what it did not reach is "not run", with the reason, and the last test never runs.
    assert tests["many"] <= {"unchanged", "unstable", "faster", "slower", "inconclusive", "not run"}
    # A query the budget stopped after fewer runs than a verdict needs is inconclusive and
    # says which budget.
    with (out / "verdicts.tsv").open(newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if row["test"] == "many" and row["verdict"] == "inconclusive":
                assert f"suite budget of {SUITE_BUDGET_S} s ran out" in row["reason"], row
    assert tests["zz_after"] == {"not run"}
    assert rows["zz_after"].status == "not run"
    assert f"suite budget of {SUITE_BUDGET_S} s ran out" in rows["zz_after"].reason
    report = (out / "report.html").read_text()
    for name in tests:
        assert name in report
    assert "Skipped and not run" in report
    assert not processes_under(servers_dir)


def test_a_query_stopped_after_the_server_sent_rows_is_too_long_and_no_server_restarts(
    tmp_path: Path, server_binary: Path
) -> None:
    """The server's error ends a body it had begun: framed by its exception tag (modern) or
    as the last line (18.16). Read as if it had come first."""
    out = tmp_path / "out"
    done = run_chperf(
        ["run", "--tests", str(DATA / "late_error"), "--out", str(out), "--no-profile",
         "--reference", str(server_binary), "--patched", str(server_binary)],
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # too long on both sides: nothing measured
    assert summary_tests(out) == {"limit_mid_result": {"too long"}}
    errors = read_table(out, ERRORS).rows
    assert errors and all(e.stage == "too long" and "1 s limit" in e.message for e in errors), (
        errors
    )


def test_sigterm_mid_run_leaves_a_summary_and_a_report_listing_every_test(
    tmp_path: Path, server_binary: Path
) -> None:
    out, servers_dir = tmp_path / "out", tmp_path / "servers"
    servers_dir.mkdir()
    process = start_chperf(
        ["--tests", str(BUDGET_TESTS), "--test", "many", "--test", "zz_after",
         "--test", "ignored", "--runs", "300", "--query-budget", "1000", "--no-profile",
         "--out", str(out), "--servers-dir", str(servers_dir),
         "--reference", str(server_binary), "--patched", str(server_binary)],
    )  # fmt: skip
    # 300 runs a side: 600 rows per query; past the first test and the first query of "many".
    wait_for(lambda: servers_started(out) and run_rows(out) >= 1300, timeout=120)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr
    assert "comparing what was measured before the interrupt" in stderr
    tests = summary_tests(out)
    assert set(tests) == {"many", "zz_after", "ignored"}
    assert tests["zz_after"] == {"not run"}
    assert tests["many"] >= {"not run"} and len(tests["many"]) == 2  # measured, then not
    interrupted = [
        e for e in read_table(out, ERRORS).rows if e.stage == "not run" and e.test == "many"
    ]
    assert interrupted and all(e.message == "terminated (SIGTERM)" for e in interrupted)
    # The query_log rows of the runs made before the signal were collected.
    assert (out / "query_log.tsv").read_text().count("many\t") >= 100
    report = (out / "report.html").read_text()
    assert all(name in report for name in tests)
    assert not processes_under(servers_dir)


def test_a_fill_longer_than_the_budget_is_cut_short_and_the_test_not_run(
    tmp_path: Path, server_binary: Path
) -> None:
    out = tmp_path / "out"
    started = time.monotonic()
    done = run_chperf(
        ["run", "--tests", str(DATA / "budget_fill"), "--out", str(out), "--no-profile",
         "--reference", str(server_binary), "--patched", str(server_binary), "--budget", "20s"],
        timeout=300,
    )  # fmt: skip
    assert time.monotonic() - started <= 20 + ALLOWED_OVERRUN_S, done.stderr
    assert done.returncode == 4, done.stderr
    rows = {t.test: t for t in read_table(out, TESTS).rows}
    assert rows["long_fill"].status == "not run"
    assert "suite budget of 20 s ran out" in rows["long_fill"].reason
    assert summary_tests(out) == {"long_fill": {"not run"}}
