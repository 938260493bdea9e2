"""Harness overhead: what chperf itself adds to every measured run.

1. Per-run client overhead: the median wall time of `SELECT 1` through the runner's
   executor (the server's own time for it rounds to 0 ms), next to clickhouse-driver's
   `execute` for scale. Target: <= 1 ms.
2. Harness efficiency on a suite: the sum of server-side query time (query_log) over the
   wall time of the measured runs. Target: >= 0.9.

Usage: .venv/bin/python bench/bench_harness.py [--tests DIR] [--runs N] [--binary PATH]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from artifacts.manifest import read_manifest
from artifacts.tables import QUERY_LOG, RUNS
from artifacts.tsv import read_table
from runner.executor import HttpExecutor
from runner.server import ServerSpec
from runner.servers import started_servers

REPO = Path(__file__).resolve().parents[1]


def select_one_overhead(binary: Path, repetitions: int) -> tuple[float, float]:
    spec = ServerSpec("reference", binary)
    with started_servers(spec, ServerSpec("patched", binary)) as pair:
        executor = HttpExecutor(pair.reference.process.ports.http, 30)
        times = []
        for i in range(repetitions):
            outcome = executor.execute("SELECT 1", f"bench.select1.{i}", {})
            assert outcome.ok, outcome.message
            times.append(outcome.elapsed)
        executor.close()
        driver_times = []
        for _ in range(repetitions):
            start = time.perf_counter()
            pair.reference.control.execute("SELECT 1")
            driver_times.append(time.perf_counter() - start)
    return statistics.median(times), statistics.median(driver_times)


def efficiency(binary: Path, tests: Path, runs: int) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        subprocess.run(
            [sys.executable, "-m", "chperf", "run", "--tests", str(tests), "--runs", str(runs),
             "--no-profile",
             "--reference", str(binary), "--patched", str(binary), "--out", str(out)],
            check=False, cwd=REPO,
        )  # fmt: skip
        manifest = read_manifest(out)
        wall = float(manifest["measured_runs_seconds"])
        server = sum(r.server_time for r in read_table(out, QUERY_LOG).rows)
        client = sum(r.client_time for r in read_table(out, RUNS).rows)
    return server, client, wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", type=Path, default=Path("/usr/sbin/clickhouse-server"))
    parser.add_argument("--tests", type=Path, default=REPO / "perf_tests")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--repetitions", type=int, default=2000)
    args = parser.parse_args()
    http_median, driver_median = select_one_overhead(args.binary, args.repetitions)
    print(f"SELECT 1 median round trip, chperf executor (HTTP): {http_median * 1e3:.3f} ms")
    print(f"SELECT 1 median round trip, clickhouse-driver:      {driver_median * 1e3:.3f} ms")
    print(f"per-run client overhead <= {http_median * 1e3:.3f} ms (target <= 1 ms)")
    server, client, wall = efficiency(args.binary, args.tests, args.runs)
    print(
        f"measured phase: wall {wall:.2f} s, client time {client:.2f} s, server time {server:.2f} s"
    )
    print(f"harness efficiency = server time / wall = {server / wall:.3f} (target >= 0.9)")
    print(f"client share       = client time / wall = {client / wall:.3f}")


if __name__ == "__main__":
    main()
