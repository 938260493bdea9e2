"""Report benchmark (the bars: 3,000 synthetic queries render in <= 5 s, report.html <= 3 MB).

Usage: .venv/bin/python bench/bench_report.py [--queries N] [--runs N] [--repeat N]

Writes a synthetic run (report.synthetic.write_large_run: ~5% slower, 3% faster, 5%
unstable, 40 metrics a query, monitor samples four times a second with a neighbour busy a
minute in every fifteen; no flame graphs) into a temporary directory, renders it `--repeat`
times (report.html and the queries' details pages, as `chperf report` does) and prints the
median wall and CPU time, the time of each stage, the main page's size and the detail pages'
sizes, all from one run. Prints numbers; asserts nothing (tests never assert timings).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from report import render, synthetic
from report.display import DETAILS_DIR
from report.flamegraph import FlameGraphs
from report.inputs import load_inputs
from report.view import build_report

TIME_BAR_SECONDS = 5.0
SIZE_BAR_BYTES = 3 * 1024 * 1024
MB = 1024 * 1024


def _stages(out: Path) -> tuple[float, float, float, float]:
    start = time.perf_counter()
    inputs = load_inputs(out)
    loaded = time.perf_counter()
    report = build_report(inputs, FlameGraphs({}, ()), (), "bench")
    built = time.perf_counter()
    render.render_html(report)
    main = time.perf_counter()
    render.write_details(out, report.details)
    details = time.perf_counter()
    return loaded - start, built - loaded, main - built, details - main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="chperf-bench-report-") as tmp:
        out = Path(tmp)
        synthetic.write_large_run(out, args.queries, runs=args.runs)
        totals, cpu = [], []
        for _ in range(args.repeat):
            start, start_cpu = time.perf_counter(), time.process_time()
            result = render.render_report(out)
            totals.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        size = result.path.stat().st_size
        pages = [p.stat().st_size for p in (out / DETAILS_DIR).iterdir()]
        load, build, template, details = _stages(out)
        rows = sum(1 for _ in (out / "runs.tsv").open()) - 1
        samples = sum(1 for _ in (out / "monitor.tsv").open()) - 1
    total = statistics.median(totals)
    print(f"queries: {args.queries}, runs per side: {args.runs}, runs.tsv rows: {rows}, "
          f"monitor samples: {samples}")  # fmt: skip
    print(f"render_report (report.html and {len(pages)} detail pages): median {total:.2f} s "
          f"of {args.repeat} (bar {TIME_BAR_SECONDS:.0f} s, {total / TIME_BAR_SECONDS:.2f}x "
          f"of the bar); CPU {statistics.median(cpu):.2f} s (a busy machine inflates the "
          "first, not this)")  # fmt: skip
    print(f"  stages: read inputs {load:.2f} s, view model {build:.2f} s, "
          f"main page {template:.2f} s, detail pages {details:.2f} s")  # fmt: skip
    print(f"report.html: {size / MB:.2f} MB (bar 3 MB, {size / SIZE_BAR_BYTES:.2f}x)")
    if pages:
        middle, largest = statistics.median(pages) / 1024, max(pages) / 1024
        print(f"{DETAILS_DIR}/: {len(pages)} pages, {sum(pages) / MB:.1f} MB, median "
              f"{middle:.1f} KB, largest {largest:.1f} KB")  # fmt: skip
    print(f"problems while building: {len(result.problems)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
