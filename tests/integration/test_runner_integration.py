"""End-to-end runs of the runner against two real ClickHouse servers."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from artifacts.tables import ERRORS, MONITOR, PROFILE_EVENTS, QUERY_LOG, RUNS, STOPS, TESTS
from artifacts.tsv import read_table
from compare.stopping import StopRule, is_checkpoint
from tests.conftest import DATA, REPO, process_exists, run_chperf, server_pids

pytestmark = pytest.mark.integration
RUNS_PER_SIDE = 4


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory, server_binary: Path) -> Path:
    out = tmp_path_factory.mktemp("small") / "out"
    result = run_chperf(
        [
            "run",
            "--reference", str(server_binary),
            "--patched", str(server_binary),
            "--patched-config", str(DATA / "overlays" / "low_max_rows"),
            "--tests", str(DATA / "runner_small"),
            "--runs", str(RUNS_PER_SIDE),
            "--renew-set",
            "--out", str(out),
        ]
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    return out


def test_every_measured_query_has_n_runs_per_side_in_the_run_order(small_run: Path) -> None:
    runs = read_table(small_run, RUNS)
    assert not runs.problems
    by_query: dict[tuple[str, int], list[tuple[int, str]]] = defaultdict(list)
    for row in runs.rows:
        by_query[(row.test, row.query_index)].append((row.run, row.server))
    full = {k: v for k, v in by_query.items() if k[0] == "small"}
    assert sorted(full) == [("small", 0), ("small", 1), ("small", 2)]
    expected = []
    for n in range(RUNS_PER_SIDE):
        pair = [(n, "reference"), (n, "patched")]
        expected += pair if (n // 2) % 4 in (0, 3) else pair[::-1]  # R P R P, P R P R, ...
    for order in full.values():
        assert order == expected


def test_the_monitor_samples_the_machine_around_every_run_and_sees_the_servers_work(
    small_run: Path,
) -> None:
    samples = sorted(read_table(small_run, MONITOR).rows, key=lambda s: s.time)
    runs = read_table(small_run, RUNS).rows
    assert samples and all(r.start_time > 0 for r in runs)
    assert samples[0].time - samples[0].seconds <= min(r.start_time for r in runs)
    assert samples[-1].time >= max(r.start_time + r.client_time for r in runs) - 1.0
    assert max(s.servers_cpu for s in samples) > 0.1  # the servers' own CPU time, by PID
    assert all(0.0 <= s.idle <= 1.0 and s.cpus >= 1 for s in samples)


def test_query_ids_match_query_log_rows_on_both_servers(small_run: Path) -> None:
    runs = read_table(small_run, RUNS).rows
    log = read_table(small_run, QUERY_LOG).rows
    assert {(r.server, r.query_id) for r in runs} == {(r.server, r.query_id) for r in log}
    for row in runs:
        assert row.query_id == f"{row.test}.{row.query_index}.run{row.run}"
    assert all(r.server_time >= 0 and r.read_rows > 0 for r in log)


def test_profile_events_are_recorded_for_every_run(small_run: Path) -> None:
    events = read_table(small_run, PROFILE_EVENTS).rows
    runs = read_table(small_run, RUNS).rows
    seen = {(e.server, e.query_id) for e in events}
    assert {(r.server, r.query_id) for r in runs} <= seen
    names = {e.event for e in events}
    assert {"Query", "RealTimeMicroseconds"} <= names


def test_query_failing_only_on_patched_is_measured_on_reference(small_run: Path) -> None:
    errors = read_table(small_run, ERRORS).rows
    failing = [e for e in errors if e.test == "reads_many_rows"]
    assert [(e.server, e.stage) for e in failing] == [("patched", "prewarm")]
    assert failing[0].error_code == 158  # TOO_MANY_ROWS
    runs = [r for r in read_table(small_run, RUNS).rows if r.test == "reads_many_rows"]
    assert {r.server for r in runs} == {"reference"}
    assert len(runs) == RUNS_PER_SIDE


def test_manifest_describes_both_servers_and_the_run(small_run: Path) -> None:
    manifest = json.loads((small_run / "run.json").read_text())
    assert manifest["schema_version"] == 1
    assert manifest["status"] == "complete"
    for side in ("reference", "patched"):
        server = manifest["servers"][side]
        assert server["version"]
        assert len(server["sha256"]) == 64
        assert server["capabilities"]["profile_events"] in ("map", "arrays")
    assert manifest["servers"]["patched"]["overlays"][0].endswith("low_max_rows")
    assert manifest["options"]["runs"] == RUNS_PER_SIDE
    tests = {t.test: t.status for t in read_table(small_run, TESTS).rows}
    assert tests == {"small": "ran", "reads_many_rows": "ran"}


def test_no_server_process_is_left_after_the_run(small_run: Path) -> None:
    pids = server_pids(small_run)
    assert len(set(pids)) == 4  # two processes a side by default
    assert not [pid for pid in pids if process_exists(pid)]


def test_runs_alternate_between_two_processes_a_side_in_blocks_of_two(small_run: Path) -> None:
    """Runs 0-1 on the first process of each side, 2-3 on the second; both sides of a run
    on the same set; each process logged its own runs, with its own data."""
    runs = read_table(small_run, RUNS).rows
    assert {(r.run, r.process) for r in runs} == {(0, 0), (1, 0), (2, 1), (3, 1)}
    manifest = json.loads((small_run / "run.json").read_text())
    sets = manifest["processes"]
    assert [[info["process"] for info in pair.values()] for pair in sets] == [[0, 0], [1, 1]]
    assert sets[0] == manifest["servers"]
    directories = {info["directory"] for pair in sets for info in pair.values()}
    assert len(directories) == 4
    assert manifest["options"]["processes"] == 2
    log = read_table(small_run, QUERY_LOG).rows
    assert {r.run for r in log if r.test == "small"} == {0, 1, 2, 3}
    assert all(r.read_rows > 0 for r in log)


def test_with_renew_set_the_last_process_set_starts_afresh_before_every_test_but_the_first(
    small_run: Path,
) -> None:
    """With --renew-set and two tests: set 1's servers are new processes for the second, which
    they measure and whose query_log they give; set 0's serve the whole run."""
    manifest = json.loads((small_run / "run.json").read_text())
    assert manifest["options"]["renew_set"] is True
    assert manifest["set_renewals"] == 1
    assert 0 < manifest["set_renewal_seconds"] < 30
    log = read_table(small_run, QUERY_LOG).rows
    for test in ("small", "reads_many_rows"):
        assert {r.run for r in log if r.test == test} == {0, 1, 2, 3}
    assert not [e for e in read_table(small_run, ERRORS).rows if e.stage != "prewarm"]


