"""A run directory turned into the rows of the history tables (schema.sql). Each table is
checked for the run id separately, so an upload after `chperf compare` adds the verdicts."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from artifacts.errors import ChperfError
from artifacts.manifest import read_manifest
from artifacts.summary import SUMMARY_FILE, Summary, read_summary
from artifacts.tables import PATCHED, QUERIES, QUERY_LOG, REFERENCE, RUNS
from artifacts.tsv import read_table
from artifacts.verdicts import read_metrics, read_verdicts
from ci.loadlines import LOAD_LEVEL_COLUMNS, history_rows

INTACT = "upload an intact run directory; the history keeps only complete data"

Row = tuple[Any, ...]


@dataclass(frozen=True)
class UploadBatch:
    """Rows per table, in the column order of schema.sql."""

    run_id: str
    tables: tuple[tuple[str, tuple[str, ...], tuple[Row, ...]], ...]  # (table, columns, rows)


def build_batch(out: Path, labels: Mapping[str, str], now: datetime) -> UploadBatch:
    manifest = read_manifest(out)
    run_id = str(manifest.get("run_id") or "")
    if not run_id:
        raise ChperfError(f"{out / 'run.json'}: has no run_id")
    start = _timestamp(manifest.get("start_time"), now)
    summary = _summary(out)
    queries = {(q.test, q.query_index): q.query for q in _rows(out, QUERIES)}
    return UploadBatch(
        run_id,
        (
            ("runs", RUN_COLUMNS, (_run_row(manifest, summary, labels, start, now),)),
            ("verdicts", VERDICT_TABLE_COLUMNS, _verdict_rows(out, run_id, start, queries)),
            ("run_times", TIME_COLUMNS, _time_rows(out, run_id, start)),
            ("metrics", METRIC_TABLE_COLUMNS, _metric_rows(out, run_id, start)),
            ("load_levels", LOAD_LEVEL_COLUMNS, history_rows(out, run_id, start)),
        ),
    )


RUN_COLUMNS = (
    "run_id", "upload_time", "start_time", "end_time", "status", "check_status",
    "check_message", "chperf_version", "reference_version", "reference_sha256",
    "patched_version", "patched_sha256", "runs_per_side", "shards", "label_keys",
    "label_values", "manifest",
)  # fmt: skip
VERDICT_TABLE_COLUMNS = (
    "run_id", "start_time", "test", "query_index", "query", "verdict", "reason",
    "reference_median", "patched_median", "diff", "threshold",
)  # fmt: skip
TIME_COLUMNS = (
    "run_id", "start_time", "test", "query_index", "server", "run", "query_id",
    "client_time", "server_time",
)  # fmt: skip
METRIC_TABLE_COLUMNS = (
    "run_id", "start_time", "test", "query_index", "metric", "reference_median",
    "patched_median", "diff", "threshold",
)  # fmt: skip


def _run_row(
    manifest: dict[str, Any],
    summary: Summary | None,
    labels: Mapping[str, str],
    start: datetime,
    now: datetime,
) -> Row:
    servers = manifest.get("servers") or {}
    reference, patched = servers.get(REFERENCE) or {}, servers.get(PATCHED) or {}
    keys = sorted(labels)
    return (
        str(manifest["run_id"]),
        now,
        start,
        _timestamp(manifest.get("end_time"), start),
        str(manifest.get("status") or ""),
        summary.status if summary else "",
        summary.message if summary else "",
        str(manifest.get("chperf_version") or ""),
        str(reference.get("version") or ""),
        str(reference.get("sha256") or ""),
        str(patched.get("version") or ""),
        str(patched.get("sha256") or ""),
        _runs_per_side((manifest.get("options") or {}).get("runs")),
        len(manifest.get("shards") or []) or 1,
        keys,
        [labels[k] for k in keys],
        json.dumps(manifest, sort_keys=True),
    )


def _verdict_rows(
    out: Path, run_id: str, start: datetime, queries: Mapping[tuple[str, int], str]
) -> tuple[Row, ...]:
    return tuple(
        (run_id, start, v.test, v.query_index, queries.get((v.test, v.query_index), ""),
         v.verdict, v.reason, *_finite(v.reference_median, v.patched_median, v.diff,
         v.threshold))
        for v in read_verdicts(out).strict(out, INTACT)
    )  # fmt: skip


def _time_rows(out: Path, run_id: str, start: datetime) -> tuple[Row, ...]:
    server_times = {(r.server, r.query_id): r.server_time for r in _rows(out, QUERY_LOG)}
    return tuple(
        (run_id, start, r.test, r.query_index, r.server, r.run, r.query_id, r.client_time,
         server_times.get((r.server, r.query_id)))
        for r in _rows(out, RUNS)
    )  # fmt: skip


def _metric_rows(out: Path, run_id: str, start: datetime) -> tuple[Row, ...]:
    return tuple(
        (run_id, start, m.test, m.query_index, m.metric,
         *_finite(m.reference_median, m.patched_median, m.diff, m.threshold))
        for m in read_metrics(out).strict(out, INTACT)
    )  # fmt: skip


def _rows(out: Path, table: Any) -> tuple[Any, ...]:
    contents = read_table(out, table)
    if contents.problems and not contents.missing:
        raise ChperfError(
            f"{out / table.file}: cannot be uploaded: {contents.problems[0]}", hint=INTACT
        )
    return contents.rows


def _runs_per_side(runs: object) -> int:
    """The fixed run count; 0 when the runner chose it per query (options.runs "adaptive")."""
    return runs if isinstance(runs, int) else 0


def _finite(*values: float | None) -> tuple[float | None, ...]:
    return tuple(v if v is not None and math.isfinite(v) else None for v in values)


def _summary(out: Path) -> Summary | None:
    found = read_summary(out)
    if found.problems and not found.missing:
        raise ChperfError(f"{out / SUMMARY_FILE}: {found.problems[0]}", hint=INTACT)
    return found.summary


def _timestamp(value: object, default: datetime) -> datetime:
    if not isinstance(value, str) or not value:
        return default
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return default
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
