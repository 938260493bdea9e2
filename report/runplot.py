"""The run plot of a query's detail page: the client time of every run of both sides in run
order, on axes with tick labels in s, ms or µs. Drift shows as a slope, two modes of timing as
two bands (and as two clusters in the strip on the right, each side's runs by time alone);
outliers are ringed, the runs the environment monitor saw disturbed are shaded, the medians
are dashed. Built as text from numbers; the only text from outside (the label) is escaped.
Colours live in the report's CSS (classes `reference`, `patched`, `outlier`, `disturbed`)."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

WIDTH = 760
HEIGHT = 280
LEFT = 72  # room for the time tick labels
STRIP = 56  # the distribution strip right of the plot
RIGHT = STRIP + 12
TOP = 12
BOTTOM = 40  # run tick labels and the axis title
Y_TICKS = 5  # about this many time ticks
X_TICKS = 10  # about this many run ticks

# A run is an outlier when its modified z-score on log time, 0.6745 (x - median) / MAD within
# its side, exceeds 3.5 (Iglewicz and Hoaglin's cut-off), and it is at least 10% from that
# side's median: nearer runs are ordinary noise on a shared machine, and with a tiny MAD
# (very steady runs) the z-score alone would ring them.
OUTLIER_Z = 3.5
_MAD_TO_Z = 0.6745
OUTLIER_MIN_DEVIATION = math.log(1.10)
# Below this many runs a side has no usable median absolute deviation.
MIN_RUNS_FOR_OUTLIERS = 5
# Plain ticks steps, times powers of ten.
_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True)
class Series:
    side: str  # "reference" or "patched": the CSS class of its marks
    points: tuple[tuple[int, float], ...]  # (run number, seconds) in run order
    median: float | None
    outliers: tuple[int, ...] = ()  # run numbers to ring: outliers(points), computed once


def outliers(points: Sequence[tuple[int, float]]) -> tuple[int, ...]:
    """The run numbers of one side's outliers (see OUTLIER_Z), in run order."""
    logs = [(run, math.log(t)) for run, t in points if t > 0 and math.isfinite(t)]
    if len(logs) < MIN_RUNS_FOR_OUTLIERS:
        return ()
    centre = _median([v for _, v in logs])
    mad = _median([abs(v - centre) for _, v in logs])
    limit = max(OUTLIER_Z * mad / _MAD_TO_Z, OUTLIER_MIN_DEVIATION)
    return tuple(sorted(run for run, v in logs if abs(v - centre) > limit))


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def nice_step(span: float, count: int) -> float:
    """A step of 1, 2, 2.5 or 5 times a power of ten giving about `count` ticks over span."""
    raw = span / max(count, 1)
    if raw <= 0 or not math.isfinite(raw):
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in _STEPS if raw <= m * magnitude * (1 + 1e-9))


def time_unit(seconds: float) -> tuple[str, float]:
    """The unit the axis labels use for times up to `seconds`, and its size in seconds."""
    if seconds >= 1:
        return "s", 1.0
    if seconds >= 0.001:
        return "ms", 0.001
    return "µs", 1e-6


def tick_label(value: float, step: float) -> str:
    """A tick value with as many decimals as the step needs: 120, 2.5, 0.25."""
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step < 1 else 0
    if decimals == 0 and step != round(step):
        decimals = 1
    if decimals and round(step * 10**decimals) != step * 10**decimals:
        decimals += 1
    return f"{value:.{decimals}f}"


class _Frame:
    """Where data lands on the canvas (scales computed once: a report draws thousands)."""

    def __init__(self, first: int, last: int, low: float, high: float) -> None:
        self.first, self.last = first, last  # run numbers shown
        self.low, self.high = low, high  # seconds at the bottom and the top
        self.plot_w = WIDTH - LEFT - RIGHT
        self.plot_h = HEIGHT - TOP - BOTTOM
        self.column = self.plot_w / (last - first + 1)
        self._x0 = LEFT + (0.5 - first) * self.column
        self._y_scale = self.plot_h / (high - low)

    def x(self, run: int) -> float:
        return self._x0 + run * self.column

    def y(self, seconds: float) -> float:
        return TOP + (self.high - seconds) * self._y_scale


