"""runs.tsv read through chDB, for compare/evidence.py's fast path on large runs: the runs come
back in RowBinary, ordered so that each query's runs of a side are one stretch of rows, and
become each query's Samples without a Python object per value until the end.

Only for a clean file: when anything in it needs saying (a run recorded twice, a time not above
0 or over MAX_SECONDS, nan included, an unknown server, a run on different process sets on the
two sides), the caller reads it line by line, which names the line. These checks run in numpy on
the rows chDB returns, not as queries of their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from artifacts.errors import InfrastructureError
from artifacts.tables import PATCHED, REFERENCE, RUNS
from artifacts.values import MAX_SECONDS
from compare.engine import SqlEngine
from compare.randomization import Samples

QueryKey = tuple[str, int]

# runs_by_query.sql's RowBinary rows
RUN_RECORD = np.dtype(
    [("key", "<u8"), ("side", "u1"), ("run", "<i4"), ("time", "<f8"), ("process", "<i4")]
)


@dataclass(frozen=True)
class GroupedRuns:
    samples: dict[QueryKey, Samples]  # every query with runs, on one side or both
    runs_per_side: dict[str, int]


def read_grouped(path: Path, engine: SqlEngine) -> GroupedRuns | None:
    """None when the file is missing, damaged, or has anything the careful reader reports."""
    try:
        with path.open("rb") as f:
            header = f.readline().decode("utf-8", errors="replace").rstrip("\n").split("\t")
            f.seek(-1, 2)
            if header != list(RUNS.columns) or f.read(1) != b"\n":
                return None
        engine.execute("DROP TABLE IF EXISTS runs_input", source="grouped_runs.py")
        engine.execute(
            "CREATE TABLE runs_input ENGINE = Memory AS SELECT * FROM file("
            "{runs:String}, 'TabSeparatedWithNames', {structure:String}) "
            "SETTINGS input_format_allow_errors_num = 0",
            {"runs": str(path), "structure": RUNS.chdb_structure()},
            source="grouped_runs.py",
        )
        keys = {int(k): (test, int(index)) for k, test, index in engine.json_rows("runs_keys.sql")}
        data = np.frombuffer(engine.binary("runs_by_query.sql"), dtype=RUN_RECORD)
    except (OSError, InfrastructureError, ValueError):
        return None
    finally:
        engine.execute("DROP TABLE IF EXISTS runs_input", source="grouped_runs.py")
    if not len(data) or len(np.unique(data["key"])) != len(keys) or _anomalous(data):
        # a key hash shared by two queries was never seen, but the careful way is sure
        return None
    return _grouped(data, keys)


def _anomalous(data: np.ndarray) -> bool:
    """Rows the careful reader would report: an unknown server, a time not above 0 or over
    MAX_SECONDS (nan included), or a run recorded twice (rows come sorted by query, side and
    run, so a repeat is next to its first)."""
    key, side, run, times = data["key"], data["side"], data["run"], data["time"]
    if np.any(side > 1) or not np.all((times > 0) & (times <= MAX_SECONDS)):
        return True
    repeated = (key[1:] == key[:-1]) & (side[1:] == side[:-1]) & (run[1:] == run[:-1])
    return bool(np.any(repeated))


def _grouped(data: np.ndarray, keys: dict[int, QueryKey]) -> GroupedRuns | None:
    """Stretches of one query and side, found at once; Python touches each stretch once.
    None when a run is on different process sets on the two sides."""
    key, side = data["key"], data["side"]
    changes = np.flatnonzero((key[1:] != key[:-1]) | (side[1:] != side[:-1])) + 1
    starts = np.concatenate(([0], changes)).tolist()
    ends = [*starts[1:], len(data)]
    stretch_keys = key[starts].tolist()
    stretch_sides = side[starts].tolist()
    runs, times, processes = data["run"].tolist(), data["time"].tolist(), data["process"].tolist()
    sides: dict[int, dict[int, tuple[int, int]]] = {}
    for k, patched, start, end in zip(stretch_keys, stretch_sides, starts, ends, strict=True):
        sides.setdefault(k, {})[patched] = (start, end)
    samples = {}
    for k, found in sides.items():
        ref_start, ref_end = found.get(0, (0, 0))
        pat_start, pat_end = found.get(1, (0, 0))
        ref_runs, pat_runs = runs[ref_start:ref_end], runs[pat_start:pat_end]
        reference = tuple(times[ref_start:ref_end])
        patched = tuple(times[pat_start:pat_end])
        if ref_runs == pat_runs:  # the usual case: every run on both sides
            pairs = tuple(zip(reference, patched, strict=True))
            sets = tuple(processes[ref_start:ref_end])
            if processes[pat_start:pat_end] != processes[ref_start:ref_end]:
                return None
        else:
            by_run = dict(zip(pat_runs, range(pat_start, pat_end), strict=True))
            kept = [i for i, run in enumerate(ref_runs) if run in by_run]
            pairs = tuple((reference[i], times[by_run[ref_runs[i]]]) for i in kept)
            sets = tuple(processes[ref_start + i] for i in kept)
            if any(processes[by_run[ref_runs[i]]] != processes[ref_start + i] for i in kept):
                return None
        samples[keys[k]] = Samples(reference, patched, pairs, sets)
    per_side = {
        REFERENCE: int(np.count_nonzero(side == 0)),
        PATCHED: int(np.count_nonzero(side == 1)),
    }
    return GroupedRuns(samples, per_side)
