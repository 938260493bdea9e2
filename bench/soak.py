"""Soak: the suite runs for a long time while faults are injected every few minutes.

Faults rotate: SIGKILL the patched server, SIGKILL the reference server, SIGSTOP the patched
server (alive but silent: a hang, found by the client timeout). At the deadline the run in
progress gets SIGINT (exit 130, status "interrupted", artifacts still consistent).
Successive `chperf run`s of the suite fill the duration. After each run: every artifact
reads back without a damaged line, run.json is complete, every injected fault is recorded
in errors.tsv, verdicts and the report exist, and no process started under the run's
servers directory remains.

Usage: .venv/bin/python bench/soak.py [--minutes 20] [--fault-every 240] [--tests DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from artifacts.tables import ALL_TABLES, ERRORS, RUNS
from artifacts.tsv import read_table

REPO = Path(__file__).resolve().parents[1]
FAULTS = ("kill patched", "kill reference", "hang patched")


@dataclass
class RunReport:
    out: Path
    exit_code: int = -1
    faults: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    runs: int = 0
    interrupted: bool = False  # SIGINT at the soak's deadline


def processes_under(directory: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if str(directory) in cmdline:
                found.append(int(entry.name))
    return found


def server_pid(out: Path, side: str) -> int | None:
    try:
        servers = json.loads((out / "run.json").read_text()).get("servers") or {}
    except (OSError, json.JSONDecodeError):
        return None
    return int(servers[side]["pid"]) if side in servers else None


def inject(fault: str, out: Path) -> bool:
    side = "reference" if "reference" in fault else "patched"
    pid = server_pid(out, side)
    if pid is None:
        return False
    try:
        os.kill(pid, signal.SIGSTOP if fault.startswith("hang") else signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


def check(report: RunReport, servers_dir: Path) -> None:
    out = report.out
    for table in ALL_TABLES:
        contents = read_table(out, table)
        report.problems += [str(p) for p in contents.problems if not contents.missing]
    manifest = json.loads((out / "run.json").read_text())
    expected = "interrupted" if report.interrupted else "complete"
    if manifest.get("status") != expected:
        report.problems.append(f"run.json status {manifest.get('status')!r}, not {expected}")
    incidents = [e for e in read_table(out, ERRORS).rows if e.stage == "server"]
    if len(incidents) < len(report.faults):
        report.problems.append(f"{len(report.faults)} faults but {len(incidents)} incidents")
    if report.interrupted:
        if report.exit_code != 130:
            report.problems.append(f"exit code {report.exit_code} after SIGINT, not 130")
    else:
        for name in ("verdicts.tsv", "summary.json", "report.html"):
            if not (out / name).exists():
                report.problems.append(f"{name} missing")
        if report.faults and report.exit_code not in (1, 3):
            report.problems.append(f"exit code {report.exit_code} after faults")
    leftovers = processes_under(servers_dir)
    if leftovers:
        report.problems.append(f"processes left behind: {leftovers}")
    report.runs = len(read_table(out, RUNS).rows)


def soak_run(
    args: argparse.Namespace, out: Path, servers_dir: Path, deadline: float, counter: list[int]
) -> RunReport:
    report = RunReport(out)
    command = [sys.executable, "-m", "chperf", "run", "--tests", str(args.tests),
               "--out", str(out), "--servers-dir", str(servers_dir), "--no-profile",
               "--max-query-seconds", str(args.max_query_seconds)]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO, stderr=subprocess.DEVNULL)
    next_fault = time.monotonic() + args.fault_every
    while process.poll() is None:
        time.sleep(1)
        if time.monotonic() >= deadline and not report.interrupted:
            # The last fault: Ctrl-C at the deadline; the artifacts must still be consistent.
            process.send_signal(signal.SIGINT)
            report.interrupted = True
            print(f"soak: {time.strftime('%H:%M:%S')} deadline: SIGINT to chperf", flush=True)
        if time.monotonic() >= next_fault and time.monotonic() < deadline:
            fault = FAULTS[counter[0] % len(FAULTS)]
            if inject(fault, out):
                counter[0] += 1
                report.faults.append(fault)
                print(f"soak: {time.strftime('%H:%M:%S')} injected: {fault}", flush=True)
            next_fault = time.monotonic() + args.fault_every
    report.exit_code = process.returncode
    check(report, servers_dir)
    return report


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--fault-every", type=float, default=240, help="seconds")
    parser.add_argument("--tests", type=Path, default=REPO / "perf_tests")
    parser.add_argument("--max-query-seconds", type=float, default=10)
    args = parser.parse_args()
    start = time.monotonic()
    deadline = start + args.minutes * 60
    counter = [0]
    reports: list[RunReport] = []
    with tempfile.TemporaryDirectory(prefix="chperf-soak-") as tmp:
        servers_dir = Path(tmp) / "servers"
        servers_dir.mkdir()
        while time.monotonic() < deadline:
            out = Path(tmp) / f"run{len(reports)}"
            report = soak_run(args, out, servers_dir, deadline, counter)
            reports.append(report)
            print(f"soak: run {len(reports)}: exit {report.exit_code}, {report.runs} runs, "
                  f"faults {report.faults}, problems {report.problems}", flush=True)  # fmt: skip
    elapsed = (time.monotonic() - start) / 60
    faults = sum(len(r.faults) for r in reports)
    bad = [p for r in reports for p in r.problems]
    print(f"soak: {elapsed:.1f} min, {len(reports)} runs, {faults} faults injected, "
          f"{len(bad)} problems")  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
