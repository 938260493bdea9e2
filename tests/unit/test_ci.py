"""ci/: the workflow file, the summary for PRs (golden), the PR comment, the environment."""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from chperf.parser import build_parser as chperf_parser
from ci import summary
from ci.__main__ import build_parser as ci_parser
from ci.__main__ import main as ci_main
from ci.__main__ import upload_argv
from ci.comment import upsert_comment
from ci.env import from_environ
from tests.conftest import DATA, REPO

WORKFLOW = REPO / "ci" / "github" / "perf-check.yml"
GOLDEN = DATA / "ci_basic"
_COMMAND = re.compile(r"(chperf|python -m ci) ([a-z-]+)((?: [^\n;]*)?)")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def _workflow_commands() -> list[tuple[str, str, list[str]]]:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    found = []
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            script = step.get("run", "").replace("\\\n", " ")
            for program, command, rest in _COMMAND.findall(script):
                found.append((program, command, re.findall(r"(--[a-z-]+)", rest)))
    return found


def test_workflow_is_valid_yaml_with_the_documented_jobs() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert "pull_request" in triggers and "workflow_call" in triggers
    assert set(workflow["jobs"]) == {"plan", "shard", "merge", "history"}
    inputs = triggers["workflow_call"]["inputs"]
    assert {"reference_artifact", "patched_artifact", "shards", "runs"} <= set(inputs)
    assert workflow["jobs"]["shard"]["strategy"]["matrix"]["shard"]


def test_every_command_the_workflow_calls_exists_with_its_flags() -> None:
    parsers = {"chperf": _subcommands(chperf_parser()), "python -m ci": _subcommands(ci_parser())}
    commands = _workflow_commands()
    assert {(p, c) for p, c, _ in commands} >= {
        ("chperf", "run"), ("chperf", "merge"), ("python -m ci", "summary"),
        ("python -m ci", "comment"), ("python -m ci", "upload"), ("python -m ci", "matrix"),
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


def _options() -> summary.SummaryOptions:
    return summary.SummaryOptions(
        report_url="https://example.invalid/report", run_url="https://github.com/o/r/actions/runs/1"
    )


def test_summary_md_and_status_json_match_the_golden_files(golden_run: Path) -> None:
    result = summary.write(golden_run, _options())
    assert result.exit_code == 1
    for name in ("summary.md", "status.json"):
        assert (golden_run / name).read_text() == (GOLDEN / "expected" / name).read_text(), name


def test_slower_queries_become_error_annotations_on_their_test_files(golden_run: Path) -> None:
    lines = summary.error_annotations(summary.load(golden_run, _options()))
    assert lines == [
        "::error file=perf_tests/sort_limit.xml,"
        "title=sort_limit query 0 is 2.50x slower (+150.0%25)::"
        "median 200 ms on reference, 500 ms on patched (threshold 2.0%25)",
        "::error file=perf_tests/agg_sum_avg.xml,"
        "title=agg_sum_avg query 1 is 1.32x slower (+32.0%25)::"
        "median 50 ms on reference, 66 ms on patched (threshold 4.1%25)",
    ]


def test_missing_summary_json_is_an_error_status_never_success(tmp_path: Path) -> None:
    result = summary.write(tmp_path / "merged", summary.SummaryOptions(exit_code=0))
    status = json.loads((tmp_path / "merged" / "status.json").read_text())
    assert (result.status, result.exit_code) == ("error", 3)
    assert status["status"] == "error" and "summary.json is missing" in status["description"]


def test_a_failed_merge_exit_code_wins_over_a_passing_summary(golden_run: Path) -> None:
    document = json.loads((golden_run / "summary.json").read_text())
    (golden_run / "summary.json").write_text(json.dumps({**document, "status": "success"}))
    assert summary.load(golden_run, summary.SummaryOptions(exit_code=2)).status == "error"
    assert summary.load(golden_run, summary.SummaryOptions(exit_code=0)).status == "success"


def test_ci_summary_in_actions_writes_the_step_summary_and_exits_with_the_check(
    golden_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    step_summary = tmp_path / "step_summary.md"
    monkeypatch.setattr("os.environ", {"GITHUB_ACTIONS": "true",
                                       "GITHUB_STEP_SUMMARY": str(step_summary)})  # fmt: skip
    assert ci_main(["summary", str(golden_run)]) == 1
    assert step_summary.read_text().startswith(summary.MARKER)
    assert capsys.readouterr().out.count("::error ") == 2


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
    assert upsert_comment(api, "o/r", 7, f"{summary.MARKER}\nfirst", summary.MARKER) == "created"
    assert upsert_comment(api, "o/r", 7, f"{summary.MARKER}\nsecond", summary.MARKER) == "updated"
    marked = [c for c in api.comments if summary.MARKER in c["body"]]
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
