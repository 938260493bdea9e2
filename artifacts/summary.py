"""summary.json: the check's status, the count per verdict and every query's figures. Written
atomically by compare; the report, ci/ and the history upload read it through `read_summary`.

Format history (bump SUMMARY_SCHEMA_VERSION on incompatible changes):
  1 -- schema_version, status, message, counts, queries; then, additively: equivalence, fdr,
       calibration and per query p_value, ci_low, ci_high, equivalence, min_effect,
       calibration; method; noise; per query process_diffs; protocols
       (artifacts/protocols.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from artifacts.files import write_atomically
from artifacts.manifest import read_json

SUMMARY_SCHEMA_VERSION = 1
SUMMARY_FILE = "summary.json"


@dataclass(frozen=True)
class FdrSummary:
    """`fdr`: the Benjamini-Hochberg step over all queries."""

    q: float
    tests: int
    discoveries: int
    expected_false_at_most: float
    lone_discovery_level: float | None = None  # q/m
    smallest_p_value: float | None = None  # the smallest attainable at the run's run counts


@dataclass(frozen=True)
class NoiseSummary:
    """`noise`: the machine's noise during the run (compare/noise.py)."""

    pair_spread: float
    pairs: int
    queries: int
    median_threshold: float | None


@dataclass(frozen=True)
class CalibrationSummary:
    file: str
    calibrated: int
    not_calibrated: int


@dataclass(frozen=True)
class SummaryQuery:
    test: str
    query_index: int
    verdict: str
    reference_median: float | None
    patched_median: float | None
    threshold: float | None
    diff: float | None = None  # the method's estimate of the change, the headline number
    ci_low: float | None = None  # its interval, as ratios patched / reference
    ci_high: float | None = None
    ci_level: float | None = None


@dataclass(frozen=True)
class Summary:
    status: str  # success or failure
    message: str
    counts: tuple[tuple[str, int], ...]
    queries: tuple[SummaryQuery, ...] = ()
    fdr: FdrSummary | None = None  # None: no FDR control
    calibration: CalibrationSummary | None = None
    noise: NoiseSummary | None = None  # None: fewer than 7 pairs anywhere


@dataclass(frozen=True)
class SummaryFile:
    summary: Summary | None  # None when missing or unusable
    problems: tuple[str, ...]
    missing: bool


# One encoder for every query line: json.dumps with any non-default option builds a new one
# per call, which cost more than the encoding.
_ONE_LINE = json.JSONEncoder(allow_nan=False)


def summary_json(document: Mapping[str, Any]) -> str:
    """Indented, except each query, which is one line: readable, diffable, and written by
    json's C encoder (indenting all of 3,000 queries takes the slow pure-Python one)."""
    queries = document.get("queries")
    if not isinstance(queries, list):
        return json.dumps(document, indent=2, allow_nan=False) + "\n"
    head = json.dumps({**document, "queries": []}, indent=2, allow_nan=False)
    if not queries:
        return head + "\n"
    encode = _ONE_LINE.encode
    lines = ",\n".join("    " + encode(q) for q in queries)
    return head[: -len("[]\n}")] + "[\n" + lines + "\n  ]\n}\n"


def write_summary(out: Path, document: Mapping[str, Any]) -> Path:
    return write_atomically(out / SUMMARY_FILE, summary_json(document))


def read_summary(out: Path) -> SummaryFile:
    """Never raises: what cannot be read becomes a problem (the reader decides how bad)."""
    loaded = read_json(out / SUMMARY_FILE)
    if loaded.data is None:
        return SummaryFile(None, (loaded.problem,) if loaded.problem else (), loaded.missing)
    data, problems = loaded.data, []
    version = data.get("schema_version")
    if version != SUMMARY_SCHEMA_VERSION:
        problems.append(
            f"{SUMMARY_FILE}: schema_version {version!r}, this chperf reads "
            f"{SUMMARY_SCHEMA_VERSION}: rerun `chperf compare` with this chperf version"
        )
    status, message = data.get("status"), data.get("message")
    if not isinstance(status, str) or not isinstance(message, str):
        problems.append(f"{SUMMARY_FILE}: 'status' and 'message' must be strings")
        return SummaryFile(None, tuple(problems), False)
    raw_counts = data.get("counts")
    counts: list[tuple[str, int]] = []
    if isinstance(raw_counts, dict):
        counts = [(str(k), v) for k, v in raw_counts.items() if isinstance(v, int)]
    else:
        problems.append(f"{SUMMARY_FILE}: 'counts' is missing or not an object")
    summary = Summary(
        status,
        message,
        tuple(counts),
        _queries(data, problems),
        _fdr(data),
        _calibration(data),
        _noise(data),
    )
    return SummaryFile(summary, tuple(problems), False)


def _queries(data: dict[str, Any], problems: list[str]) -> tuple[SummaryQuery, ...]:
    raw = data.get("queries")
    if not isinstance(raw, list):
        return ()
    indices = [_query_index(q) for q in raw]
    for number, index in enumerate(indices):
        if index is None:
            problems.append(f"{SUMMARY_FILE}: queries[{number}] has no integer query_index")
    return tuple(
        SummaryQuery(
            test=str(q.get("test", "")),
            query_index=index,
            verdict=str(q.get("verdict", "")),
            reference_median=_optional_float(q.get("reference_median")),
            patched_median=_optional_float(q.get("patched_median")),
            threshold=_optional_float(q.get("threshold")),
            diff=_optional_float(q.get("diff")),
            ci_low=_optional_float(q.get("ci_low")),
            ci_high=_optional_float(q.get("ci_high")),
            ci_level=_optional_float(q.get("ci_level")),
        )
        for q, index in zip(raw, indices, strict=True)
        if index is not None  # a dict with an integer query_index
    )


def _query_index(query: Any) -> int | None:
    """A query's query_index as int() reads it; None when it cannot."""
    if not isinstance(query, dict):
        return None
    try:
        return int(query.get("query_index", 0))
    except (TypeError, ValueError, OverflowError):
        return None


def _fdr(data: dict[str, Any]) -> FdrSummary | None:
    raw = data.get("fdr")
    if not isinstance(raw, dict):
        return None
    try:
        return FdrSummary(
            float(raw["q"]),
            int(raw["tests"]),
            int(raw["discoveries"]),
            float(raw["expected_false_discoveries_at_most"]),
            _optional_float(raw.get("lone_discovery_level")),
            _optional_float(raw.get("smallest_p_value")),
        )
    except (KeyError, TypeError, ValueError, OverflowError):  # OverflowError: int(inf)
        return None


def _optional_float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _calibration(data: dict[str, Any]) -> CalibrationSummary | None:
    raw = data.get("calibration")
    if not isinstance(raw, dict):
        return None
    try:
        return CalibrationSummary(
            str(raw["file"]), int(raw["calibrated"]), int(raw["not_calibrated"])
        )
    except (KeyError, TypeError, ValueError, OverflowError):  # OverflowError: int(inf)
        return None


def _noise(data: dict[str, Any]) -> NoiseSummary | None:
    raw = data.get("noise")
    if not isinstance(raw, dict):
        return None
    spread = _optional_float(raw.get("pair_spread"))
    pairs, queries = raw.get("pairs"), raw.get("queries")
    if spread is None or not isinstance(pairs, int) or not isinstance(queries, int):
        return None
    return NoiseSummary(spread, pairs, queries, _optional_float(raw.get("median_threshold")))
