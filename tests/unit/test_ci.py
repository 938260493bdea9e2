"""ci/: the workflow file, the PR comment and job summary (golden), the annotations, the links
into the report, the comment's update in place, the environment."""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from artifacts.errors import ChperfError
from chperf.parser import build_parser as chperf_parser
from ci import annotation, check, markdown, summary
from ci.__main__ import build_parser as ci_parser
from ci.__main__ import main as ci_main
from ci.__main__ import upload_argv
from ci.check import CheckSummary, QueryLine
from ci.comment import upsert_comment
from ci.env import from_environ
from ci.links import ReportLinks, report_links
from report.display import detail_href
from tests.conftest import DATA, REPO

WORKFLOW = REPO / "ci" / "github" / "perf-check.yml"
ACTION = REPO / "ci" / "action" / "action.yml"
GOLDEN = DATA / "ci_basic"
_COMMAND = re.compile(r"(chperf|python -m ci) ([a-z-]+)((?: [^\n;]*)?)")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def _workflow() -> dict[Any, Any]:
    document = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(document, dict)
    return document


def _scripts() -> list[tuple[str, str]]:
    """(job, script) of every `run:` step, comment lines left out."""
    found = []
    for name, job in _workflow()["jobs"].items():
        for step in job["steps"]:
            lines = str(step.get("run", "")).replace("\\\n", " ").splitlines()
            found.append((name, "\n".join(ln for ln in lines if not ln.strip().startswith("#"))))
    return found


def _workflow_commands() -> list[tuple[str, str, list[str]]]:
    found = []
    for _, script in _scripts():
        for program, command, rest in _COMMAND.findall(script):
            found.append((program, command, re.findall(r"(--[a-z-]+)", rest)))
    return found


def test_workflow_is_reusable_only_with_inputs_for_a_fork() -> None:
    workflow = _workflow()
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    # No trigger of its own: an A/A of some server on every pull request is the caller's
    # explicit choice, never a default.
    assert set(triggers) == {"workflow_call"}
    inputs = triggers["workflow_call"]["inputs"]
    assert {
        "chperf_repository", "chperf_ref", "reference_binary", "patched_binary",
        "reference_artifact", "patched_artifact", "tests", "shards", "budget", "hosted_report",
    } <= set(inputs)  # fmt: skip
    assert inputs["reference_binary"]["required"] and inputs["patched_binary"]["required"]
    assert set(workflow["jobs"]) == {"plan", "shard", "merge", "history"}
    assert workflow["jobs"]["shard"]["strategy"]["matrix"]["shard"]


def test_every_job_installs_chperf_from_its_own_checkout_and_renderers_get_inferno() -> None:
    for name, job in _workflow()["jobs"].items():
        steps = job["steps"]
        checkout = steps[0]
        assert checkout["uses"].startswith("actions/checkout@"), name
        assert checkout["with"]["path"] == "chperf-src", name
        assert "${{ inputs.chperf_repository }}" in checkout["with"]["repository"], name
        setup = [s for s in steps if s.get("uses") == "./chperf-src/ci/action"]
        assert len(setup) == 1, name
        inferno = (setup[0].get("with") or {}).get("inferno", "true")
        assert inferno == ("true" if name in ("shard", "merge") else "false"), name
    assert not any("pip install" in script for _, script in _scripts())


def test_the_setup_action_builds_the_makefiles_inferno_and_caches_pip() -> None:
    action = yaml.safe_load(ACTION.read_text())
    makefile = (REPO / "Makefile").read_text()
    version = re.search(r"^INFERNO_VERSION := (\S+)$", makefile, re.MULTILINE)
    assert version is not None
    steps = action["runs"]["steps"]
    text = ACTION.read_text()
    assert text.count(f"inferno --version {version.group(1)}") == 1
    assert f"key: inferno-{version.group(1)}-" in text
    python = next(s for s in steps if str(s.get("uses", "")).startswith("actions/setup-python"))
    assert python["with"]["cache"] == "pip"
    assert next(s for s in steps if str(s.get("uses", "")).startswith("actions/cache"))


def test_no_script_pastes_an_expression_into_its_text() -> None:
    """Inputs and event data reach scripts as environment variables only: a test name or an
    input with quotes cannot become shell code."""
    assert [job for job, script in _scripts() if "${{" in script] == []


