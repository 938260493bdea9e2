"""The environment monitor: /proc parsing on this machine's real files and on fixed texts, and
attribution of CPU time to a watched process against everything else."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.monitor import (
    CPU_FIELDS,
    Monitor,
    Sample,
    count_cpus,
    parse_cpu,
    parse_diskstats,
    parse_loadavg,
    parse_pressure,
    parse_process_ticks,
    summarize,
)

PROC = Path("/proc")


def test_the_aggregate_cpu_line_and_the_cpu_count_come_from_proc_stat() -> None:
    stat = PROC.joinpath("stat").read_text()
    assert len(parse_cpu(stat)) == len(CPU_FIELDS)
    assert count_cpus(stat) >= 1
    old_kernel = "cpu  10 0 5 100 2\ncpu0 10 0 5 100 2\n"
    assert parse_cpu(old_kernel) == (10, 0, 5, 100, 2, 0, 0, 0)
    with pytest.raises(ValueError):
        parse_cpu("intr 1 2 3\n")


def test_pressure_totals_are_read_from_the_some_line() -> None:
    text = (
        "some avg10=0.95 avg60=1.27 avg300=1.04 total=394862715\n"
        "full avg10=0.76 avg60=1.07 avg300=0.92 total=264968069\n"
    )
    assert parse_pressure(text) == 394862715
    with pytest.raises(ValueError):
        parse_pressure("full avg10=0 total=1\n")


def test_a_process_name_with_spaces_and_parentheses_does_not_shift_its_cpu_fields() -> None:
    stat = "4121 (click house) x) S 1 4121 4121 0 -1 4194560 5 0 0 0 120 30 0 0 20 0 1 0"
    assert parse_process_ticks(stat) == 150
    assert parse_process_ticks(PROC.joinpath("self/stat").read_text()) >= 0


def test_disk_time_counts_whole_physical_disks_only() -> None:
    text = (
        "   7       0 loop0 1 0 0 0 0 0 0 0 0 900 900 0 0 0 0 0 0\n"
        "   8       0 sda 10 0 0 0 0 0 0 0 0 400 500 0 0 0 0 0 0\n"
        "   8       1 sda1 10 0 0 0 0 0 0 0 0 400 500 0 0 0 0 0 0\n"
        " 259       0 nvme0n1 1 0 0 0 0 0 0 0 0 100 50 0 0 0 0 0 0\n"
        " 259       1 nvme0n1p1 1 0 0 0 0 0 0 0 0 100 50 0 0 0 0 0 0\n"
    )
    assert parse_diskstats(text) == (500, 550)
    parse_diskstats(PROC.joinpath("diskstats").read_text())


def test_load_and_runnable_tasks_come_from_loadavg() -> None:
    assert parse_loadavg("0.93 1.10 1.02 3/412 9911\n") == (0.93, 3)


def sample(at: float, seconds: float, foreign: float) -> Sample:
    return Sample(
        time=at, seconds=seconds, cpus=2, user=0.5, system=0.1, iowait=0.0, steal=0.01,
        idle=0.39, servers_cpu=1.0, chperf_cpu=0.0, foreign_cpu=foreign, load1=1.0,
        runnable=1, cpu_pressure=0.2, io_pressure=None, memory_pressure=None, disk_busy=0.0,
        disk_queue=0.0, mem_available_mb=1000.0,
    )  # fmt: skip


def test_a_run_is_summarized_by_the_samples_it_overlaps() -> None:
    samples = [sample(10.0, 1.0, 0.0), sample(11.0, 1.0, 1.0), sample(12.0, 1.0, 0.5)]
    assert summarize(samples, 10.2, 10.9)["foreign_cpu"] == 1.0  # within the second sample
    assert summarize(samples, 10.5, 11.5)["foreign_cpu"] == 0.75  # the second and third
    assert summarize(samples, 20.0, 21.0) == {}


def test_a_busy_watched_process_is_ours_and_an_unwatched_one_is_foreign() -> None:
    samples: list[Sample] = []
    watched: list[int] = []
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        with Monitor(samples.append, lambda: watched, interval_s=0.2):
            time.sleep(1.5)
            watched.append(busy.pid)
            time.sleep(1.5)
    finally:
        busy.kill()
        busy.wait()
    assert len(samples) >= 10
    before = [s for s in samples if s.servers_cpu == 0.0]
    after = samples[len(before) + 1 :]  # the first watched interval only sets the baseline
    assert before and after
    # The busy loop holds one core: foreign before it is watched, ours after. Generous bounds:
    # the machine is shared, but a loop cannot move between the two columns.
    assert sum(s.foreign_cpu for s in before) / len(before) >= 0.6
    assert sum(s.servers_cpu for s in after) / len(after) >= 0.6
    assert max(s.servers_cpu for s in samples) <= samples[0].cpus + 0.5  # no cumulative jump


def test_the_monitor_answers_whether_a_window_met_foreign_cpu() -> None:
    monitor = Monitor(lambda s: None, lambda: [])
    monitor.recent.extend([sample(10.0, 1.0, 0.0), sample(11.0, 1.0, 0.6)])
    assert not monitor.disturbed(9.2, 9.9)
    assert monitor.disturbed(10.5, 10.6)
    assert not monitor.disturbed(20.0, 21.0)
