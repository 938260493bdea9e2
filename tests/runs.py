"""Run directories built for tests: the artifacts a run writes, with known client times."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from artifacts.manifest import write_manifest
from artifacts.tables import (
    ERRORS,
    PROFILE_EVENTS,
    QUERIES,
    QUERY_LOG,
    RUNS,
    TESTS,
    ErrorRow,
    QueryRow,
    RunRow,
    TestRow,
)
from artifacts.tsv import write_table

Series = Mapping[int, tuple[Sequence[float], Sequence[float]]]  # query_index -> runs per side
# Seven steady runs around 0.1 s.
STEADY_7 = (0.100, 0.101, 0.099, 0.1005, 0.102, 0.0995, 0.1015)
# Two identical servers that differ by 4% on this query (memory layout): the A/A offset.
OFFSET = (STEADY_7, tuple(v * 1.04 for v in STEADY_7))
SERVER = {"binary": "/usr/sbin/clickhouse-server", "sha256": "abc", "overlays": []}


def write_artifacts(
    out: Path, series: Series, errors: Sequence[ErrorRow] = (), test: str = "t"
) -> Path:
    """A run of one test (`t` unless named otherwise, from the file `<test>.xml`) whose
    queries took the given client times."""
    out.mkdir(parents=True, exist_ok=True)
    write_manifest(out, {})
    write_table(out, QUERIES, [QueryRow(test, i, f"SELECT {i}", None) for i in series])
    runs = [
        RunRow(test, i, side, run, f"t-{i}-{run}", value)
        for i, sides in series.items()
        for side, values in zip(("reference", "patched"), sides, strict=True)
        for run, value in enumerate(values)
    ]
    write_table(out, RUNS, runs)
    write_table(out, QUERY_LOG, [])
    write_table(out, PROFILE_EVENTS, [])
    write_table(out, ERRORS, errors)
    write_table(out, TESTS, [TestRow(test, f"{test}.xml", "ran", "", 1.0)])
    return out


def verdict_rows(out: Path) -> dict[tuple[str, str], list[str]]:
    lines = (out / "verdicts.tsv").read_text().splitlines()[1:]
    return {(f[0], f[1]): f for f in (line.split("\t") for line in lines)}


def aa_run(tmp_path: Path) -> Path:
    """An A/A run: query 0 steady, query 1 offset by 4% between the two servers."""
    out = write_artifacts(tmp_path / "aa", {0: (STEADY_7, STEADY_7[::-1]), 1: OFFSET})
    write_manifest(out, {"servers": {"reference": SERVER, "patched": SERVER}})
    return out