def test_the_comment_step_has_a_write_permission_and_the_rest_read_only() -> None:
    workflow = _workflow()
    assert workflow["permissions"] == {"contents": "read"}
    assert workflow["jobs"]["merge"]["permissions"] == {
        "contents": "read",
        "pull-requests": "write",
    }


def test_every_command_the_workflow_calls_exists_with_its_flags() -> None:
    parsers = {"chperf": _subcommands(chperf_parser()), "python -m ci": _subcommands(ci_parser())}
    commands = _workflow_commands()
    assert {(p, c) for p, c, _ in commands} >= {
        ("chperf", "run"), ("chperf", "merge"), ("python -m ci", "summary"),
        ("python -m ci", "comment"), ("python -m ci", "upload"), ("python -m ci", "matrix"),
        ("python -m ci", "annotations"),
    }  # fmt: skip
    for program, command, flags in commands:
        assert command in parsers[program], f"{program} {command}"
        known = {o for a in parsers[program][command]._actions for o in a.option_strings}
        assert set(flags) <= known, f"{program} {command}: {set(flags) - known}"


def test_ci_upload_calls_an_existing_chperf_command() -> None:
    ctx = from_environ({"CHPERF_HISTORY_URL": "clickhouse://u@h:9000/db"})
    argv = upload_argv(Path("merged"), ctx)
    args = chperf_parser().parse_args(argv)
    assert args.command == "upload" and args.history_url == "clickhouse://u@h:9000/db"


