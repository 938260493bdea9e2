"""The loaded artifacts indexed by query, for the main page (view.py) and the detail pages
(details.py). Pure: no files, no processes."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from artifacts.tables import PATCHED, REFERENCE, WHOLE_TEST
from artifacts.verdicts import MetricRow, VerdictRow
from compare.interference import Interference
from compare.metrics import SERVER_TIME
from report import header
from report.inputs import Inputs
from report.model import FailureView

Key = tuple[str, int]
# Error messages (with server stack traces) are cut here; errors.tsv has them whole.
MAX_ERROR_CHARS = 2000
MAX_FAILURES_PER_QUERY = 4


@dataclass(frozen=True)
class QueryTables:
    query_text: dict[Key, str]
    query_names: dict[Key, str]  # tag="..." of the test file, where it has one
    verdicts: dict[Key, VerdictRow]
    runs: dict[tuple[str, int, str], list[tuple[int, float]]]  # (run, client time) by side
    spans: dict[Key, list[tuple[float, float]]]  # (start, end) of every timed run, wall clock
    server_medians: dict[tuple[str, int, str], float]  # metrics.tsv's server_time by side
    metrics: dict[Key, list[MetricRow]]
    failures: dict[Key, list[FailureView]]
    interference: dict[Key, Interference]


def index_inputs(inputs: Inputs) -> QueryTables:
    runs: dict[tuple[str, int, str], list[tuple[int, float]]] = defaultdict(list)
    spans: dict[Key, list[tuple[float, float]]] = defaultdict(list)
    for r in inputs.runs:
        runs[(r.test, r.query_index, r.server)].append((r.run, r.client_time))
        if r.start_time > 0:
            spans[(r.test, r.query_index)].append((r.start_time, r.start_time + r.client_time))
    for points in runs.values():
        points.sort()
    server_medians: dict[tuple[str, int, str], float] = {}
    metrics: dict[Key, list[MetricRow]] = defaultdict(list)
    for m in inputs.metrics:
        metrics[(m.test, m.query_index)].append(m)
        if m.metric == SERVER_TIME:
            for side, median in ((REFERENCE, m.reference_median), (PATCHED, m.patched_median)):
                if median is not None:
                    server_medians[(m.test, m.query_index, side)] = median
    failures: dict[Key, list[FailureView]] = defaultdict(list)
    for e in inputs.errors:
        if e.query_index != WHOLE_TEST and e.stage in header.QUERY_STAGES:
            failures[(e.test, e.query_index)].append(
                FailureView(e.server, e.stage, e.error_code, _cut(e.message))
            )
    return QueryTables(
        query_text={(q.test, q.query_index): q.query for q in inputs.queries},
        query_names={(q.test, q.query_index): q.name for q in inputs.queries if q.name},
        verdicts={(v.test, v.query_index): v for v in inputs.verdicts},
        runs=dict(runs),
        spans=dict(spans),
        server_medians=server_medians,
        metrics=dict(metrics),
        failures={k: _distinct(v) for k, v in failures.items()},
        interference=inputs.interference,
    )


def _cut(message: str) -> str:
    if len(message) <= MAX_ERROR_CHARS:
        return message
    return message[:MAX_ERROR_CHARS] + "… (cut here; errors.tsv has the whole message)"


def _distinct(failures: list[FailureView]) -> list[FailureView]:
    seen: dict[tuple[str, str, int, str], FailureView] = {}
    for f in failures:
        seen.setdefault((f.side, f.stage, f.error_code, f.message), f)
    return list(seen.values())[:MAX_FAILURES_PER_QUERY]
