"""Report benchmark (the bar: 3,000 synthetic queries render in <= 5 s into <= 3 MB).

Usage: .venv/bin/python bench/bench_report.py [--queries N] [--runs N] [--repeat N]

Writes a synthetic run (report.synthetic.write_large_run: ~5% slower, 3% faster, 5%
unstable, each with a run plot and 40 metrics; no flame graphs) into a temporary directory,
renders it `--repeat` times and prints the time of each stage and the report's size. Prints
numbers; asserts nothing (tests never assert timings).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from report import render, synthetic
from report.flamegraph import FlameGraphs
from report.inputs import load_inputs
from report.view import build_report

TIME_BAR_SECONDS = 5.0
SIZE_BAR_BYTES = 3 * 1024 * 1024


def _stages(out: Path) -> tuple[float, float, float]:
    start = time.perf_counter()
    inputs = load_inputs(out)
    loaded = time.perf_counter()
    report = build_report(inputs, FlameGraphs({}, ()), (), "bench")
    built = time.perf_counter()
    render.render_html(report)
    rendered = time.perf_counter()
    return loaded - start, built - loaded, rendered - built


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="chperf-bench-report-") as tmp:
        out = Path(tmp)
        synthetic.write_large_run(out, args.queries, runs=args.runs)
        totals = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = render.render_report(out)
            totals.append(time.perf_counter() - start)
        load, build, template = _stages(out)
        size = result.path.stat().st_size
        rows = sum(1 for _ in (out / "runs.tsv").open()) - 1
    total = statistics.median(totals)
    print(f"queries: {args.queries}, runs per side: {args.runs}, runs.tsv rows: {rows}")
    print(f"render_report: median {total:.2f} s of {args.repeat} (bar {TIME_BAR_SECONDS:.0f} s, "
          f"{total / TIME_BAR_SECONDS:.2f}x of the bar)")  # fmt: skip
    print(
        f"  stages: read inputs {load:.2f} s, view model {build:.2f} s, template {template:.2f} s"
    )
    print(f"report.html: {size / 1024 / 1024:.2f} MB (bar 3 MB, {size / SIZE_BAR_BYTES:.2f}x)")
    print(f"problems while building: {len(result.problems)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
