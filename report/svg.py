"""Inline SVG charts of the main page (per-test changes, the machine over the run), built as
text from numbers; user text (test names) is escaped. The detail pages' run plot is in
runplot.py. Colours live in the report's CSS (classes `up`, `down`, `servers`, ...)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from markupsafe import Markup, escape

from report import display

_MARGIN_LEFT = 58
_MARGIN_RIGHT = 8
_MARGIN_TOP = 8
_MARGIN_BOTTOM = 22

BAR_ROW_HEIGHT = 16
BAR_LABEL_WIDTH = 260
BAR_WIDTH = 320
BAR_VALUE_WIDTH = 70
# The bar chart's scale covers at least ±10% so that tiny changes do not look huge.
MIN_BAR_SCALE = 0.10
MAX_LABEL_CHARS = 40


def _open(width: int, height: int, label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}">'
    )


def _axes(plot_w: int, plot_h: int) -> str:
    bottom = _MARGIN_TOP + plot_h
    return (
        f'<path class="axis" d="M{_MARGIN_LEFT} {_MARGIN_TOP}V{bottom}H{_MARGIN_LEFT + plot_w}"/>'
    )


@dataclass(frozen=True)
class Bar:
    label: str  # the test name (user-controlled, escaped here)
    change: float  # geometric-mean ratio - 1
    href: str


def change_bars(bars: Sequence[Bar]) -> Markup | None:
    """Horizontal bars of the per-test geometric-mean change, centred on zero."""
    if not bars:
        return None
    scale = max([MIN_BAR_SCALE, *(abs(b.change) for b in bars if math.isfinite(b.change))])
    width = BAR_LABEL_WIDTH + BAR_WIDTH + BAR_VALUE_WIDTH
    height = BAR_ROW_HEIGHT * len(bars) + 20
    centre = BAR_LABEL_WIDTH + BAR_WIDTH / 2
    parts = [_open(width, height, "geometric-mean change per test")]
    parts.append(
        f'<line class="axis" x1="{centre:.0f}" y1="0" x2="{centre:.0f}" y2="{height - 16}"/>'
        f'<text class="axis" x="{BAR_LABEL_WIDTH}" y="{height - 4}">'
        f"{escape(display.percent(-scale))} (faster)</text>"
        f'<text class="axis" x="{BAR_LABEL_WIDTH + BAR_WIDTH}" y="{height - 4}" '
        f'text-anchor="end">{escape(display.percent(scale))} (slower)</text>'
    )
    for row, bar in enumerate(bars):
        parts.append(_bar(bar, row, scale, centre))
    parts.append("</svg>")
    return Markup("".join(parts))


def _bar(bar: Bar, row: int, scale: float, centre: float) -> str:
    top = row * BAR_ROW_HEIGHT
    text_y = top + BAR_ROW_HEIGHT - 4
    change = bar.change if math.isfinite(bar.change) else 0.0
    length = abs(change) / scale * (BAR_WIDTH / 2)
    left = centre - length if change < 0 else centre
    kind = "down" if change < 0 else "up"
    label = display.shorten(bar.label, MAX_LABEL_CHARS)
    return (
        f'<a href="{escape(bar.href)}"><text x="{BAR_LABEL_WIDTH - 6}" y="{text_y}" '
        f'text-anchor="end">{escape(label)}</text></a>'
        f'<rect class="{kind}" x="{left:.1f}" y="{top + 3}" width="{max(length, 0.5):.1f}" '
        f'height="{BAR_ROW_HEIGHT - 6}"><title>{escape(bar.label)}: '
        f"{escape(display.percent(change))}</title></rect>"
        f'<text class="axis" x="{BAR_LABEL_WIDTH + BAR_WIDTH + 4}" y="{text_y}">'
        f"{escape(display.percent(change))}</text>"
    )


TIMELINE_WIDTH = 720
TIMELINE_HEIGHT = 150
# At most this many points a line: a long run's samples are pooled (maximum per bucket), so
# a short burst of interference still shows.
TIMELINE_POINTS = 600
# (the sample's field, the CSS class of its line, the legend)
TIMELINE_LINES = (
    ("servers_cpu", "servers", "our servers"),
    ("foreign_cpu", "foreign", "everything else"),
    ("steal_cores", "steal", "steal"),
)


class Moment(NamedTuple):
    """One monitor sample, in cores' worth of CPU (steal converted with the CPU count); a
    NamedTuple: a run of a few hours has ~50k."""

    time: float
    servers_cpu: float
    foreign_cpu: float
    steal_cores: float


def machine_timeline(
    moments: Sequence[Moment],
    runs: Sequence[float],
    cpus: int,
    label: str = "CPU of the machine over the run",
) -> Markup | None:
    """The machine's CPU over the run (or a part of it): our servers, everything else and
    steal, in cores, with a tick under the time axis at every measured run's start."""
    if len(moments) < 2:
        return None
    start, end = moments[0].time, moments[-1].time
    span = max(end - start, 1e-6)
    plot_w = TIMELINE_WIDTH - _MARGIN_LEFT - _MARGIN_RIGHT
    plot_h = TIMELINE_HEIGHT - _MARGIN_TOP - _MARGIN_BOTTOM - 8
    top = max(float(cpus), 1.0)

    def x(t: float) -> float:
        return _MARGIN_LEFT + (t - start) / span * plot_w

    def y(cores: float) -> float:
        return _MARGIN_TOP + (top - min(max(cores, 0.0), top)) / top * plot_h

    parts = [_open(TIMELINE_WIDTH, TIMELINE_HEIGHT, label)]
    parts.append(_axes(plot_w, plot_h))
    parts.append(
        f'<text class="axis" x="{_MARGIN_LEFT - 4}" y="{_MARGIN_TOP + 8}" text-anchor="end">'
        f'{top:g} cores</text><text class="axis" x="{_MARGIN_LEFT - 4}" '
        f'y="{_MARGIN_TOP + plot_h}" text-anchor="end">0</text>'
        f'<text class="axis" x="{_MARGIN_LEFT + plot_w / 2:.0f}" y="{TIMELINE_HEIGHT - 4}" '
        f'text-anchor="middle">{escape(display.duration(span))} of measurement; ticks: runs'
        "</text>"
    )
    pooled = _pool(moments)
    for field, css, _ in TIMELINE_LINES:
        points = " ".join(f"{x(m.time):.1f},{y(getattr(m, field)):.1f}" for m in pooled)
        parts.append(f'<polyline class="load {css}" points="{points}"/>')
    # One tick per pixel column however many runs fell there: 90k runs drew 1 MB of ticks.
    columns = sorted({round(x(t)) for t in runs if start <= t <= end})
    ticks = "".join(f"M{column} {_MARGIN_TOP + plot_h + 2}v5" for column in columns)
    parts.append(f'<path class="axis" d="{ticks}"/>')
    parts.append("</svg>")
    return Markup("".join(parts))


def _pool(moments: Sequence[Moment]) -> list[Moment]:
    if len(moments) <= TIMELINE_POINTS:
        return list(moments)
    size = math.ceil(len(moments) / TIMELINE_POINTS)
    return [
        Moment(
            time=chunk[-1].time,
            servers_cpu=max(m.servers_cpu for m in chunk),
            foreign_cpu=max(m.foreign_cpu for m in chunk),
            steal_cores=max(m.steal_cores for m in chunk),
        )
        for chunk in (moments[i : i + size] for i in range(0, len(moments), size))
    ]
