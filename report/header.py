"""The report's header (status, servers, machine, options) and its problem lists."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from artifacts import manifest, tables
from artifacts.summary import SUMMARY_FILE, CalibrationSummary, FdrSummary, NoiseSummary
from artifacts.tables import ErrorRow
from artifacts.verdicts import METRICS_FILE, VERDICTS_FILE
from report import display
from report.inputs import Inputs
from report.model import Field, Header, ProblemView, ServerView

# errors.tsv stages that are one query's failure on one side, or why it was not measured: they
# become that query's verdict (partial, error, too long, not run) and are listed with it, not
# among the run's problems.
QUERY_STAGES = frozenset(
    {tables.STAGE_PREWARM, tables.STAGE_RUN, tables.STAGE_TOO_LONG, tables.STAGE_NOT_RUN}
)

_STAGE_KINDS = {
    tables.STAGE_PARSE: "test file error",
    tables.STAGE_SETUP: "setup error",
    tables.STAGE_PREWARM: "query error",
    tables.STAGE_RUN: "query error",
    tables.STAGE_TEARDOWN: "teardown error",
    tables.STAGE_SERVER: "server",
    tables.STAGE_QUERY_LOG: "query log",
}

_OUTCOMES = {"success": "passed", "failure": "failed", "incomplete": "incomplete"}

_MANIFEST_KEYS = (
    "run_id",
    "status",
    "chperf_version",
    "start_time",
    "end_time",
    "duration_seconds",
    "servers",
    "machine",
    "options",
)

_MISSING_ADVICE = {
    manifest.MANIFEST: "the header cannot say which servers ran; point at a directory "
    "written by `chperf run`",
    VERDICTS_FILE: "no verdicts; run `chperf compare OUT` first",
    SUMMARY_FILE: "no status line; run `chperf compare OUT` first",
    METRICS_FILE: "no metrics per query; run `chperf compare OUT` first",
}
_MISSING_ARTIFACT = "the run did not write it (crashed early?); rerun `chperf run`"


def input_problems(inputs: Inputs) -> list[str]:
    """Missing files, unreadable lines and gaps in run.json, as report-building problems."""
    found = [
        f"{name} is missing: {_MISSING_ADVICE.get(name, _MISSING_ARTIFACT)}"
        for name in inputs.missing
    ]
    found.extend(inputs.problems)
    if inputs.manifest:
        absent = [key for key in _MANIFEST_KEYS if key not in inputs.manifest]
        if absent:
            found.append(f"{manifest.MANIFEST} lacks {', '.join(absent)}: shown as not recorded")
    return found


def run_problems(inputs: Inputs) -> list[ProblemView]:
    problems: list[ProblemView] = []
    status = inputs.manifest.get("status")
    if status not in (None, "complete"):
        failure = inputs.manifest.get("failure")
        why = f" ({failure})" if status == manifest.FAILED and failure else ""
        problems.append(
            ProblemView(
                "",
                "run",
                manifest.MANIFEST,
                f"the run is {status}{why}: results cover only the queries measured before it "
                "stopped; rerun `chperf run` for a complete report",
            )
        )
    for error in inputs.errors:
        if error.stage == tables.STAGE_NOT_RUN:
            continue  # a budget's doing, listed under "Skipped and not run"
        if error.query_index == tables.WHOLE_TEST or error.stage not in QUERY_STAGES:
            problems.append(
                ProblemView(
                    "", _STAGE_KINDS.get(error.stage, error.stage), _where(error), _message(error)
                )
            )
    return problems


def _where(error: ErrorRow) -> str:
    parts = [error.test]
    if error.query_index != tables.WHOLE_TEST:
        parts.append(f"query {error.query_index}")
    return " ".join(parts) + f", {error.server}, stage {error.stage}"


def _message(error: ErrorRow) -> str:
    code = f" (code {error.error_code})" if error.error_code else ""
    return error.message + code


def number_problems(
    run: Sequence[ProblemView], build: Sequence[str]
) -> tuple[tuple[ProblemView, ...], tuple[ProblemView, ...]]:
    """Give every problem its anchor, problem-1 ... across both lists."""
    numbered_run = tuple(
        ProblemView(f"problem-{n}", p.kind, p.where, p.message) for n, p in enumerate(run, start=1)
    )
    numbered_build = tuple(
        ProblemView(f"problem-{n}", "report", "", message)
        for n, message in enumerate(build, start=len(run) + 1)
    )
    return numbered_run, numbered_build


def build_header(
    inputs: Inputs,
    first_problem: str | None,
    build_problems: int,
    flame_problems: Sequence[str] = (),
) -> Header:
    manifest = inputs.manifest
    if inputs.summary is None:
        status, message = "failure", "no verdicts: summary.json is missing or unreadable"
    else:
        status, message = inputs.summary.status, inputs.summary.message
    if build_problems:
        # Fail closed: a report that could not be built completely is not a green check.
        status = "failure"
        message += f"; {build_problems} errors while building the report"
    return Header(
        status=status,
        outcome=_OUTCOMES.get(status, status),
        message=message,
        first_problem=first_problem,
        run=_run_fields(manifest),
        servers=tuple(
            _server(manifest.get("servers"), side, manifest.get("processes"))
            for side in tables.SIDES
        ),
        machine=_fields(manifest.get("machine")),
        options=_fields(manifest.get("options")),
        profiling_note=_profiling_note(inputs),
        profiling_problems=(*_profile_problems(inputs), *flame_problems),
        statistics=_statistics(inputs),
        thresholds=_thresholds(inputs),
    )


def _thresholds(inputs: Inputs) -> tuple[Field, ...]:
    """The numbers the verdicts were reached with: the minimum effect compare applied (from
    verdicts.tsv, so a `chperf compare --min-effect` after the run shows), the rest as run."""
    options = inputs.manifest.get("options")
    options = options if isinstance(options, dict) else {}
    fields = []
    effects = sorted({v.min_effect for v in inputs.verdicts if v.min_effect is not None})
    if effects:
        low, high = (display.percent(e, signed=False) for e in (effects[0], effects[-1]))
        value = low if low == high else f"{low} to {high} (per query, from the calibration)"
        fields.append(Field("Minimum effect", value))
    unstable = options.get("unstable_threshold")
    if isinstance(unstable, int | float):
        fields.append(Field("Unstable threshold", display.percent(unstable, signed=False)))
    if isinstance(options.get("method"), str):
        fields.append(Field("Method", str(options["method"])))
    if inputs.summary is not None:
        fdr = inputs.summary.fdr
        control = "off" if fdr is None else f"Benjamini-Hochberg at q = {fdr.q:g}"
        fields.append(Field("False-discovery control", control))
    if "runs" in options:
        fields.append(Field("Runs a side", _text(options["runs"])))
    return tuple(fields)


def _statistics(inputs: Inputs) -> tuple[str, ...]:
    """The statements about how the verdicts were reached, in the order the report shows."""
    if inputs.summary is None:
        return ()
    options = inputs.manifest.get("options")
    options = options if isinstance(options, dict) else {}
    parts = (
        _capability_lines(inputs.manifest.get("servers")),
        _fdr_lines(inputs.summary.fdr),
        _process_lines(options.get("processes")),
        _placement_lines(options.get("pin")),
        _noise_lines(inputs.summary.noise),
        _calibration_lines(inputs.summary.calibration),
    )
    return tuple(line for part in parts for line in part)


def _capability_lines(servers: object) -> list[str]:
    """What one server can do and the other cannot (docs/modern.md, "Capabilities")."""
    if not isinstance(servers, dict):
        return []
    found = {side: (servers.get(side) or {}).get("capabilities") for side in tables.SIDES}
    if not all(isinstance(c, dict) for c in found.values()):
        return []
    reference, patched = found[tables.REFERENCE], found[tables.PATCHED]
    assert isinstance(reference, dict) and isinstance(patched, dict)
    differ = [
        f"{name}: reference {_text(reference.get(name))}, patched {_text(patched.get(name))}"
        for name in sorted(set(reference) | set(patched))
        if reference.get(name) != patched.get(name)
    ]
    if not differ:
        return []
    return [
        "The servers differ in what they can do (each side's probe, run.json capabilities): "
        + "; ".join(differ)
        + ". ProfileEvents are compared on the events both report; flame graphs come from "
        "trace_log where the query profiler samples, else from perf."
    ]


def _fdr_lines(fdr: FdrSummary | None) -> list[str]:
    if fdr is None:
        return []
    lines = [
        f"False-discovery control: Benjamini-Hochberg at q = {fdr.q:g} over {fdr.tests} "
        f"measured queries: {fdr.discoveries} discoveries, of which at most "
        f"{fdr.expected_false_at_most:.2g} are expected to be false. A query is called "
        "faster or slower only when it is also a discovery."
    ]
    lone, smallest = fdr.lone_discovery_level, fdr.smallest_p_value
    if lone is not None and smallest is not None and smallest > lone:
        lines.append(
            f"No change alone can be a discovery in this run: that needs p <= q/m = "
            f"{lone:.2g}, and the smallest p-value any query could reach at its run count "
            f"is {smallest:.2g} (the randomization distribution is discrete, and sampled "
            "when runs are many: docs/method.md). Changes are found here only when "
            "enough queries change together; run fewer queries per comparison, or more "
            "runs, to find a lone one."
        )
    return lines


def _process_lines(processes: object) -> list[str]:
    if not isinstance(processes, int) or processes <= 1:
        return []
    return [
        f"Each side ran on {processes} server processes; runs alternate between them in "
        "blocks of two (R P, P R on one, then on the next). Two processes of the same "
        "binary can differ by 5-25% for minutes (memory layout, allocator state), so a "
        "query is called faster or slower only when every process set shows the change "
        "on its own: its own Diff at least the minimum effect, in the same direction "
        "(summary.json process_diffs)."
    ]


def _placement_lines(pin: object) -> list[str]:
    if not isinstance(pin, str) or not pin:
        return []
    return [
        f"CPU placement: the servers were {pin}. On a VM the host can slow one vCPU at a "
        "time for seconds; two servers on different vCPUs then differ for as long as "
        "that lasts, and the pair's two runs stop being exchangeable (runner/pinning.py)."
    ]


def _noise_lines(noise: NoiseSummary | None) -> list[str]:
    if noise is None:
        return []
    threshold = (
        ""
        if noise.median_threshold is None
        else f" The median noise threshold T over the queries is {noise.median_threshold:.1%}."
    )
    return [
        f"Machine noise: {noise.pair_spread:.1%}, the median over {noise.queries} queries of "
        f"the spread (standard deviation) of ln(patched/reference) across each query's "
        f"first {noise.pairs} pairs. The two runs of a pair share the machine's state, so "
        "this is the noise alternation cannot cancel; a change shifts the ratios but not "
        "their spread. The noisier the pairs, the more runs a query needs before T falls "
        "to the minimum effect: where it did not, an unchanged query is inconclusive "
        f"rather than equivalent.{threshold} A run on a quieter machine resolves more."
    ]


def _calibration_lines(calibration: CalibrationSummary | None) -> list[str]:
    if calibration is None:
        return []
    return [
        f"Noise floors from the A/A calibration {calibration.file}: "
        f"{calibration.calibrated} queries calibrated, {calibration.not_calibrated} "
        "not calibrated (they keep the default minimum effect and are marked)."
    ]


def _text(value: Any) -> str:
    if value is None:
        return "not recorded"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def _run_fields(manifest: dict[str, Any]) -> tuple[Field, ...]:
    duration = manifest.get("duration_seconds")
    return (
        Field("Run", _text(manifest.get("run_id"))),
        Field("Run status", _text(manifest.get("status"))),
        Field("Start time", _text(manifest.get("start_time"))),
        Field("End time", _text(manifest.get("end_time"))),
        Field(
            "Duration",
            display.wall_time(float(duration))
            if isinstance(duration, int | float)
            else "not recorded",
        ),
        Field("chperf version", _text(manifest.get("chperf_version"))),
    )


def _fields(value: Any) -> tuple[Field, ...]:
    if not isinstance(value, dict):
        return (
            (Field("", "not recorded in run.json"),)
            if value is None
            else (Field("", _text(value)),)
        )
    return tuple(Field(str(k), _text(v)) for k, v in value.items())


# Fields that differ between the server processes of one side (run.json `processes`).
PER_PROCESS = ("pid", "tcp_port", "http_port", "directory", "restarts", "process", "incidents")


def _server(servers: Any, side: str, processes: Any = None) -> ServerView:
    info = servers.get(side) if isinstance(servers, dict) else None
    if not isinstance(info, dict):
        return ServerView(side, "not recorded in run.json", "", "", (), ())
    overlays = info.get("overlays")
    own = _process_rows(processes, side)
    shown = {
        "side", "version", "binary", "sha256", "overlays", "overlays_sha256",
        *(PER_PROCESS if own else ()),
    }  # fmt: skip
    details = [Field(str(k), _text(v)) for k, v in info.items() if k not in shown]
    return ServerView(
        side=side,
        version=_text(info.get("version")),
        binary=_text(info.get("binary")),
        sha256=_text(info.get("sha256")),
        overlays=tuple(str(o) for o in overlays) if isinstance(overlays, list) else (),
        details=(*details, *own),
    )


def _process_rows(processes: Any, side: str) -> tuple[Field, ...]:
    if not isinstance(processes, list) or len(processes) < 2:
        return ()
    rows = []
    for number, entry in enumerate(processes, start=1):
        info = entry.get(side) if isinstance(entry, dict) else None
        if not isinstance(info, dict):
            rows.append(Field(f"process #{number}", "not recorded in run.json"))
            continue
        parts = [
            f"pid {_text(info.get('pid'))}",
            f"tcp port {_text(info.get('tcp_port'))}",
            f"http port {_text(info.get('http_port'))}",
            f"restarts {_text(info.get('restarts'))}",
            f"directory {_text(info.get('directory'))}",
        ]
        incidents = info.get("incidents")
        if isinstance(incidents, list) and incidents:
            parts.append("incidents " + "; ".join(_text(i) for i in incidents))
        rows.append(Field(f"process #{number}", ", ".join(parts)))
    return tuple(rows)


def _profile_problems(inputs: Inputs) -> tuple[str, ...]:
    found = inputs.manifest.get("profile_problems")
    return tuple(_text(p) for p in found) if isinstance(found, list) else ()


def _profiling_note(inputs: Inputs) -> str | None:
    reason = inputs.manifest.get("profiling_unavailable")
    if reason:
        return f"No flame graphs: {_text(reason)}"
    if inputs.manifest and not inputs.profiles:
        return (
            "No flame graphs: run.json lists no profiles "
            "(profiling disabled, or no query needed one)"
        )
    return None
