"""The report's protocol timings section (docs/protocols.md): one row per test, query,
protocol and phase, both sides' medians, the change and the verdict, and the bytes and
blocks each side received; from summary.json `protocols`. Pure but for reading that file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from artifacts.protocols import ProtocolVerdict, read_protocol_summary
from report import display

PHASE_NAMES = {"connect": "connect", "first_byte": "first byte", "transfer": "full transfer"}
PROTOCOL_NAMES = {"native": "native (TCP)", "http": "HTTP"}


@dataclass(frozen=True)
class ProtocolRowView:
    test: str
    query: str  # "query 0"
    query_href: str  # the query's row in the all-queries table
    protocol: str
    phase: str
    first_of_group: bool  # the first phase of its (test, query, protocol): shows the names
    reference: str
    patched: str
    change: str
    ci: str
    threshold: str
    verdict: str
    reason: str
    fails_check: bool
    reference_bytes: str
    patched_bytes: str
    blocks: str  # "16 / 123" (native), "" (HTTP)
    runs: str


@dataclass(frozen=True)
class ProtocolSection:
    rows: tuple[ProtocolRowView, ...]
    problems: tuple[str, ...]  # summary.json `protocols` could not be read in part

    @property
    def failing(self) -> int:
        return sum(1 for r in self.rows if r.fails_check)


def protocol_section(out: Path) -> ProtocolSection | None:
    """None when the run timed no protocols (the report then has no such section)."""
    summary = read_protocol_summary(out)
    if not summary.verdicts and not summary.problems:
        return None
    return ProtocolSection(rows(summary.verdicts), summary.problems)


def rows(verdicts: Sequence[ProtocolVerdict]) -> tuple[ProtocolRowView, ...]:
    found = []
    previous: tuple[str, int, str] | None = None
    for v in verdicts:
        group = (v.test, v.query_index, v.protocol)
        found.append(_row(v, group != previous))
        previous = group
    return tuple(found)


def _row(v: ProtocolVerdict, first: bool) -> ProtocolRowView:
    return ProtocolRowView(
        test=v.test,
        query=f"query {v.query_index}",
        query_href=f"#{display.query_anchor(v.test, v.query_index)}",
        protocol=PROTOCOL_NAMES.get(v.protocol, v.protocol),
        phase=PHASE_NAMES.get(v.phase, v.phase),
        first_of_group=first,
        reference=display.duration(v.reference_median),
        patched=display.duration(v.patched_median),
        change=display.change(v.diff),
        ci=display.ratio_interval(v.ci_low, v.ci_high, 0.99 if v.ci_low is not None else None),
        threshold=display.percent(v.threshold, signed=False),
        verdict=v.verdict,
        reason=v.reason,
        fails_check=v.fails_check,
        reference_bytes=_bytes(v.reference_bytes),
        patched_bytes=_bytes(v.patched_bytes),
        blocks=_blocks(v),
        runs=str(v.runs),
    )


def _bytes(value: int | None) -> str:
    """21449454 -> '20.5 MiB'."""
    if value is None:
        return display.MISSING
    size = float(value)
    for unit in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def _blocks(v: ProtocolVerdict) -> str:
    if not v.reference_blocks and not v.patched_blocks:
        return ""
    return f"{display.count(v.reference_blocks)} / {display.count(v.patched_blocks)}"
