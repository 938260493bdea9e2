"""The detail pages' run plot: axes with ticks in the right unit, a dot per run, outliers
ringed by a stated rule, disturbed runs shaded, valid and escaped SVG."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from report import runplot

SVG = "{http://www.w3.org/2000/svg}"
STEADY = (0.100, 0.102, 0.099, 0.101, 0.098, 0.103, 0.100, 0.101)


def _parse(markup: str) -> ET.Element:
    root = ET.fromstring(markup)  # raises on invalid XML
    assert root.tag == f"{SVG}svg"
    return root


def _runs(times: tuple[float, ...]) -> tuple[tuple[int, float], ...]:
    return tuple(enumerate(times))


@pytest.mark.parametrize(
    ("times", "found"),
    [
        (STEADY, ()),
        (STEADY[:4], ()),  # too few runs to judge
        ((*STEADY[:5], 0.200, *STEADY[5:]), (5,)),  # twice as slow
        ((0.050, *STEADY), (0,)),  # twice as fast
        ((*STEADY, 0.108), ()),  # 8% off: ordinary noise on a shared machine
        ((0.1,) * 8 + (0.115,), (8,)),  # no spread at all: 15% off is an outlier
        ((0.1, 0.1, 0.1, 0.1, 0.2, 0.2, 0.2, 0.2), ()),  # two modes are not outliers
    ],
)
def test_outliers_are_far_from_their_side_by_the_modified_z_score_and_ten_percent(
    times: tuple[float, ...], found: tuple[int, ...]
) -> None:
    assert runplot.outliers(_runs(times)) == found


@pytest.mark.parametrize(
    ("span", "count", "step"),
    [(46.7, 5, 10.0), (1.0, 5, 0.2), (0.9, 5, 0.2), (12.0, 5, 2.5), (7.0, 10, 1.0), (0.0, 5, 1.0)],
)
def test_tick_steps_are_one_two_two_and_a_half_or_five_times_a_power_of_ten(
    span: float, count: int, step: float
) -> None:
    assert runplot.nice_step(span, count) == pytest.approx(step)


@pytest.mark.parametrize(
    ("seconds", "unit"), [(2.5, "s"), (1.0, "s"), (0.2, "ms"), (0.001, "ms"), (0.0004, "µs")]
)
def test_the_unit_follows_the_largest_time(seconds: float, unit: str) -> None:
    assert runplot.time_unit(seconds)[0] == unit


@pytest.mark.parametrize(
    ("value", "step", "label"),
    [(120.0, 10.0, "120"), (2.5, 2.5, "2.5"), (0.25, 0.25, "0.25"), (0.4, 0.2, "0.4"),
     (1.0000000001, 0.5, "1.0")],
)  # fmt: skip
def test_tick_labels_have_the_decimals_their_step_needs(
    value: float, step: float, label: str
) -> None:
    assert runplot.tick_label(value, step) == label


def test_run_plot_has_a_dot_per_run_ticks_with_units_medians_and_the_marks() -> None:
    patched = (*STEADY[:3], 0.300, *STEADY[4:])  # run 3 of the patched side: an outlier
    plot = runplot.run_plot(
        [
            runplot.Series("reference", _runs(STEADY), 0.1005),
            runplot.Series("patched", _runs(patched), 0.1015, runplot.outliers(_runs(patched))),
        ],
        disturbed=(2, 3, 40),  # 40 is not a run of this query: not drawn
        label="run times of <b>x</b> query 0",
    )
    assert plot is not None
    root = _parse(plot)
    assert root.get("aria-label") == "run times of <b>x</b> query 0"  # escaped, read back
    paths = {p.get("class"): p.get("d", "") for p in root.iter(f"{SVG}path")}
    assert len(re.findall(r"h0", paths["runs reference"])) == len(STEADY)
    assert len(re.findall(r"h0", paths["runs patched"])) == len(patched)
    assert {"median reference", "median patched", "grid"} <= set(paths)
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "client time, ms" in texts
    assert "100" in texts and "300" in texts  # time ticks in ms, covering the outlier
    assert [str(run) for run in range(8)] == [t for t in texts if t in {str(r) for r in range(8)}]
    rings = [c for c in root.iter(f"{SVG}circle") if "outlier" in (c.get("class") or "")]
    assert [c.get("class") for c in rings] == ["outlier patched"]
    shaded = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "disturbed"]
    assert len(shaded) == 2
    # runs go left to right; a slower run sits higher (smaller y)
    found = re.findall(r"M([0-9.]+) ([0-9.]+)h0", paths["runs patched"])
    dots = [(float(x), float(y)) for x, y in found]
    assert [x for x, _ in dots] == sorted(x for x, _ in dots)
    assert min(dots, key=lambda d: d[1]) == dots[3]


def test_run_plot_in_seconds_and_of_one_side_only() -> None:
    plot = runplot.run_plot(
        [runplot.Series("reference", _runs(tuple(1.5 + 0.01 * i for i in range(7))), 1.53)],
        disturbed=(),
        label="x",
    )
    assert plot is not None
    texts = [t.text for t in _parse(plot).iter(f"{SVG}text")]
    assert "client time, s" in texts


def test_run_plot_of_no_runs_is_none_and_equal_times_do_not_divide_by_zero() -> None:
    assert runplot.run_plot([runplot.Series("reference", (), None)], (), "x") is None
    flat = runplot.run_plot([runplot.Series("reference", ((0, 0.5), (1, 0.5)), 0.5)], (), "x")
    assert flat is not None and "nan" not in flat and "inf" not in flat
    _parse(flat)
