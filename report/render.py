"""`chperf report OUT`: write OUT/report.html. Problems found on the way never stop the
report: they are returned and shown in it."""

from __future__ import annotations

import datetime
import importlib.resources
import os
from dataclasses import dataclass
from pathlib import Path

import jinja2

from artifacts.errors import ChperfError
from report.flamegraph import FlameGraphs, render_flamegraphs
from report.inputs import load_inputs
from report.model import Report
from report.view import build_report

# report_templates/ is package data: found the same way in a checkout and in a wheel.
TEMPLATE_DIR = Path(str(importlib.resources.files("report_templates")))
TEMPLATE = "report.html.j2"
REPORT_FILE = "report.html"


@dataclass(frozen=True)
class ReportResult:
    path: Path
    # The report's status line says failure when there are any: a caller should not turn a
    # report with problems into a green check either.
    problems: tuple[str, ...]


def environment() -> jinja2.Environment:
    if not (TEMPLATE_DIR / TEMPLATE).is_file():
        raise ChperfError(
            f"report template {TEMPLATE_DIR / TEMPLATE} is missing",
            hint="reinstall chperf: its package data is incomplete",
        )
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,  # every user-controlled string (tests, queries, errors) is escaped
        undefined=jinja2.StrictUndefined,  # a typo in a template is an error, not a blank
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_html(report: Report) -> str:
    return environment().get_template(TEMPLATE).render(report=report)


def render_report(out: Path) -> ReportResult:
    if not out.is_dir():
        raise ChperfError(
            f"{out}: not a directory", hint="pass the output directory of `chperf run`"
        )
    inputs = load_inputs(out)
    try:
        flames = render_flamegraphs(out, inputs.profiles)
    except OSError as e:
        flames = FlameGraphs({}, (f"flame graphs could not be written in {out}: {e}",))
    generated = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    report = build_report(inputs, flames, (), generated)
    path = out / REPORT_FILE
    tmp = out / (REPORT_FILE + ".tmp")
    tmp.write_text(render_html(report), encoding="utf-8")
    os.replace(tmp, path)  # never leave half a report behind
    return ReportResult(path, tuple(p.message for p in report.build_problems))