def test_one_process_a_side_with_processes_1(tmp_path: Path, server_binary: Path) -> None:
    out = tmp_path / "out"
    result = run_chperf(
        ["run", "--reference", str(server_binary), "--patched", str(server_binary),
         "--tests", str(DATA / "runner_small"), "--test", "small", "--runs", "4",
         "--processes", "1", "--no-profile", "--out", str(out)]
    )  # fmt: skip
    assert result.returncode in (1, 4), result.stderr
    assert {r.process for r in read_table(out, RUNS).rows} == {0}
    assert len(server_pids(out)) == 2
    summary = json.loads((out / "summary.json").read_text())
    assert all(q["process_diffs"] == [] for q in summary["queries"])


def test_the_adaptive_mode_runs_each_query_until_the_stop_rule_says_why(
    tmp_path: Path, server_binary: Path
) -> None:
    """Without --runs: complete ABBA pairs from run 0 up to the count stops.tsv gives, between
    the rule's minimum (7) and its extended maximum (40), with one of the rule's reasons."""
    out = tmp_path / "out"
    result = run_chperf(
        ["run", "--reference", str(server_binary), "--patched", str(server_binary),
         "--tests", str(DATA / "runner_small" / "small.xml"), "--no-profile", "--out", str(out)]
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    stops = {(s.test, s.query_index): s for s in read_table(out, STOPS).rows}
    assert sorted(stops) == [("small", 0), ("small", 1), ("small", 2)]
    runs: dict[tuple[str, int, str], list[int]] = defaultdict(list)
    for row in read_table(out, RUNS).rows:
        runs[(row.test, row.query_index, row.server)].append(row.run)
    reasons = ("settled", "reached 24 runs", "reached 40 runs (extended)", "time budget")
    for (test, index), stop in stops.items():
        assert 6 <= stop.runs <= 40
        assert stop.reason.startswith(reasons) or "time budget" in stop.reason, stop.reason
        for side in ("reference", "patched"):
            assert runs[(test, index, side)] == list(range(stop.runs))
    manifest = json.loads((out / "run.json").read_text())
    options = manifest["options"]
    assert options["runs"] == "adaptive"
    rule = options["adaptive"]
    assert (rule["min_runs"], rule["max_runs"], rule["extended_runs"]) == (6, 24, 40)
    # One wake query after every look that let the query run on: looks after runs 6, 8, .., 24,
    # the last one stopped it unless it was extended (then looks after 26, 28, .., 38).
    looks = [n for n in range(1, 41) if is_checkpoint(StopRule(), n)]
    wakes = sum(1 for s in stops.values() for n in looks if n < s.runs)
    assert manifest["wake_queries"] == wakes


def test_interrupted_run_stops_servers_and_keeps_artifacts(
    tmp_path: Path, server_binary: Path
) -> None:
    out = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "chperf", "run", "--tests", str(DATA / "runner_small"),
         "--runs", "200", "--out", str(out),
         "--reference", str(server_binary), "--patched", str(server_binary)],
        cwd=REPO, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (out / "runs.tsv").exists() and len((out / "runs.tsv").read_text().splitlines()) > 5:
            break
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["status"] == "interrupted"
    assert not [pid for pid in server_pids(out) if process_exists(pid)]
    runs = read_table(out, RUNS)
    assert not runs.problems and len(runs.rows) >= 5
    assert not Path(manifest["servers"]["reference"]["directory"]).exists()


