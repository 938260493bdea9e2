"""Load-test levels in the PR comment and the job summary (docs/load.md): read from
summary.json `load`, one Markdown row per (test, concurrency)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from artifacts.summary import SUMMARY_FILE

# Levels the PR comment lists: what a reviewer must look at. The job summary lists all.
NOTABLE = frozenset({"slower", "faster", "partial", "error"})


@dataclass(frozen=True)
class LoadLine:
    test: str
    concurrency: int
    verdict: str
    throughput_change: float | None
    reference_p99: float | None  # seconds
    patched_p99: float | None


def read_load_lines(out: Path) -> tuple[LoadLine, ...]:
    """Every level of summary.json `load`; () when there is none or it cannot be read (the
    status line says what is wrong with summary.json)."""
    try:
        data = json.loads((out / SUMMARY_FILE).read_text(encoding="utf-8"))
        levels = data.get("load") or []
        return tuple(_line(level) for level in levels)
    except (OSError, ValueError, RecursionError, AttributeError, TypeError, KeyError):
        return ()


def _line(level: dict[str, Any]) -> LoadLine:
    return LoadLine(
        test=str(level["test"]),
        concurrency=int(level["concurrency"]),
        verdict=str(level["verdict"]),
        throughput_change=_number(level.get("throughput_change")),
        reference_p99=_number((level.get("reference") or {}).get("p99")),
        patched_p99=_number((level.get("patched") or {}).get("p99")),
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def load_table(lines: Sequence[LoadLine], cell: Any, notable_only: bool) -> list[str]:
    """Markdown rows; `cell` makes user text (test names) safe in a table cell."""
    shown = [x for x in lines if x.verdict in NOTABLE] if notable_only else list(lines)
    if not shown:
        return []
    table = ["| Load test | Clients | Verdict | Throughput | p99 (reference → patched) |"]
    table.append("|---|---|---|---|---|")
    for x in shown:
        change = "—" if x.throughput_change is None else f"{x.throughput_change:+.1%}"
        table.append(
            f"| {cell(x.test)} | {x.concurrency} | {x.verdict} | {change} | "
            f"{_ms(x.reference_p99)} → {_ms(x.patched_p99)} |"
        )
    return [*table, ""]


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1000:.1f} ms"


LOAD_LEVEL_COLUMNS = (
    "run_id", "start_time", "test", "concurrency", "verdict", "reason", "reference_qps",
    "patched_qps", "reference_p99", "patched_p99", "diff", "threshold", "throughput_change",
)  # fmt: skip


def history_rows(out: Path, run_id: str, start: datetime) -> tuple[tuple[Any, ...], ...]:
    """The rows of the history table load_levels (ci/history/schema.sql)."""
    try:
        data = json.loads((out / SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return ()
    levels = data.get("load") if isinstance(data, dict) else None
    if not isinstance(levels, list):
        return ()
    return tuple(_history_row(run_id, start, x) for x in levels if isinstance(x, dict))


def _history_row(run_id: str, start: datetime, level: dict[str, Any]) -> tuple[Any, ...]:
    reference, patched = level.get("reference") or {}, level.get("patched") or {}
    return (
        run_id, start, str(level.get("test", "")), int(level.get("concurrency", 0)),
        str(level.get("verdict", "")), str(level.get("reason", "")),
        _number(reference.get("qps")), _number(patched.get("qps")),
        _number(reference.get("p99")), _number(patched.get("p99")),
        _number(level.get("diff")), _number(level.get("threshold")),
        _number(level.get("throughput_change")),
    )  # fmt: skip
