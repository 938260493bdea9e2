"""Inline SVG plots: valid XML, the right marks, escaped text."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from report import render_report, svg, synthetic

SVG = "{http://www.w3.org/2000/svg}"


def _parse(markup: str) -> ET.Element:
    root = ET.fromstring(markup)  # raises on invalid XML
    assert root.tag == f"{SVG}svg"
    return root


def test_run_plot_has_one_point_per_run_and_a_median_line_per_side() -> None:
    plot = svg.run_plot(
        [
            svg.Series("reference", ((0, 0.10), (1, 0.11), (2, 0.09)), 0.10),
            svg.Series("patched", ((0, 0.13), (1, 0.12), (2, 0.14)), 0.13),
        ],
        "run times of <b>x</b> query 0",
    )
    assert plot is not None
    root = _parse(plot)
    dots = {p.get("class"): p.get("d", "") for p in root.findall(f"{SVG}path")}
    assert set(dots) == {"axis", "runs reference", "runs patched"}
    reference = _points(dots["runs reference"])
    patched = _points(dots["runs patched"])
    assert len(reference) == 3 and len(patched) == 3
    assert len(root.findall(f"{SVG}line")) == 2
    assert root.get("aria-label") == "run times of <b>x</b> query 0"  # escaped, read back
    # a slower run sits higher (smaller y) than a faster one; runs go left to right
    assert patched[0][1] < reference[0][1]
    assert [x for x, _ in reference] == sorted(x for x, _ in reference)


def _points(path: str) -> list[tuple[float, float]]:
    """The dots of a run series: 'M x y h0' per run."""
    found = re.findall(r"M([0-9.]+) ([0-9.]+)h0", path)
    return [(float(x), float(y)) for x, y in found]


def test_run_plot_of_no_runs_is_none_and_equal_times_do_not_divide_by_zero() -> None:
    assert svg.run_plot([svg.Series("reference", (), None)], "x") is None
    flat = svg.run_plot([svg.Series("reference", ((0, 0.5), (1, 0.5)), 0.5)], "x")
    assert flat is not None and "nan" not in flat
    _parse(flat)


def test_change_bars_are_centred_on_zero_and_coloured_by_direction() -> None:
    chart = svg.change_bars([svg.Bar("a<script>", 0.2, "#t-a"), svg.Bar("b", -0.05, "#t-b")])
    assert chart is not None
    root = _parse(chart)
    rects = root.findall(f"{SVG}rect")
    assert [r.get("class") for r in rects] == ["up", "down"]
    up, down = rects
    assert float(up.get("x", "0")) == float(down.get("x", "0")) + float(down.get("width", "0"))
    assert "<script>" not in chart


def test_every_svg_in_the_rendered_report_is_valid_xml(tmp_path: Path) -> None:
    out = tmp_path / "out"
    synthetic.write_small_run(out)
    html = render_report(out).path.read_text()
    pieces = html.split("<svg ")[1:]
    assert len(pieces) == 4  # slower, faster, unstable run plots and the per-test chart
    for piece in pieces:
        _parse("<svg " + piece.split("</svg>")[0] + "</svg>")
