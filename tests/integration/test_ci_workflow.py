"""ci/github/perf-check.yml end to end: its jobs' scripts run verbatim, with the inputs the
workflow passes them (tests/workflow_runner.py evaluates its expressions), on two real shards
of the 26.9 engine fixture, and the comment step against GitHub's API on 127.0.0.1.

A fork's caller as in docs/ci.md: the reference binary from an artifact (its executable bit
dropped, as uploads do), the patched one a path on the runner, a tests directory of the fork
checked out sparsely with a weights file, the max_block_size overlay as an extra run option,
a budget, and a served report.
"""

from __future__ import annotations

import fnmatch
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from ci import annotation, check, markdown
from ci.links import ReportLinks, report_links
from tests.conftest import DATA, REPO, engine_binary
from tests.github_fake import TOKEN, FakeGitHub, serving
from tests.workflow_runner import JobRun, base_environ, evaluate, run_job

WORKFLOW = REPO / "ci" / "github" / "perf-check.yml"
ACTION = REPO / "ci" / "action" / "action.yml"
PR = 7
RUN_URL = "https://github.com/o/r/actions/runs/1"
HOSTED = "https://perf.example.invalid/pr-7/"
SHARDS = 2


@dataclass
class Artifacts:
    """The run's artifact store: upload-artifact keeps a copy, download-artifact restores."""

    root: Path
    stored: dict[str, Path] = field(default_factory=dict)

    def upload(self, given: dict[str, str], workspace: Path) -> dict[str, str]:
        name = given["name"]
        target = self.root / name
        shutil.rmtree(target, ignore_errors=True)
        for line in filter(None, (p.strip() for p in given["path"].splitlines())):
            source = workspace / line
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True)
            elif source.is_file():
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target / source.name)
        if target.exists():
            self.stored[name] = target
        return {"artifact-url": f"{RUN_URL}/artifacts/{len(self.stored)}"}

    def download(self, given: dict[str, str], workspace: Path) -> dict[str, str]:
        path = workspace / given["path"]
        if given.get("name"):
            shutil.copytree(self.stored[given["name"]], path, dirs_exist_ok=True)
        else:
            for name in sorted(fnmatch.filter(self.stored, given["pattern"])):
                shutil.copytree(self.stored[name], path / name, dirs_exist_ok=True)
        return {}


def _checkout(fork: Path) -> Any:
    def handler(given: dict[str, str], workspace: Path) -> dict[str, str]:
        target = workspace / given["path"]
        if given.get("repository"):  # chperf's own checkout
            assert (given["repository"], given["path"]) == ("o/chperf", "chperf-src")
            target.symlink_to(REPO, target_is_directory=True)
            return {}
        assert given.get("sparse-checkout-cone-mode") == "false"
        for pattern in filter(None, (p.strip() for p in given["sparse-checkout"].splitlines())):
            source = fork / pattern
            if source.is_dir():
                shutil.copytree(source, target / pattern)
            else:
                (target / pattern).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target / pattern)
        return {}

    return handler


def _setup(given: dict[str, str], workspace: Path) -> dict[str, str]:
    known = set(yaml.safe_load(ACTION.read_text())["inputs"])
    assert set(given) <= known, set(given) - known
    return {"root": str(workspace / "chperf-src")}


@dataclass
class Workflow:
    """The workflow's jobs run in order in one workspace per job, as on separate runners."""

    root: Path
    inputs: dict[str, Any]
    artifacts: Artifacts
    fork: Path
    environ: dict[str, str]
    document: dict[Any, Any] = field(default_factory=dict)
    jobs: int = 0

    def __post_init__(self) -> None:
        self.document = yaml.safe_load(WORKFLOW.read_text())
        declared = self.document[True]["workflow_call"]["inputs"]
        assert set(self.inputs) <= set(declared), set(self.inputs) - set(declared)
        defaults = {k: v.get("default") for k, v in declared.items() if not v.get("required")}
        self.inputs = {**defaults, **self.inputs}

    def context(self, needs: dict[str, JobRun], matrix: dict[str, Any]) -> dict[str, Any]:
        return {
            "inputs": self.inputs,
            "github": {"event_name": "pull_request", "token": TOKEN, "repository": "o/r"},
            "secrets": {"CHPERF_HISTORY_PASSWORD": ""},
            "runner": {"os": "Linux", "arch": "X64"},
            "needs": {
                name: {"result": run.status, "outputs": run.outputs} for name, run in needs.items()
            },
            "matrix": matrix,
        }

    def should_run(self, name: str, needs: dict[str, JobRun]) -> bool:
        condition = str(self.document["jobs"][name].get("if", "success()"))
        status = "success" if all(r.status == "success" for r in needs.values()) else "failure"
        return bool(evaluate(condition, self.context(needs, {}), status))

    def run(self, name: str, needs: dict[str, JobRun], matrix: dict[str, Any]) -> JobRun:
        """Each job on a fresh runner at the same workspace path, as GitHub's alike runners
        have it; the workspace is kept as job-N-NAME afterwards."""
        self.jobs += 1
        workspace = self.root / "work" / "r"
        workspace.mkdir(parents=True)
        handlers = {
            "actions/checkout@v4": _checkout(self.fork),
            "./chperf-src/ci/action": _setup,
            "actions/upload-artifact@v4": self.artifacts.upload,
            "actions/download-artifact@v4": self.artifacts.download,
        }
        job = self.document["jobs"][name]
        run = run_job(job, self.context(needs, matrix), workspace, handlers, self.environ)
        kept = workspace.rename(self.root / f"job-{self.jobs}-{name}")
        run.outputs["workspace"] = str(kept)
        return run


