"""`chperf history`: one test's (or query's) past medians and verdicts, oldest run first.
Medians come from the uploaded client times, so runs uploaded before compare show them too."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from artifacts.tables import PATCHED, REFERENCE

# The newest runs shown by default: enough to see a trend, short enough to read.
DEFAULT_LIMIT = 30


@dataclass(frozen=True)
class HistoryLine:
    start_time: datetime | None
    run_id: str
    query_index: int
    reference_median: float | None  # seconds
    patched_median: float | None
    reference_runs: int
    patched_runs: int
    verdict: str  # "" when the run was uploaded without verdicts
    diff: float | None
    threshold: float | None


def history_lines(
    times: Sequence[tuple[Any, ...]],
    verdicts: Sequence[tuple[Any, ...]],
    runs: Sequence[tuple[Any, ...]],
    limit: int = DEFAULT_LIMIT,
) -> list[HistoryLine]:
    """Assemble the rows of select_times/select_verdicts/select_runs.sql (pure)."""
    samples: dict[tuple[str, int], dict[str, list[float]]] = {}
    for run_id, query_index, server, values in times:
        samples.setdefault((str(run_id), int(query_index)), {})[str(server)] = list(values)
    found = {(str(r[0]), int(r[1])): r for r in verdicts}
    started = {str(r[0]): r[1] for r in runs}
    lines = []
    for (run_id, query_index), sides in samples.items():
        verdict = found.get((run_id, query_index))
        reference, patched = sides.get(REFERENCE, []), sides.get(PATCHED, [])
        lines.append(
            HistoryLine(
                start_time=started.get(run_id),
                run_id=run_id,
                query_index=query_index,
                reference_median=statistics.median(reference) if reference else None,
                patched_median=statistics.median(patched) if patched else None,
                reference_runs=len(reference),
                patched_runs=len(patched),
                verdict=str(verdict[2]) if verdict else "",
                diff=verdict[3] if verdict else None,
                threshold=verdict[4] if verdict else None,
            )
        )
    lines.sort(key=lambda h: (h.start_time or datetime.min, h.run_id, h.query_index))
    runs_kept = list(dict.fromkeys(h.run_id for h in lines))[-limit:]
    return [h for h in lines if h.run_id in set(runs_kept)]


COLUMNS = ("start_time", "run_id", "query", "reference", "patched", "runs", "diff", "verdict")


def render_table(test: str, lines: Sequence[HistoryLine]) -> str:
    """A plain text table, columns separated by two spaces; medians in milliseconds."""
    if not lines:
        return f"no uploaded runs of test {test}\n"
    table = [COLUMNS, *(_cells(h) for h in lines)]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    return "".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n"
        for row in table
    )


def _cells(h: HistoryLine) -> tuple[str, ...]:
    when = h.start_time.strftime("%Y-%m-%d %H:%M") if h.start_time else "-"
    return (
        when,
        h.run_id,
        str(h.query_index),
        _ms(h.reference_median),
        _ms(h.patched_median),
        f"{h.reference_runs}/{h.patched_runs}",
        f"{h.diff * 100:+.1f}%" if h.diff is not None else "-",
        h.verdict or "-",
    )


def _ms(seconds: float | None) -> str:
    return f"{seconds * 1000:.3f} ms" if seconds is not None else "-"
