"""Inline SVG plots: valid XML, the right marks, escaped text."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from report import render_report, svg, synthetic

SVG = "{http://www.w3.org/2000/svg}"


def _parse(markup: str) -> ET.Element:
    root = ET.fromstring(markup)  # raises on invalid XML
    assert root.tag == f"{SVG}svg"
    return root


def test_change_bars_are_centred_on_zero_and_coloured_by_direction() -> None:
    chart = svg.change_bars([svg.Bar("a<script>", 0.2, "#t-a"), svg.Bar("b", -0.05, "#t-b")])
    assert chart is not None
    root = _parse(chart)
    rects = root.findall(f"{SVG}rect")
    assert [r.get("class") for r in rects] == ["up", "down"]
    up, down = rects
    assert float(up.get("x", "0")) == float(down.get("x", "0")) + float(down.get("width", "0"))
    assert "<script>" not in chart


def test_every_svg_of_the_report_and_its_detail_pages_is_valid_xml(tmp_path: Path) -> None:
    out = tmp_path / "out"
    synthetic.write_run(out, synthetic.small_specs(), busy=[(0.5, 1.5)])
    html = render_report(out).path.read_text()
    pieces = html.split("<svg ")[1:]
    assert len(pieces) == 2  # the per-test chart and the machine over the run
    for page in sorted((out / "details").iterdir()):
        pieces += page.read_text().split("<svg ")[1:]
    # a run plot per measured query (the error query has no runs), and the machine while the
    # query the neighbour disturbed ran
    assert len(pieces) == 2 + 6 + 1
    for piece in pieces:
        _parse("<svg " + piece.split("</svg>")[0] + "</svg>")


def test_machine_timeline_of_a_moment_is_none_and_its_label_is_escaped() -> None:
    moment = svg.Moment(1.0, 1.0, 0.1, 0.0)
    assert svg.machine_timeline([moment], [1.0], 2) is None
    later = svg.Moment(2.0, 1.0, 0.6, 0.0)
    chart = svg.machine_timeline([moment, later], [1.5], 2, "CPU during <b>x</b> query 0")
    assert chart is not None
    assert _parse(chart).get("aria-label") == "CPU during <b>x</b> query 0"
    assert "<b>" not in chart
