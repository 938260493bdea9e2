"""calibration.tsv: per-query noise of an A/A run, read back by `--calibration FILE` (columns:
docs/formats.md "calibration.tsv"). Format history: 1 -- first version."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from artifacts.errors import ChperfError
from artifacts.files import write_atomically
from artifacts.tsv import escape, unescape

CALIBRATION_FILE = "calibration.tsv"

CALIBRATION_COLUMNS = (
    "test",
    "query_index",
    "query",
    "runs",
    "reference_median",
    "diff",
    "threshold",
    "p_value",
    "flagged",
    "flag_rate",
    "mde",
    "noise_floor",
)


@dataclass(frozen=True)
class CalibrationRow:
    test: str
    query_index: int
    query: str
    runs: int  # measured runs per side (the smaller side)
    reference_median: float  # seconds
    diff: float  # fractions, as in verdicts.tsv
    threshold: float
    p_value: float
    flagged: bool
    flag_rate: float
    mde: float
    noise_floor: float


def write_calibration(out: Path, rows: Iterable[CalibrationRow]) -> Path:
    lines = ["\t".join(CALIBRATION_COLUMNS) + "\n"]
    for r in rows:
        values: list[Any] = [
            escape(r.test), r.query_index, escape(r.query), r.runs, repr(r.reference_median),
            repr(r.diff), repr(r.threshold), repr(r.p_value), int(r.flagged), repr(r.flag_rate),
            repr(r.mde), repr(r.noise_floor),
        ]  # fmt: skip
        lines.append("\t".join(str(v) for v in values) + "\n")
    return write_atomically(out / CALIBRATION_FILE, "".join(lines))


def read_calibration(path: Path) -> dict[tuple[str, int], CalibrationRow]:
    """Rows by (test, query_index); a malformed file is a ChperfError naming file:line."""
    hint = "regenerate it with `chperf run --aa --out DIR` (DIR/calibration.tsv)"
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as e:
        raise ChperfError(f"calibration file {path}: cannot be read: {e}", hint=hint) from e
    header = tuple(lines[0].split("\t"))
    if header != CALIBRATION_COLUMNS:
        raise ChperfError(
            f"{path}:1: expected the columns {', '.join(CALIBRATION_COLUMNS)}; "
            f"found {', '.join(header)}",
            hint=hint,
        )
    if lines[-1] != "":
        raise ChperfError(f"{path}:{len(lines)}: truncated line (no end of line)", hint=hint)
    rows: dict[tuple[str, int], CalibrationRow] = {}
    for number, line in enumerate(lines[1:-1], start=2):
        row = _parse_row(path, number, line, hint)
        if (row.test, row.query_index) in rows:
            raise ChperfError(
                f"{path}:{number}: {row.test} query {row.query_index} is listed twice", hint=hint
            )
        rows[(row.test, row.query_index)] = row
    return rows


def _parse_row(path: Path, number: int, line: str, hint: str) -> CalibrationRow:
    fields = line.split("\t")
    if len(fields) != len(CALIBRATION_COLUMNS):
        raise ChperfError(
            f"{path}:{number}: expected {len(CALIBRATION_COLUMNS)} columns, found {len(fields)}",
            hint=hint,
        )
    try:
        number_fields = [float(f) for f in (*fields[4:8], *fields[9:12])]
        row = CalibrationRow(
            test=unescape(fields[0]),
            query_index=int(fields[1]),
            query=unescape(fields[2]),
            runs=int(fields[3]),
            reference_median=number_fields[0],
            diff=number_fields[1],
            threshold=number_fields[2],
            p_value=number_fields[3],
            flagged=_flag(fields[8]),
            flag_rate=number_fields[4],
            mde=number_fields[5],
            noise_floor=number_fields[6],
        )
    except ValueError as e:
        raise ChperfError(f"{path}:{number}: bad value: {e}", hint=hint) from e
    if not row.noise_floor >= 0:
        raise ChperfError(f"{path}:{number}: noise_floor {row.noise_floor} < 0", hint=hint)
    return row


def _flag(text: str) -> bool:
    if text not in ("0", "1"):
        raise ValueError(f"flagged must be 0 or 1, got {text!r}")
    return text == "1"
