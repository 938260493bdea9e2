"""The verdict statistics side by side on existing runs: `chperf compare` with
`--method pooled` and `--method paired` over copies of run directories (A/A runs show false
alarms and instability, a known-change run shows what each finds). No servers: it recomputes
verdicts from runs.tsv, so the two methods see exactly the same measurements.

Prints per run and method the verdict counts, the unstable share and the compare time.

Usage: .venv/bin/python bench/bench_methods.py OUT [OUT ...]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

# Run as a script (`python bench/<name>.py`): the repository root holds the `bench` package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from compare import CompareOptions, compare_directory
from compare.paired import METHODS

VERDICTS = ("slower", "faster", "unstable", "unchanged", "partial", "error", "skipped")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", type=Path, nargs="+", help="output directories of chperf run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="chperf-bench-methods-") as scratch:
        for run in args.runs:
            for method in METHODS:
                copy = Path(scratch) / f"{run.name}-{method}"
                shutil.copytree(run, copy)
                start = time.perf_counter()
                result = compare_directory(copy, CompareOptions(method=method))
                seconds = time.perf_counter() - start
                counts = result.counts
                measured = sum(counts[v] for v in ("slower", "faster", "unstable", "unchanged"))
                share = counts["unstable"] / measured if measured else 0.0
                parts = ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])
                print(f"{run}: {method:6s} {parts}; unstable {share:.1%}; compare {seconds:.1f} s")


if __name__ == "__main__":
    main()
