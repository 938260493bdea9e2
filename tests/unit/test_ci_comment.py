"""`python -m ci comment` against GitHub's comment API served on 127.0.0.1: one comment,
updated in place; a fork's read-only token, a missing token or GitHub being down put the comment
into the job summary and never fail the step."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ci import markdown, summary
from ci.check import markdown_cell
from ci.comment import PAGE_SIZE
from ci.links import report_links
from tests.conftest import DATA, REPO
from tests.github_fake import TOKEN, FakeGitHub, serving

PR = 7


@pytest.fixture()
def merged(tmp_path: Path) -> Path:
    out = tmp_path / "merged"
    shutil.copytree(DATA / "ci_basic", out, ignore=shutil.ignore_patterns("expected"))
    summary.write(out, report_links("https://github.com/o/r/actions/runs/1/artifacts/5"))
    return out


def _comment(
    merged: Path, github: FakeGitHub, token: str = TOKEN
) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run the comment step as the workflow does; its exit, output and job summary."""
    event = merged.parent / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": PR}}))
    step_summary = merged.parent / "step_summary.md"
    step_summary.write_text("")
    env = {
        "PATH": "/usr/bin:/bin",
        "GITHUB_ACTIONS": "true",
        "GITHUB_API_URL": github.url,
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_STEP_SUMMARY": str(step_summary),
        "GITHUB_TOKEN": token,
    }
    done = subprocess.run(
        [sys.executable, "-m", "ci", "comment", str(merged)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done, step_summary.read_text()


def test_the_comment_is_created_once_then_updated_in_place(merged: Path) -> None:
    with serving(FakeGitHub()) as github:
        others = [github.add(PR, f"review {i}") for i in range(PAGE_SIZE + 20)]
        first, _ = _comment(merged, github)
        assert first.returncode == 0, first.stderr
        assert f"PR {PR} comment created" in first.stderr
        (merged / "summary.md").write_text(f"{markdown.MARKER}\nsecond run\n")
        second, job_summary = _comment(merged, github)
    assert second.returncode == 0 and f"PR {PR} comment updated" in second.stderr
    marked = [c for c in github.comments[PR] if markdown.MARKER in c["body"]]
    assert [c["body"] for c in marked] == [f"{markdown.MARKER}\nsecond run\n"]
    assert [c["id"] for c in github.comments[PR][: len(others)]] == others
    assert ("GET", f"/repos/o/r/issues/{PR}/comments?per_page={PAGE_SIZE}&page=2") in (
        github.requests
    )
    assert job_summary == ""


@pytest.mark.parametrize(
    ("refusal", "token", "why"),
    [
        (403, TOKEN, "no permission to comment: GitHub API POST"),
        (0, "", "no permission to comment: GITHUB_TOKEN is not set"),
        (0, "wrong", "HTTP 401 Bad credentials"),
        (502, TOKEN, "failed: GitHub API POST"),
    ],
)
def test_a_comment_github_refuses_goes_to_the_job_summary_and_the_step_passes(
    merged: Path, refusal: int, token: str, why: str
) -> None:
    with serving(FakeGitHub(refuse_writes=refusal)) as github:
        done, job_summary = _comment(merged, github, token)
    assert done.returncode == 0, done.stderr
    assert github.comments.get(PR, []) == []
    body = (merged / "summary.md").read_text()
    assert job_summary.startswith("> The PR comment was not posted: ")
    assert markdown_cell(why) in job_summary.splitlines()[0]
    assert job_summary.endswith(body)
    (warning,) = done.stdout.splitlines()
    assert warning.startswith("::warning title=chperf PR comment::") and why in warning


def test_a_fork_is_named_as_the_likely_reason_of_a_403(merged: Path) -> None:
    with serving(FakeGitHub(refuse_writes=403)) as github:
        done, job_summary = _comment(merged, github)
    assert "HTTP 403 Resource not accessible by integration" in job_summary
    assert "a pull request from a fork gets a read-only token" in done.stderr
