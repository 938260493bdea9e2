"""`chperf report OUT`: write OUT/report.html and the queries' details pages in OUT/details/.
Problems found on the way never stop the report: they are returned and shown in it."""

from __future__ import annotations

import dataclasses
import datetime
import importlib.resources
import shutil
from dataclasses import dataclass
from pathlib import Path

import jinja2
from markupsafe import Markup

from artifacts.console import escape_controls_keep_lines
from artifacts.errors import ChperfError
from artifacts.files import write_atomically
from artifacts.stages import REPORT_FILE, REPORT_OUTPUTS, remove_previous
from report.display import DETAILS_DIR, MAX_QUERY_CHARS, full_query_href
from report.flamegraph import FlameGraphs, render_flamegraphs
from report.inputs import Inputs, load_inputs
from report.load import load_section
from report.model import DetailPage, Report
from report.protocols import protocol_section
from report.view import build_report

# report_templates/ is package data: found the same way in a checkout and in a wheel.
TEMPLATE_DIR = Path(str(importlib.resources.files("report_templates")))
TEMPLATE = "report.html.j2"
DETAIL_TEMPLATE = "details.html.j2"


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
        finalize=_visible,
        undefined=jinja2.StrictUndefined,  # a typo in a template is an error, not a blank
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _visible(value: object) -> object:
    """Every value a template prints: control and format characters (an escape sequence in a
    test's file name, a bidi override in a server message) become visible escapes, as on the
    console; line breaks and tabs stay. Markup keeps its type: the escapes are plain text."""
    if isinstance(value, Markup):
        return Markup(escape_controls_keep_lines(str(value)))
    if isinstance(value, str):
        return escape_controls_keep_lines(value)
    return value


def render_html(report: Report) -> str:
    return environment().get_template(TEMPLATE).render(report=report)


def write_details(out: Path, pages: tuple[DetailPage, ...]) -> tuple[str, ...]:
    """OUT/details/, written whole beside the old one and swapped in: no page of an earlier
    report stays; the problems."""
    fresh, final = out / f"{DETAILS_DIR}.new", out / DETAILS_DIR
    template = environment().get_template(DETAIL_TEMPLATE)
    try:
        shutil.rmtree(fresh, ignore_errors=True)
        fresh.mkdir()
        for page in pages:
            (fresh / page.file).write_text(template.render(page=page), encoding="utf-8")
        if final.is_dir() and not final.is_symlink():
            shutil.rmtree(final)
        elif final.exists() or final.is_symlink():
            final.unlink()
        fresh.rename(final)
    except OSError as e:
        shutil.rmtree(fresh, ignore_errors=True)
        return (f"the detail pages could not be written in {final}: {e}",)
    return ()


def write_full_queries(out: Path, inputs: Inputs) -> tuple[str, ...]:
    """The whole text of each query the report cuts, at its full_query_href; the problems."""
    problems = []
    for q in inputs.queries:
        if len(q.query) <= MAX_QUERY_CHARS:
            continue
        path = out / full_query_href(q.test, q.query_index)
        try:
            path.parent.mkdir(exist_ok=True)
            path.write_text(q.query, encoding="utf-8")
        except OSError as e:
            problems.append(f"the full text of {q.test} query {q.query_index}: {path}: {e}")
    return tuple(problems)


def render_report(out: Path) -> ReportResult:
    if not out.is_dir():
        raise ChperfError(
            f"{out}: not a directory", hint="pass the output directory of `chperf run`"
        )
    # Gone first: a report that fails to render never leaves the previous one looking current.
    remove_previous(out, REPORT_OUTPUTS)
    inputs = load_inputs(out)
    try:
        flames = render_flamegraphs(out, inputs.profiles)
    except OSError as e:
        flames = FlameGraphs({}, (f"flame graphs could not be written in {out}: {e}",))
    generated = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    problems = write_full_queries(out, inputs)
    report = build_report(inputs, flames, problems, generated)
    failed = write_details(out, report.details)
    if failed:  # rare: built again, so that the page counts the problem in its status
        report = build_report(inputs, flames, (*problems, *failed), generated)
    report = dataclasses.replace(report, protocols=protocol_section(out))
    report = dataclasses.replace(report, load=load_section(out))
    path = write_atomically(out / REPORT_FILE, render_html(report))  # never half a report
    return ReportResult(path, tuple(p.message for p in report.build_problems))
