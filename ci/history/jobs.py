"""The two things people do with the history database: upload a run, show a test's past."""

from __future__ import annotations

from ci.history.records import UploadBatch
from ci.history.show import DEFAULT_LIMIT, history_lines, render_table
from ci.history.store import HistoryStore
from ci.history.target import HistoryTarget


def upload_run(batch: UploadBatch, target: HistoryTarget) -> list[str]:
    """Store the batch (each table skipped when this run is already there); what happened,
    one line per table and a last line naming the database."""
    store = HistoryStore(target)
    try:
        store.ensure_schema()
        uploads = store.upload(batch)
    finally:
        store.close()
    lines = [
        f"history {u.table}: "
        + ("already uploaded, skipped" if u.skipped else f"{u.rows} rows inserted")
        for u in uploads
    ]
    return [*lines, f"run {batch.run_id} is in the {target.describe()}"]


def show_history(
    target: HistoryTarget, test: str, query_index: int | None, limit: int | None
) -> str:
    store = HistoryStore(target)
    every = query_index is None
    params = {"test": test, "every": int(every), "query_index": query_index or 0}
    try:
        store.ensure_schema()
        times = store.fetch("select_times.sql", params)
        verdicts = store.fetch("select_verdicts.sql", params)
        ids = tuple(sorted({str(r[0]) for r in times})) or ("",)
        runs = store.fetch("select_runs.sql", {"ids": ids})
    finally:
        store.close()
    return render_table(test, history_lines(times, verdicts, runs, limit or DEFAULT_LIMIT))
