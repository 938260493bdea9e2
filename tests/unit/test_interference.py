"""Runs that coincided with interference, from monitor.tsv's samples and runs.tsv's start
times, named in the verdict's reason and counted in summary.json."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from artifacts.tables import MONITOR, RUNS, MonitorRow
from artifacts.tsv import read_table, write_table
from compare import CompareOptions, compare_directory
from compare.interference import interference
from report.render import render_report
from tests.runs import verdict_rows, write_artifacts

RUNS_A_SIDE = 8
STEADY = tuple(0.1 + 0.001 * (i % 3) for i in range(RUNS_A_SIDE))


def sample(end: float, foreign: float) -> MonitorRow:
    return MonitorRow(
        time=end, seconds=0.5, cpus=2, user=0.5, system=0.1, iowait=0.0, steal=0.0,
        idle=0.4, servers_cpu=1.0, chperf_cpu=0.05, foreign_cpu=foreign, load1=1.0,
        runnable=2, cpu_pressure=None, io_pressure=None, memory_pressure=None,
        disk_busy=0.0, disk_queue=0.0, mem_available_mb=1000.0,
    )  # fmt: skip


def run_with_neighbour(tmp_path: Path) -> Path:
    """Query 0 at t = 1000 s, query 1 at t = 2000 s, one run number a second; a neighbour
    takes 0.6 cores from 2002 s to 2004 s: query 1's runs 2 and 3."""
    out = write_artifacts(tmp_path / "run", {0: (STEADY, STEADY), 1: (STEADY, STEADY)})
    rows = read_table(out, RUNS).rows
    timed = [
        replace(r, start_time=1000.0 * (r.query_index + 1) + r.run + 0.5 * (r.server == "patched"))
        for r in rows
    ]
    write_table(out, RUNS, timed)
    samples = [sample(t / 2, 0.6 if 2002.0 < t / 2 <= 2004.0 else 0.02) for t in range(1990, 4030)]
    write_table(out, MONITOR, samples)
    return out


def test_a_query_whose_runs_met_a_neighbour_says_which_runs_and_how_much(tmp_path: Path) -> None:
    out = run_with_neighbour(tmp_path)
    found = interference(out)
    assert found[("t", 1)].disturbed == (2, 3)
    assert found[("t", 0)].disturbed == ()
    compare_directory(out, CompareOptions())
    rows = verdict_rows(out)
    reason_1 = next(f for f in rows[("t", "1")] if "coincided" in f)
    assert "runs 2-3 of 8 coincided with up to 0.60 cores of foreign CPU" in reason_1
    assert not any("coincided" in f for f in rows[("t", "0")])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interference"]["disturbed_queries"] == 1
    assert summary["interference"]["disturbed_runs"] == 2


def test_a_run_without_monitor_samples_has_no_interference_figures(tmp_path: Path) -> None:
    out = write_artifacts(tmp_path / "run", {0: (STEADY, STEADY)})
    compare_directory(out, CompareOptions())
    assert json.loads((out / "summary.json").read_text())["interference"] is None


def test_runs_written_before_runs_had_a_start_time_still_read(tmp_path: Path) -> None:
    out = write_artifacts(tmp_path / "run", {0: (STEADY, STEADY)})
    lines = (out / RUNS.file).read_text().splitlines()
    old = ["\t".join(line.split("\t")[:-1]) for line in lines]  # without start_time
    (out / RUNS.file).write_text("\n".join(old) + "\n")
    rows = read_table(out, RUNS).rows
    assert len(rows) == 2 * RUNS_A_SIDE and {r.start_time for r in rows} == {0.0}
    compare_directory(out, CompareOptions())
    assert verdict_rows(out)[("t", "0")][3].startswith("unchanged:")


def test_the_report_draws_the_machine_over_the_run_with_the_runs_as_ticks(tmp_path: Path) -> None:
    out = run_with_neighbour(tmp_path)
    compare_directory(out, CompareOptions())
    render_report(out)
    html = (out / "report.html").read_text()
    assert "The machine during the run" in html
    for line in ("servers", "foreign", "steal"):
        assert f'<polyline class="load {line}"' in html
    bare = write_artifacts(tmp_path / "bare", {0: (STEADY, STEADY)})
    compare_directory(bare, CompareOptions())
    render_report(bare)
    assert "The machine during the run" not in (bare / "report.html").read_text()
