"""Protocol timings (docs/protocols.md): the runner's protocol_runs.tsv and
protocol_problems.tsv, and the `protocols` list compare writes into summary.json.

Format history:
  1 -- protocol_runs.tsv, protocol_problems.tsv and summary.json `protocols`, first version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from artifacts.manifest import read_json
from artifacts.tsv import Table
from artifacts.values import SECONDS

# The phases of one execution, in the order they happen (runner/protocol_clients.py).
CONNECT = "connect"
FIRST_BYTE = "first_byte"
TRANSFER = "transfer"
PHASES = (CONNECT, FIRST_BYTE, TRANSFER)

# protocol_problems.tsv kinds.
UNAVAILABLE = "unavailable"  # the interface did not answer the probe: nothing is measured
FAILED = "error"  # an execution failed: that side of the protocol stops
NOT_RUN = "not run"  # a budget ran out, or the run was interrupted, first


@dataclass(slots=True)  # as RunRow: read in bulk
class ProtocolRunRow:
    test: str
    query_index: int
    protocol: str  # native or http
    server: str  # reference or patched
    run: int
    connect_time: float = field(metadata=SECONDS)
    first_byte_time: float = field(metadata=SECONDS)  # from sending the query
    transfer_time: float = field(metadata=SECONDS)  # from sending the query to the end
    bytes: int  # received by the client's socket for the query; -1: unknown
    blocks: int  # native: data blocks with rows; http: 0
    process: int  # the server process set (runner/schedule.server_set)
    start_time: float  # wall clock, Unix seconds


@dataclass(frozen=True)
class ProtocolProblemRow:
    test: str
    query_index: int
    protocol: str
    server: str  # reference, patched or both
    kind: str  # unavailable, error or not run
    error_code: int  # ClickHouse's, 0 if none
    message: str


PROTOCOL_RUNS = Table("protocol_runs.tsv", ProtocolRunRow)
PROTOCOL_PROBLEMS = Table("protocol_problems.tsv", ProtocolProblemRow)

SUMMARY_KEY = "protocols"  # in summary.json


@dataclass(frozen=True)
class ProtocolVerdict:
    """One (test, query, protocol, phase) of summary.json `protocols`."""

    test: str
    query_index: int
    protocol: str
    phase: str
    verdict: str
    reason: str
    fails_check: bool
    runs: int  # pairs compared (0 when not measured on both sides)
    reference_median: float | None  # seconds
    patched_median: float | None
    diff: float | None  # D as a fraction
    threshold: float | None  # T as a fraction
    p_value: float | None
    ci_low: float | None  # interval of the ratio patched / reference
    ci_high: float | None
    reference_bytes: int | None  # median bytes a run received
    patched_bytes: int | None
    reference_blocks: int | None  # median data blocks (native)
    patched_blocks: int | None

    def as_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class ProtocolSummary:
    verdicts: tuple[ProtocolVerdict, ...]
    problems: tuple[str, ...]


_TEXT = ("test", "protocol", "phase", "verdict", "reason")
_OPTIONAL_FLOATS = (
    "reference_median",
    "patched_median",
    "diff",
    "threshold",
    "p_value",
    "ci_low",
    "ci_high",
)
_OPTIONAL_INTS = ("reference_bytes", "patched_bytes", "reference_blocks", "patched_blocks")


def read_protocol_summary(out: Path, file: str = "summary.json") -> ProtocolSummary:
    """summary.json `protocols`, never raising: what cannot be read is a problem."""
    loaded = read_json(out / file)
    if loaded.data is None:
        return ProtocolSummary((), (loaded.problem,) if loaded.problem else ())
    raw = loaded.data.get(SUMMARY_KEY)
    if raw is None:
        return ProtocolSummary((), ())
    if not isinstance(raw, list):
        return ProtocolSummary((), (f"{file}: '{SUMMARY_KEY}' is not a list",))
    verdicts, problems = [], []
    for number, item in enumerate(raw):
        parsed = _verdict(item)
        if parsed is None:
            problems.append(f"{file}: {SUMMARY_KEY}[{number}] is malformed")
        else:
            verdicts.append(parsed)
    return ProtocolSummary(tuple(verdicts), tuple(problems))


def _verdict(item: Any) -> ProtocolVerdict | None:
    if not isinstance(item, dict):
        return None
    if not all(isinstance(item.get(k), str) for k in _TEXT):
        return None
    index, runs, fails = item.get("query_index"), item.get("runs"), item.get("fails_check")
    if not isinstance(index, int) or not isinstance(runs, int) or not isinstance(fails, bool):
        return None
    if not all(item.get(k) is None or _is_number(item.get(k)) for k in _OPTIONAL_FLOATS):
        return None
    if not all(item.get(k) is None or _is_int(item.get(k)) for k in _OPTIONAL_INTS):
        return None

    def number(key: str) -> float | None:
        value = item.get(key)
        return None if value is None else float(value)

    def count(key: str) -> int | None:
        value = item.get(key)
        return value if isinstance(value, int) else None

    return ProtocolVerdict(
        test=item["test"],
        query_index=index,
        protocol=item["protocol"],
        phase=item["phase"],
        verdict=item["verdict"],
        reason=item["reason"],
        fails_check=fails,
        runs=runs,
        reference_median=number("reference_median"),
        patched_median=number("patched_median"),
        diff=number("diff"),
        threshold=number("threshold"),
        p_value=number("p_value"),
        ci_low=number("ci_low"),
        ci_high=number("ci_high"),
        reference_bytes=count("reference_bytes"),
        patched_bytes=count("patched_bytes"),
        reference_blocks=count("reference_blocks"),
        patched_blocks=count("patched_blocks"),
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    """A JSON number float() takes: not a bool, not an integer beyond a double's range."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        float(value)
    except OverflowError:
        return False
    return True
