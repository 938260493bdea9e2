"""The report's load section (docs/load.md): per load test, throughput and latency against
concurrency for both sides as small inline SVG charts, and a row per level with both sides'
figures, the change and the verdict; from summary.json `load`. Pure but for reading that
file. Test names are escaped here (SVG) and by the template's autoescape (table)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from artifacts.summary import SUMMARY_FILE
from report import display

CHART_WIDTH = 300
CHART_HEIGHT = 150
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 70, 10, 24
SIDES = ("reference", "patched")


@dataclass(frozen=True)
class LoadLevelView:
    concurrency: int
    reference: str  # "123.4 q/s, p50 12.0 ms, p99 40.1 ms"
    patched: str
    change: str  # throughput change, "-17.4%"
    threshold: str
    verdict: str
    reason: str
    harness: str  # chperf's own CPU, both sides: "0.06 / 0.06 cores"


@dataclass(frozen=True)
class LoadTestView:
    test: str
    kind: str  # select or insert
    levels: tuple[LoadLevelView, ...]
    throughput_chart: Markup
    latency_chart: Markup


@dataclass(frozen=True)
class LoadSection:
    tests: tuple[LoadTestView, ...]
    problems: tuple[str, ...]

    @property
    def levels(self) -> int:
        return sum(len(t.levels) for t in self.tests)


def load_section(out: Path) -> LoadSection | None:
    """None when the run has no load tests (the report then has no such section)."""
    try:
        data = json.loads((out / SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None  # the report says what is wrong with summary.json elsewhere
    levels = data.get("load") if isinstance(data, dict) else None
    if not levels:
        return None
    if not isinstance(levels, list) or not all(isinstance(x, dict) for x in levels):
        return LoadSection((), (f"{SUMMARY_FILE}: `load` is not a list of objects",))
    try:
        return LoadSection(tests_of(levels), ())
    except (KeyError, TypeError, ValueError) as e:
        return LoadSection((), (f"{SUMMARY_FILE}: `load` is damaged: {e!r}",))


def tests_of(levels: Sequence[Mapping[str, Any]]) -> tuple[LoadTestView, ...]:
    by_test: dict[str, list[Mapping[str, Any]]] = {}
    for level in levels:
        by_test.setdefault(str(level["test"]), []).append(level)
    return tuple(
        _test(name, sorted(ls, key=lambda x: int(x["concurrency"]))) for name, ls in by_test.items()
    )


def _test(name: str, levels: Sequence[Mapping[str, Any]]) -> LoadTestView:
    insert = levels[0].get("kind") == "insert"
    throughput = "rows_per_second_per_client" if insert else "qps"
    unit = "rows/s a client" if insert else "queries/s"
    return LoadTestView(
        test=name,
        kind="insert" if insert else "select",
        levels=tuple(_level(level, insert) for level in levels),
        throughput_chart=chart(levels, lambda s: s.get(throughput), f"{name}: {unit}", unit),
        latency_chart=chart(levels, lambda s: _ms(s.get("p99")), f"{name}: p99 latency", "p99 ms"),
    )


def _ms(seconds: Any) -> float | None:
    return None if seconds is None else float(seconds) * 1000


def _level(level: Mapping[str, Any], insert: bool) -> LoadLevelView:
    harness = [_number(level.get(side) or {}, "harness_cpu") for side in SIDES]
    return LoadLevelView(
        concurrency=int(level["concurrency"]),
        reference=_figures(level.get("reference"), insert),
        patched=_figures(level.get("patched"), insert),
        change=display.percent(level.get("throughput_change")),
        threshold=display.percent(level.get("threshold"), signed=False),
        verdict=str(level.get("verdict", "")),
        reason=str(level.get("reason", "")),
        harness=" / ".join(display.MISSING if h is None else f"{h:.2f}" for h in harness)
        + " cores",
    )


def _number(figures: Mapping[str, Any], key: str) -> float | None:
    value = figures.get(key)
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _figures(figures: Any, insert: bool) -> str:
    if not isinstance(figures, dict):
        return display.MISSING
    if insert:
        rows = _number(figures, "rows_per_second_per_client") or 0.0
        mb = (_number(figures, "bytes_per_second_per_client") or 0.0) / 1e6
        head = f"{rows:,.0f} rows/s, {mb:.1f} MB/s a client"
    else:
        head = f"{_number(figures, 'qps') or 0.0:.1f} q/s"
    p50, p99 = _ms(figures.get("p50")), _ms(figures.get("p99"))
    latency = f"p50 {p50:.1f} ms, p99 {p99:.1f} ms" if p50 is not None and p99 is not None else ""
    return ", ".join(x for x in (head, latency) if x)


def chart(
    levels: Sequence[Mapping[str, Any]],
    value: Callable[[Mapping[str, Any]], Any],
    label: str,
    unit: str,
) -> Markup:
    """One line per side over the concurrency levels (evenly spaced), from 0 to the maximum."""
    xs = [int(level["concurrency"]) for level in levels]
    series = {side: [_finite(value(level.get(side) or {})) for level in levels] for side in SIDES}
    top = max([v for values in series.values() for v in values if v is not None], default=0.0)
    top = top * 1.1 or 1.0
    plot_w, plot_h = CHART_WIDTH - _LEFT - _RIGHT, CHART_HEIGHT - _TOP - _BOTTOM
    step = plot_w / max(len(xs) - 1, 1)

    def point(i: int, v: float) -> str:
        return f"{_LEFT + i * step:.1f},{_TOP + plot_h * (1 - v / top):.1f}"

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{CHART_WIDTH}" height="{CHART_HEIGHT}" '
        f'viewBox="0 0 {CHART_WIDTH} {CHART_HEIGHT}" role="img" aria-label="{escape(label)}">',
        f'<path class="axis" d="M{_LEFT} {_TOP}V{_TOP + plot_h}H{_LEFT + plot_w}"/>',
        f'<text class="axis" x="{_LEFT - 4}" y="{_TOP + 8}" text-anchor="end">{top:.3g}</text>',
        f'<text class="axis" x="{_LEFT - 4}" y="{_TOP + plot_h}" text-anchor="end">0</text>',
        f'<text class="axis" x="4" y="{_TOP + plot_h / 2:.0f}">{escape(unit)}</text>',
    ]
    for i, x in enumerate(xs):
        parts.append(
            f'<text class="axis" x="{_LEFT + i * step:.1f}" y="{CHART_HEIGHT - 6}" '
            f'text-anchor="middle">{x}</text>'
        )
    for row, (side, values) in enumerate(series.items()):
        points = " ".join(point(i, v) for i, v in enumerate(values) if v is not None)
        parts.append(f'<polyline class="load-side {side}" points="{points}"/>')
        parts.append(
            f'<text class="key-{side}" x="{CHART_WIDTH - _RIGHT + 6}" '
            f'y="{_TOP + 12 + 14 * row}">{side}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def _finite(value: Any) -> float | None:
    if isinstance(value, int | float) and math.isfinite(value) and value >= 0:
        return float(value)
    return None