def _fork(root: Path) -> Path:
    """The fork's repository: its tests directory and a committed weights file."""
    fork = root / "fork"
    shutil.copytree(DATA / "shard_suite", fork / "tests" / "perf")
    (fork / "ci-weights.tsv").write_text("test\tweight\ngroup_mod\t3\nsum_numbers\t2\n")
    (fork / "unrelated.txt").write_text("not checked out\n")
    return fork


@dataclass
class Checked:
    workflow: Workflow
    plan: JobRun
    shards: list[JobRun]
    merges: list[JobRun]
    github: FakeGitHub
    fork_github: FakeGitHub


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Checked]:
    root = tmp_path_factory.mktemp("workflow")
    binary = engine_binary("26.9")
    artifacts = Artifacts(root / "artifacts")
    built = root / "build"
    built.mkdir()
    shutil.copy(binary, built / "clickhouse")
    (built / "clickhouse").chmod(0o644)  # an artifact keeps no executable bit
    artifacts.upload({"name": "clickhouse-reference", "path": "clickhouse"}, built)
    event = root / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": PR}}))
    with serving(FakeGitHub()) as github, serving(FakeGitHub(refuse_writes=403)) as fork_github:
        environ = {
            "GITHUB_ACTIONS": "true",
            "GITHUB_REPOSITORY": "o/r",
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_RUN_ID": "1",
        }
        workflow = Workflow(
            root,
            {
                "chperf_repository": "o/chperf",
                "reference_artifact": "clickhouse-reference",
                "reference_binary": "clickhouse",
                "patched_binary": str(binary),
                "tests": "tests/perf",
                "shards": SHARDS,
                "runs": 15,
                "budget": "20m",
                "shard_weights": "ci-weights.tsv",
                "run_options": f"--patched-config {REPO / 'overlays' / 'max_block_size_8192'}",
                "hosted_report": HOSTED,
            },
            artifacts,
            _fork(root),
            base_environ(REPO / ".venv" / "bin", {**environ, "GITHUB_API_URL": github.url}),
        )
        plan = workflow.run("plan", {}, {})
        strategy = workflow.document["jobs"]["shard"]["strategy"]
        matrix = evaluate(strategy["matrix"]["shard"], workflow.context({"plan": plan}, {}))
        shards = [workflow.run("shard", {"plan": plan}, {"shard": k}) for k in matrix]
        shard_result = "success" if all(s.status == "success" for s in shards) else "failure"
        needs = {"plan": plan, "shard": JobRun([], shard_result, "", {})}
        assert workflow.should_run("merge", needs)
        merges = [workflow.run("merge", needs, {}) for _ in range(2)]
        workflow.environ = {**workflow.environ, "GITHUB_API_URL": fork_github.url}
        merges.append(workflow.run("merge", needs, {}))
        yield Checked(workflow, plan, shards, merges, github, fork_github)


def test_the_plan_job_makes_the_shard_matrix(checked: Checked) -> None:
    assert checked.plan.status == "success"
    assert json.loads(checked.plan.outputs["shards"]) == [1, 2]