def test_server_that_cannot_start_names_side_and_log(tmp_path: Path, server_binary: Path) -> None:
    result = run_chperf(
        ["run", "--tests", str(DATA / "runner_small"), "--out", str(tmp_path / "out"),
         "--reference", str(server_binary), "--patched", str(server_binary),
         "--patched-config", str(DATA / "overlays" / "bad_xml")]
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "patched server" in result.stderr
    assert "last lines of its logs" in result.stderr


def test_setup_optimize_merges_and_measuring_starts_with_no_merge_running(
    tmp_path: Path, server_binary: Path
) -> None:
    """The fill leaves ~80 parts being merged when its OPTIMIZE FINAL arrives, which then did
    nothing (18.16: a running merge holds parts); each measured query throws unless the table
    is one part with no merge running. Both fail on every server without runner/settle.py."""
    out = tmp_path / "out"
    result = run_chperf(
        ["run", "--reference", str(server_binary), "--patched", str(server_binary),
         "--tests", str(DATA / "settle"), "--runs", "3", "--no-profile", "--out", str(out)]
    )  # fmt: skip
    assert result.returncode in (1, 4), result.stderr
    assert not read_table(out, ERRORS).rows
    runs = read_table(out, RUNS).rows
    assert len(runs) == 2 * 3 * 2  # two queries, three runs a side
    assert all(r.client_time > 0 for r in runs)
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["servers"]["reference"]["capabilities"]["optimize_throw_if_noop"] is True
    assert manifest["warnings"] == []


def test_a_failed_setup_is_one_error_and_its_teardown_repeats_nothing(
    tmp_path: Path, server_binary: Path
) -> None:
    """One test's setting is unknown to every server (the drops fail with it too), another's
    second create fails (its drop without IF EXISTS finds nothing): each test's setup failure
    is recorded, its teardown adds no row. Without runner/testsetup.py's filter both tests
    put teardown rows into errors.tsv, the first on both sides."""
    out = tmp_path / "out"
    done = run_chperf(
        ["run", "--reference", str(server_binary), "--patched", str(server_binary),
         "--tests", str(DATA / "failed_setup"), "--runs", "3", "--no-profile", "--out", str(out)]
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # nothing measured on both sides
    errors = read_table(out, ERRORS).rows
    setup = {(e.test, e.server): e for e in errors if e.stage == "setup"}
    assert set(setup) == {
        (test, side)
        for test in ("missing_engine", "unknown_setting")
        for side in ("reference", "patched")
    }, errors
    assert "chperf_no_such_setting" in setup["unknown_setting", "reference"].message
    assert "ChperfNoSuchEngine" in setup["missing_engine", "reference"].message
    assert not [e for e in errors if e.stage == "teardown"], errors


def test_teardown_runs_every_drop_and_once_more_a_drop_that_a_later_one_unblocks(
    tmp_path: Path, server_binary: Path
) -> None:
    out = tmp_path / "out"
    done = run_chperf(
        ["run", "--reference", str(server_binary), "--patched", str(server_binary),
         "--tests", str(DATA / "teardown"), "--runs", "3", "--no-profile", "--out", str(out)]
    )  # fmt: skip
    errors = read_table(out, ERRORS).rows
    setup = [e for e in errors if e.stage == "setup"]
    if setup:  # probed: an engine without DDL dictionaries (18.16) cannot create the test's
        assert "DICTIONARY" in setup[0].message, setup
        pytest.skip(f"this engine cannot create the dictionary: {setup[0].message[:120]}")
    assert done.returncode == 4, done.stderr  # 3 runs: inconclusive, nothing failed
    assert not [e for e in errors if e.stage == "teardown"], errors
