"""Two ClickHouse versions side by side: Debian's 18.16 package as the reference, the 26.9
engine fixture as the patched server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from artifacts.verdicts import read_verdicts
from compare.stopping import StopRule
from tests.conftest import DATA, engine_binary, run_chperf

MODERN = DATA / "modern"


@pytest.fixture(scope="module")
def upgrade_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    out = tmp_path_factory.mktemp("upgrade") / "out"
    done = run_chperf(
        ["run", "--reference", str(engine_binary("18.16")),
         "--patched", str(engine_binary("26.9")),
         "--tests", str(MODERN), "--no-profile", "--out", str(out)]
    )  # fmt: skip
    return out, done.returncode, done.stderr


def test_each_side_records_what_its_server_can_do(upgrade_run: tuple[Path, int, str]) -> None:
    out, _, _ = upgrade_run
    servers = json.loads((out / "run.json").read_text())["servers"]
    old, new = servers["reference"]["capabilities"], servers["patched"]["capabilities"]
    assert (old["profile_events"], new["profile_events"]) == ("arrays", "map")
    assert old["trace_log"] is False and old["query_profiler"] is False
    assert new["trace_log"] is True and new["query_profiler"] is False  # the engine never samples
    assert new["asynchronous_metrics"] is False


def test_a_setup_failing_on_one_side_makes_its_queries_partial_with_the_server_message(
    upgrade_run: tuple[Path, int, str],
) -> None:
    out, code, stderr = upgrade_run
    verdicts = {(v.test, v.query_index): v for v in read_verdicts(out).rows}
    for index in (0, 1):
        partial = verdicts[("one_side", index)]
        assert partial.verdict == "partial", partial
        assert "fails on reference only" in partial.reason and "numbers_mt" in partial.reason
        assert partial.runs_patched == StopRule().min_runs and not partial.runs_reference
    assert verdicts[("both_sides", 0)].verdict in ("unchanged", "faster", "slower", "unstable")
    assert code in (0, 1), stderr  # a reference-only failure alone never fails the check


def test_the_report_says_which_side_lacks_what(upgrade_run: tuple[Path, int, str]) -> None:
    out, _, _ = upgrade_run
    html = (out / "report.html").read_text()
    assert "The servers differ in what they can do" in html
    assert "profile_events: reference arrays, patched map" in html


def test_profiling_a_server_whose_profiler_never_samples_does_not_decide_the_check(
    tmp_path: Path,
) -> None:
    modern = str(engine_binary("26.9"))
    out = tmp_path / "out"
    test = str(MODERN / "both_sides.xml")
    done = run_chperf(
        ["run", "--reference", modern, "--patched", modern, "--tests", test,
         "--runs", "7", "--profile-all", "--profile-seconds", "1", "--out", str(out)]
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    manifest = json.loads((out / "run.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    assert done.returncode == (0 if summary["status"] == "success" else 1)
    profiles, unavailable = manifest.get("profiles", []), manifest.get("profiling_unavailable")
    assert profiles or unavailable  # flame graphs from perf, or the reason there are none
    assert all(p["kind"] == "perf" for p in profiles)
    assert "errors while building the report" not in (out / "report.html").read_text()


def test_two_modern_engine_versions_compare_side_by_side(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run_chperf(
        ["run", "--reference", str(engine_binary("26.7")), "--patched", str(engine_binary("26.9")),
         "--tests", str(MODERN / "both_sides.xml"), "--runs", "7", "--no-profile",
         "--out", str(out)]
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    servers = json.loads((out / "run.json").read_text())["servers"]
    assert servers["reference"]["version"].startswith("26.7.")
    assert servers["patched"]["version"].startswith("26.9.")
    (verdict,) = read_verdicts(out).rows
    assert verdict.runs_reference == verdict.runs_patched == 7