def test_each_shard_runs_its_part_in_the_repository_with_the_given_options(
    checked: Checked,
) -> None:
    tests: set[str] = set()
    for k, shard in enumerate(checked.shards, 1):
        assert shard.status == "success", shard.step("Run the shard").stderr[-3000:]
        out = checked.workflow.artifacts.stored[f"chperf-shard-{k}"]
        manifest = json.loads((out / "run.json").read_text())
        options = manifest["options"]
        assert (options["shard"], options["runs"]) == (f"{k}/{SHARDS}", 15)
        assert options["shard_weights"].endswith("ci-weights.tsv")
        reference = Path(manifest["servers"]["reference"]["binary"])
        assert reference.parts[-3:] == ("bin", "reference", "clickhouse")
        assert manifest["servers"]["patched"]["overlays"]
        rows = [line.split("\t") for line in (out / "tests.tsv").read_text().splitlines()[1:]]
        checkout = checked.workflow.root / "work" / "r" / "repo" / "tests" / "perf"
        assert rows and all(Path(r[1]).parent == checkout for r in rows)
        assert not tests & {r[0] for r in rows}
        tests |= {r[0] for r in rows}
    assert len(tests) == 4  # every test of the suite, each in one shard


def test_the_merge_job_exits_with_the_checks_code_and_uploads_the_report(
    checked: Checked,
) -> None:
    merge = checked.merges[0]
    merged = Path(merge.outputs["workspace"]) / "merged"
    result = check.load(merged)
    assert int(merge.step("Status, summary.md and the job summary").outputs["code"]) == (
        result.exit_code
    )
    assert merge.step("Set the check status").code == result.exit_code
    assert merge.status == ("success" if result.exit_code == 0 else "failure")
    report = checked.workflow.artifacts.stored["chperf-report"]
    assert (report / "report.html").is_file() and (report / "summary.json").is_file()
    assert not checked.workflow.should_run("history", {"merge": merge})


def _expected_links(merge: JobRun) -> ReportLinks:
    artifact = merge.step("Upload the report").outputs["artifact-url"]
    return report_links(artifact, HOSTED, RUN_URL)


def test_the_job_summary_and_the_annotations_are_the_checks(checked: Checked) -> None:
    merge = checked.merges[0]
    merged = Path(merge.outputs["workspace"]) / "merged"
    result, links = check.load(merged), _expected_links(merge)
    assert merge.summary == markdown.job_summary(result, links)
    assert f"[report artifact]({links.artifact_url})" in merge.summary
    printed = merge.step("Annotations").stdout.splitlines()
    assert printed == annotation.commands(result, links, "tests/perf")
    assert len(printed) == len(result.changed)  # five queries: within GitHub's limits
    for line, q in zip(printed, result.changed, strict=True):
        # on the test file in the fork's repository, not where a shard's runner had it
        assert line.split(" ", 1)[1].startswith(f"file=tests/perf/{Path(q.file).name},"), line


def test_the_pr_comment_is_posted_once_and_updated_in_place(checked: Checked) -> None:
    first, second = checked.merges[:2]
    marked = [c for c in checked.github.comments[PR] if markdown.MARKER in c["body"]]
    assert len(marked) == 1
    merged = Path(second.outputs["workspace"]) / "merged"
    assert marked[0]["body"] == (merged / "summary.md").read_text()
    methods = [m for m, _ in checked.github.requests if m != "GET"]
    assert methods == ["POST", "PATCH"]
    for run in (first, second):
        assert run.step("Post or update the PR comment").outcome == "success"


def test_every_link_of_the_comment_into_the_report_resolves(checked: Checked) -> None:
    merged = Path(checked.merges[1].outputs["workspace"]) / "merged"
    body = (merged / "summary.md").read_text()
    result = check.load(merged)
    assert f"({HOSTED}report.html)" in body and (merged / "report.html").is_file()
    linked = [line for line in body.splitlines() if f"]({HOSTED}" in line and "| " in line]
    assert len(linked) == min(len(result.changed), markdown.COMMENT_ROWS)
    for line in linked:
        target = line.split(f"]({HOSTED}", 1)[1].split(")", 1)[0]
        page, _, anchor = target.partition("#")
        assert (merged / page).is_file(), target
        assert not anchor or f'id="{anchor}"' in (merged / page).read_text(), target


def test_a_forks_read_only_token_puts_the_comment_in_the_job_summary(checked: Checked) -> None:
    fork_run = checked.merges[2]
    step = fork_run.step("Post or update the PR comment")
    assert step.outcome == "success", step.stderr
    assert checked.fork_github.comments == {}
    merged = Path(fork_run.outputs["workspace"]) / "merged"
    assert "> The PR comment was not posted: no permission to comment" in fork_run.summary
    assert fork_run.summary.endswith((merged / "summary.md").read_text())
    assert step.stdout.startswith("::warning title=chperf PR comment::")
    assert fork_run.status == checked.merges[0].status  # the check's code alone decides
