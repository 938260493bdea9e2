"""What share of the sampled frames of a run's profiles has a function name.

Usage: .venv/bin/python bench/bench_flame_names.py OUT [OUT ...]

For each `chperf run` output directory (run with --profile-all, or with changed queries),
reads run.json's profiles and their folded stacks, and prints per server and side: the
profiler, the samples, the share of sampled frames (each frame of each sample counts once;
perf's thread names are not frames) that name a function, and the modules of the unnamed
ones. Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from artifacts.folded import frame_names

TOP_MODULES = 3


def summarize(out: Path) -> list[str]:
    manifest = json.loads((out / "run.json").read_text())
    servers = manifest.get("servers", {})
    frames: dict[str, int] = Counter()
    named: dict[str, int] = Counter()
    samples: dict[str, int] = Counter()
    unnamed: dict[str, Counter[str]] = {}
    kinds: dict[str, str] = {}
    for record in manifest.get("profiles", []):
        side = record["side"]
        with (out / record["folded"]).open(errors="replace") as lines:
            names = frame_names(lines, thread_first=record["kind"] == "perf")
        frames[side] += names.frames
        named[side] += names.named
        samples[side] += record["samples"]
        kinds[side] = record["kind"]
        unnamed.setdefault(side, Counter()).update(dict(names.unnamed_by_module))
    rows = []
    for side in sorted(frames):
        version = servers.get(side, {}).get("version", "?")
        share = named[side] / frames[side] if frames[side] else float("nan")
        top = ", ".join(
            f"{module or '[unknown]'} {n / frames[side]:.0%}"
            for module, n in unnamed[side].most_common(TOP_MODULES)
        )
        rows.append(
            f"{out.name}\t{version}\t{side}\t{kinds[side]}\t{samples[side]}\t{share:.1%}\t{top}"
        )
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="+", type=Path)
    args = parser.parse_args(argv)
    print("run\tversion\tside\tprofiler\tsamples\tnamed frames\tunnamed by module")
    for out in args.out:
        for row in summarize(out):
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
