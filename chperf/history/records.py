"""A run directory turned into the rows of the history tables (schema.sql).

Inputs: run.json, queries.tsv, runs.tsv, query_log.tsv (chperf.artifacts) and, when compare
has run, verdicts.tsv, metrics.tsv and summary.json (compare/outputs.py; read by column
name, so columns compare adds later do not break the upload). Without compare's outputs the
run's times are uploaded and the verdict tables stay empty for it; a later upload after
`chperf compare` fills them in (each table is checked for the run id separately).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chperf.artifacts import (
    PATCHED,
    QUERIES,
    QUERY_LOG,
    REFERENCE,
    RUNS,
    read_manifest,
    read_table,
    unescape,
)
from chperf.errors import ChperfError

VERDICTS_FILE = "verdicts.tsv"
METRICS_FILE = "metrics.tsv"
SUMMARY_FILE = "summary.json"
VERDICT_COLUMNS = ("test", "query_index", "verdict", "reference_median", "patched_median")
METRIC_COLUMNS = ("test", "query_index", "metric", "reference_median", "patched_median")

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
    summary: dict[str, Any],
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
        str(summary.get("status") or ""),
        str(summary.get("message") or ""),
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
    rows = []
    for r in read_named_tsv(out / VERDICTS_FILE, VERDICT_COLUMNS):
        key = (_text(r, "test"), int(_text(r, "query_index")))
        rows.append(
            (run_id, start, key[0], key[1], queries.get(key, ""), _text(r, "verdict"),
             _text(r, "reason"), *_numbers(r, "reference_median", "patched_median", "diff",
             "threshold"))
        )  # fmt: skip
    return tuple(rows)


def _time_rows(out: Path, run_id: str, start: datetime) -> tuple[Row, ...]:
    server_times = {(r.server, r.query_id): r.server_time for r in _rows(out, QUERY_LOG)}
    return tuple(
        (run_id, start, r.test, r.query_index, r.server, r.run, r.query_id, r.client_time,
         server_times.get((r.server, r.query_id)))
        for r in _rows(out, RUNS)
    )  # fmt: skip


def _metric_rows(out: Path, run_id: str, start: datetime) -> tuple[Row, ...]:
    return tuple(
        (run_id, start, _text(r, "test"), int(_text(r, "query_index")), _text(r, "metric"),
         *_numbers(r, "reference_median", "patched_median", "diff", "threshold"))
        for r in read_named_tsv(out / METRICS_FILE, METRIC_COLUMNS)
    )  # fmt: skip


def _rows(out: Path, table: Any) -> tuple[Any, ...]:
    contents = read_table(out, table)
    if contents.problems and not contents.missing:
        raise ChperfError(
            f"{out / table.file}: cannot be uploaded: {contents.problems[0]}",
            hint="upload an intact run directory; the history keeps only complete data",
        )
    return contents.rows


def read_named_tsv(path: Path, required: Sequence[str]) -> list[dict[str, str | None]]:
    """A TabSeparatedWithNames file as dicts by column name; [] when the file is missing."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")
    header = lines[0].split("\t")
    missing = [c for c in required if c not in header]
    if missing:
        raise ChperfError(f"{path}:1: missing columns {', '.join(missing)}")
    rows: list[dict[str, str | None]] = []
    for number, line in enumerate(lines[1:], start=2):
        if not line:
            continue
        values = line.split("\t")
        if len(values) != len(header):
            raise ChperfError(f"{path}:{number}: {len(values)} columns, expected {len(header)}")
        pairs = zip(header, values, strict=True)
        rows.append({c: None if v == "\\N" else unescape(v) for c, v in pairs})
    return rows


def _runs_per_side(runs: object) -> int:
    """The fixed run count; 0 when the runner chose it per query (options.runs "adaptive")."""
    return runs if isinstance(runs, int) else 0


def _text(row: Mapping[str, str | None], column: str) -> str:
    return row.get(column) or ""


def _numbers(row: Mapping[str, str | None], *columns: str) -> tuple[float | None, ...]:
    values: list[float | None] = []
    for c in columns:
        text = row.get(c)
        value = float(text) if text not in (None, "") else None
        values.append(value if value is not None and math.isfinite(value) else None)
    return tuple(values)


def _summary(out: Path) -> dict[str, Any]:
    path = out / SUMMARY_FILE
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ChperfError(f"{path}: cannot read: {e}") from e
    return data if isinstance(data, dict) else {}


def _timestamp(value: object, default: datetime) -> datetime:
    if not isinstance(value, str) or not value:
        return default
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return default
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
