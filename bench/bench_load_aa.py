"""A/A of the example load tests, repeated, with one and with two server process sets a side:
how many (test, concurrency) levels each calls changed (the bar: none), and how far apart the
process sets' own D lie.

Each repeat runs `--processes 1` and `--processes 2` back to back (in alternating order, so
neither always runs on a machine that the other has just warmed). A level's per-set D shows
what one server process's own speed does to a load level.

Usage: .venv/bin/python bench/bench_load_aa.py [--binary PATH] [--repeats N] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

# Run as a script (`python bench/<name>.py`): the repository root holds the `bench` package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.runs import CHANGED, REPO, chperf_run

LOAD_TESTS = ("load_select_mix.xml", "load_insert.xml")


def _tests(out: Path) -> Path:
    """A directory holding only the example load tests (symlinks)."""
    tests = out / "tests"
    tests.mkdir(parents=True, exist_ok=True)
    for name in LOAD_TESTS:
        link = tests / name
        if not link.exists():
            link.symlink_to(REPO / "perf_tests" / name)
    return tests


def _line(level: dict[str, Any]) -> str:
    diffs = ", ".join(f"{d:+.1%}" for d in level.get("process_diffs") or [])
    sets = f" sets [{diffs}]" if diffs else ""
    busy = level.get("foreign_cpu")
    foreign = f" foreign {busy:.2f}" if busy is not None else ""
    d, t = level.get("diff"), level.get("threshold")
    figures = f"D {d:+.1%} T {t:.1%}" if d is not None and t is not None else "no statistic"
    return (
        f"  {level['test']:16} {level['concurrency']:>2} clients  {level['verdict']:10} "
        f"{figures}{sets}{foreign}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default="/usr/sbin/clickhouse-server")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench_load_aa"))
    args = parser.parse_args()
    tests = _tests(args.out)
    changed = {1: 0, 2: 0}
    levels = {1: 0, 2: 0}
    spread: list[float] = []
    for repeat in range(args.repeats):
        order = (1, 2) if repeat % 2 == 0 else (2, 1)
        for sets in order:
            out = args.out / f"r{repeat}_p{sets}"
            run = chperf_run(
                out,
                tests,
                ["--reference", args.binary, "--patched", args.binary, "--processes", str(sets)],
            )
            print(f"repeat {repeat}, {sets} process set(s) a side:")
            for level in run.summary["load"]:
                print(_line(level))
                levels[sets] += 1
                changed[sets] += level["verdict"] in CHANGED
                diffs = level.get("process_diffs") or []
                if len(diffs) == 2:
                    spread.append(abs(diffs[0] - diffs[1]))
    print()
    for sets in (1, 2):
        print(f"{sets} process set(s) a side: {changed[sets]} of {levels[sets]} levels changed")
    if spread:
        spread.sort()
        middle = spread[len(spread) // 2]
        print(
            f"|D set 0 - D set 1| over {len(spread)} levels: median {middle:.1%}, "
            f"largest {spread[-1]:.1%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