def run_plot(series: Sequence[Series], disturbed: Collection[int], label: str) -> Markup | None:
    """Both sides' runs in run order; None without a single finite time."""
    times = [t for s in series for _, t in s.points if math.isfinite(t)]
    runs = [r for s in series for r, t in s.points if math.isfinite(t)]
    if not times:
        return None
    low, high = min(times), max(times)
    pad = (high - low) * 0.08 or high * 0.05 or 1e-6
    unit_name, unit = time_unit(high + pad)
    step = nice_step((high - low + 2 * pad) / unit, Y_TICKS) * unit
    low = max(0.0, math.floor((low - pad) / step) * step)
    high = math.ceil((high + pad) / step) * step
    frame = _Frame(min(runs), max(runs), low, high)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(label)}">',
        _disturbed(frame, disturbed),
        _y_axis(frame, step, unit, unit_name),
        _x_axis(frame),
    ]
    for number, s in enumerate(series):
        parts.append(_side(frame, s, (number - (len(series) - 1) / 2) * 3.0))
        parts.append(_strip(frame, s, number))
    parts.append("</svg>")
    return Markup("".join(parts))


def _disturbed(frame: _Frame, disturbed: Collection[int]) -> str:
    shown = sorted(r for r in disturbed if frame.first <= r <= frame.last)
    return "".join(
        f'<rect class="disturbed" x="{frame.x(r) - frame.column / 2:.1f}" y="{TOP}" '
        f'width="{frame.column:.1f}" height="{frame.plot_h:.0f}"><title>run {r}: the '
        "machine was busy with other work</title></rect>"
        for r in shown
    )


def _y_axis(frame: _Frame, step: float, unit: float, unit_name: str) -> str:
    right = LEFT + frame.plot_w
    bottom = TOP + frame.plot_h
    parts = [f'<path class="axis" d="M{LEFT} {TOP}V{bottom:.0f}H{right:.0f}"/>']
    count = round((frame.high - frame.low) / step)
    grid = []
    for n in range(count + 1):
        value = frame.low + n * step
        y = frame.y(value)
        grid.append(f"M{LEFT} {y:.1f}H{right:.0f}")
        parts.append(
            f'<text class="axis" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{tick_label(value / unit, step / unit)}</text>"
        )
    parts.append(f'<path class="grid" d="{"".join(grid)}"/>')
    middle = TOP + frame.plot_h / 2
    parts.append(
        f'<text class="axis" x="14" y="{middle:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {middle:.0f})">client time, {unit_name}</text>'
    )
    return "".join(parts)


def _x_axis(frame: _Frame) -> str:
    bottom = TOP + frame.plot_h
    step = max(1, round(nice_step(frame.last - frame.first + 1, X_TICKS)))
    first = math.ceil(frame.first / step) * step
    ticks, labels = [], []
    for run in range(first, frame.last + 1, step):
        x = frame.x(run)
        ticks.append(f"M{x:.1f} {bottom:.0f}v4")
        labels.append(
            f'<text class="axis" x="{x:.1f}" y="{bottom + 16:.0f}" text-anchor="middle">'
            f"{run}</text>"
        )
    return (
        f'<path class="axis" d="{"".join(ticks)}"/>{"".join(labels)}'
        f'<text class="axis" x="{LEFT + frame.plot_w / 2:.0f}" y="{HEIGHT - 4}" '
        'text-anchor="middle">run, in the order the runs were made</text>'
    )


def _side(frame: _Frame, s: Series, offset: float) -> str:
    parts = []
    right = LEFT + frame.plot_w
    if s.median is not None and frame.low <= s.median <= frame.high:
        ym = frame.y(s.median)
        parts.append(
            f'<path class="median {s.side}" d="M{LEFT} {ym:.1f}H{right:.0f}"><title>{s.side} '
            f"median</title></path>"
        )
    finite = [(run, t) for run, t in s.points if math.isfinite(t)]
    # One path per side, a zero-length segment per run drawn as a round dot by the CSS
    # (stroke-linecap: round): a tenth of the bytes of a <circle> per run.
    dots = "".join(f"M{frame.x(run) + offset:.1f} {frame.y(t):.1f}h0" for run, t in finite)
    parts.append(f'<path class="runs {s.side}" d="{dots}"/>')
    ringed = set(s.outliers)
    parts.extend(
        f'<circle class="outlier {s.side}" cx="{frame.x(run) + offset:.1f}" '
        f'cy="{frame.y(t):.1f}" r="6"><title>{s.side} run {run}: outlier</title></circle>'
        for run, t in finite
        if run in ringed
    )
    return "".join(parts)


def _strip(frame: _Frame, s: Series, number: int) -> str:
    """Each side's runs as short dashes at their times, side by side right of the plot."""
    left = LEFT + frame.plot_w + 10 + number * (STRIP / 2)
    marks = "".join(
        f"M{left:.0f} {frame.y(t):.1f}h{STRIP / 2 - 6:.0f}" for _, t in s.points if math.isfinite(t)
    )
    return (
        f'<path class="strip {s.side}" d="{marks}"><title>{s.side}: every run by time'
        "</title></path>"
    )