@pytest.fixture()
def golden_run(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(GOLDEN, out, ignore=shutil.ignore_patterns("expected"))
    return out


ARTIFACT = "https://github.com/o/r/actions/runs/1/artifacts/5"
RUN = "https://github.com/o/r/actions/runs/1"
HOSTED = "https://perf.example.invalid/pr-7/"


def _links(hosted: str = "") -> ReportLinks:
    return report_links(ARTIFACT, hosted, RUN)


def test_summary_md_and_status_json_match_the_golden_files(golden_run: Path) -> None:
    result = summary.write(golden_run, _links())
    assert result.exit_code == 1
    for name in ("summary.md", "status.json"):
        assert (golden_run / name).read_text() == (GOLDEN / "expected" / name).read_text(), name


def test_the_job_summary_adds_the_servers_and_the_noisy_queries_to_the_comment(
    golden_run: Path,
) -> None:
    text = markdown.job_summary(check.load(golden_run), _links())
    assert text == (GOLDEN / "expected" / "job_summary.md").read_text()


def test_with_a_hosted_report_every_change_links_to_its_detail_page(golden_run: Path) -> None:
    result = check.load(golden_run)
    body = markdown.comment(result, _links(HOSTED))
    for q in result.changed:
        assert f"[details]({HOSTED}{detail_href(q.test, q.query_index)})" in body
    assert f"[Report]({HOSTED}report.html)" in body
    status = summary.check_status(result, _links(HOSTED))
    assert status.report_url == f"{HOSTED}report.html"


def _line(test: str, index: int, verdict: str, diff: float | None) -> QueryLine:
    return QueryLine(test, index, verdict, 0.1, 0.1 * (1 + diff) if diff else None, 0.02, diff)


def _check(changed: list[QueryLine], status: str = "failure") -> CheckSummary:
    return CheckSummary(status, 1, "m", (), tuple(changed), (), "")


def test_when_nothing_changed_the_comment_is_the_verdict_and_the_links() -> None:
    passed = CheckSummary("success", 0, "9 unchanged", (("unchanged", 9),), (), (), "servers")
    assert markdown.comment(passed, _links()).splitlines() == [
        markdown.MARKER,
        "### chperf performance check passed: 9 unchanged",
        "",
        f"[report artifact]({ARTIFACT}) (download, open report.html) · [CI run]({RUN})",
    ]


def test_the_comment_lists_the_biggest_changes_and_counts_the_rest() -> None:
    lines = [_line(f"t{i}", i, "slower", 0.1 + i / 100) for i in range(14)]
    body = markdown.comment(_check(lines), _links())
    rows = [line for line in body.splitlines() if line.startswith("| slower |")]
    assert len(rows) == markdown.COMMENT_ROWS
    assert f"…and {14 - markdown.COMMENT_ROWS} more in the report." in body


def test_hostile_test_names_stay_text_in_the_comment_and_one_line_in_annotations() -> None:
    name = "x](https://evil.example)<img src=y>|\n::error::boom ##[set-output name=a]"
    s = _check([QueryLine(name, 0, "slower", 0.1, 0.2, 0.02, 1.0, file="a,b:c.xml")])
    body = markdown.comment(s, _links(HOSTED))
    row = next(line for line in body.splitlines() if line.startswith("| slower |"))
    assert "\\](https" in row and "\\<img" in row and "\\|" in row
    (command,) = annotation.commands(s, _links(HOSTED))
    assert "\n" not in command and command.count("::") == 2  # `::error ` and `::` before text
    assert command.startswith("::error file=a%2Cb%3Ac.xml,title=x](https%3A//evil.example)")
    assert "##[" not in command


def test_each_changed_query_is_one_annotation_of_its_kind(golden_run: Path) -> None:
    lines = annotation.commands(check.load(golden_run), _links(HOSTED))
    assert lines == [
        "::error file=perf_tests/sort_limit.xml,"
        "title=sort_limit query 0 is slower%3A 2.50x slower (+150.0%25)::"
        "99%25 CI 2.31–2.74x slower; median 200 ms on reference, 500 ms on patched; "
        f"threshold 2.0%25; details: {HOSTED}{detail_href('sort_limit', 0)}",
        "::error file=perf_tests/agg_sum_avg.xml,"
        "title=agg_sum_avg query 1 is slower%3A 1.32x slower (+32.0%25)::"
        "median 50 ms on reference, 66 ms on patched; threshold 4.1%25; "
        f"details: {HOSTED}{detail_href('agg_sum_avg', 1)}",
        "::warning file=perf_tests/hashing.xml,title=hashing query 2 is partial::"
        "median 400 ms on reference, — on patched; "
        f"details: {HOSTED}{detail_href('hashing', 2)}",
        "::notice file=perf_tests/sort_limit.xml,"
        "title=sort_limit query 1 is faster%3A 1.25x faster (−20.0%25)::"
        "99%25 CI 1.18–1.32x faster; median 300 ms on reference, 240 ms on patched; "
        f"threshold 5.0%25; details: {HOSTED}{detail_href('sort_limit', 1)}",
    ]


def test_past_githubs_ten_annotations_of_a_kind_the_last_one_counts_the_rest() -> None:
    slower = [_line(f"s{i}", 0, "slower", 0.5 - i / 100) for i in range(13)]
    faster = [_line(f"f{i}", 0, "faster", -0.2) for i in range(3)]
    lines = annotation.commands(_check([*slower, *faster]), _links())
    errors = [line for line in lines if line.startswith("::error ")]
    assert len(errors) == annotation.PER_KIND
    assert errors[-1] == f"::error title=4 more slower queries::listed in {ARTIFACT}"
    assert [line.split(" ")[0] for line in lines].count("::notice") == 3


@pytest.mark.parametrize(
    ("file", "tests_dir", "expected"),
    [
        ("/home/runner/work/f/f/repo/tests/performance/a.xml", "tests/performance",
         "tests/performance/a.xml"),
        ("/w/repo/tests/perf/a.xml", "./tests/perf/", "tests/perf/a.xml"),
        ("perf_tests/sort_limit.xml", "tests/performance", "perf_tests/sort_limit.xml"),
        ("/elsewhere/a.xml", "tests/performance", ""),
        ("/w/repo/tests/performance/a.xml", "", ""),
    ],
)  # fmt: skip
def test_an_annotation_names_the_test_file_relative_to_the_repository(
    file: str, tests_dir: str, expected: str
) -> None:
    """Shards record absolute paths on their own runners; GitHub wants the repository's."""
    assert annotation.repository_path(file, tests_dir) == expected


@pytest.mark.parametrize(
    ("hosted", "expected"),
    [
        ("https://h.example/pr 7/report.html", "https://h.example/pr%207/"),
        ("http://h.example/a(b)", "http://h.example/a%28b%29/"),
        ("", ""),
    ],
)
def test_the_hosted_report_url_names_a_directory_encoded_for_markdown(
    hosted: str, expected: str
) -> None:
    assert report_links(hosted_url=hosted).hosted_url == expected


@pytest.mark.parametrize("bad", ["javascript:alert(1)", "ftp://h/x", "report.html", "https://"])
def test_a_link_that_is_not_an_http_url_is_bad_input(bad: str) -> None:
    with pytest.raises(ChperfError, match="expected an http:// or https:// URL") as caught:
        report_links(hosted_url=bad)
    assert caught.value.exit_code == 2


def test_missing_summary_json_is_an_error_status_never_success(tmp_path: Path) -> None:
    result = summary.write(tmp_path / "merged", _links(), exit_code=0)
    status = json.loads((tmp_path / "merged" / "status.json").read_text())
    assert (result.status, result.exit_code) == ("error", 3)
    assert status["status"] == "error" and "summary.json is missing" in status["description"]


def test_a_failed_merge_exit_code_wins_over_a_passing_summary(golden_run: Path) -> None:
    document = json.loads((golden_run / "summary.json").read_text())
    (golden_run / "summary.json").write_text(json.dumps({**document, "status": "success"}))
    assert check.load(golden_run, exit_code=2).status == "error"
    assert check.load(golden_run, exit_code=0).status == "success"


def test_ci_summary_in_actions_writes_the_job_summary_and_exits_with_the_check(
    golden_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    step_summary = tmp_path / "step_summary.md"
    monkeypatch.setattr("os.environ", {"GITHUB_ACTIONS": "true",
                                       "GITHUB_STEP_SUMMARY": str(step_summary)})  # fmt: skip
    assert ci_main(["summary", str(golden_run), "--report-url", ARTIFACT, "--run-url", RUN]) == 1
    assert step_summary.read_text() == (GOLDEN / "expected" / "job_summary.md").read_text()
    assert capsys.readouterr().out == ""  # annotations are their own step
    assert ci_main(["annotations", str(golden_run)]) == 0
    assert capsys.readouterr().out.count("::error ") == 2


def test_ci_summary_refuses_a_hosted_report_that_is_no_url(golden_run: Path, capsys: Any) -> None:
    assert ci_main(["summary", str(golden_run), "--hosted-report", "pages/pr-7"]) == 2
    assert "--hosted-report 'pages/pr-7': expected an http:// or https:// URL" in (
        capsys.readouterr().err
    )


class FakeGitHub:
    def __init__(self, comments: list[dict[str, Any]]) -> None:
        self.comments = comments
        self.calls: list[tuple[str, str]] = []

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        self.calls.append((method, path))
        if method == "GET":
            return self.comments if "page=1" in path else []
        if method == "POST":
            self.comments.append({"id": 99, "body": (body or {})["body"]})
        if method == "PATCH":
            comment_id = int(path.rsplit("/", 1)[1])
            for c in self.comments:
                if c["id"] == comment_id:
                    c["body"] = (body or {})["body"]
        return {}


def test_the_pr_comment_is_created_once_then_updated_in_place() -> None:
    api = FakeGitHub([{"id": 1, "body": "LGTM"}])
    assert upsert_comment(api, "o/r", 7, f"{markdown.MARKER}\nfirst", markdown.MARKER) == "created"
    assert upsert_comment(api, "o/r", 7, f"{markdown.MARKER}\nsecond", markdown.MARKER) == "updated"
    marked = [c for c in api.comments if markdown.MARKER in c["body"]]
    assert [c["body"].splitlines()[-1] for c in marked] == ["second"]
    assert ("PATCH", "/repos/o/r/issues/comments/99") in api.calls


def test_environment_maps_to_explicit_pull_request_context(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 42, "head": {"sha": "h"},
                                                  "base": {"sha": "b"}}}))  # fmt: skip
    ctx = from_environ({
        "GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": "5", "GITHUB_EVENT_PATH": str(event),
        "GITHUB_TOKEN": "secret-token", "GITHUB_EVENT_NAME": "pull_request",
    })  # fmt: skip
    assert ctx.pr_number == 42
    assert ctx.run_url == "https://github.com/o/r/actions/runs/5"
    assert ctx.upload_labels()["pr"] == "42" and ctx.upload_labels()["head_sha"] == "h"
    assert "secret-token" not in repr(ctx)
    assert from_environ({"GITHUB_REF": "refs/pull/9/merge"}).pr_number == 9
