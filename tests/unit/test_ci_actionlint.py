"""actionlint (built into tools/bin by `make setup`) finds nothing in the workflow, the setup
action and the example callers of docs/ci.md, laid out as a fork's repository holds them."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

ACTIONLINT = REPO / "tools" / "bin" / "actionlint"
WORKFLOW = REPO / "ci" / "github" / "perf-check.yml"
ACTION_DIR = REPO / "ci" / "action"
DOCS = REPO / "docs" / "ci.md"
# A caller in docs/ci.md: a ```yaml block whose first line names its place in the fork.
_CALLER = re.compile(r"^```yaml\n# (\.github/workflows/[\w.-]+\.yml)\n(.*?)^```$", re.S | re.M)
# The name the docs tell a fork to give the reusable workflow.
FORK_WORKFLOW = ".github/workflows/chperf.yml"


def _actionlint() -> Path:
    if not ACTIONLINT.is_file():  # `make setup` builds it; a test run without it is broken
        pytest.fail(f"{ACTIONLINT} is missing; run `make setup` (or `make actionlint`)")
    return ACTIONLINT


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    """actionlint over every workflow of `root`, with shellcheck on the scripts."""
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.fail("shellcheck is missing; run `make setup`")
    return subprocess.run(
        [str(_actionlint()), "-no-color", "-shellcheck", shellcheck, "-pyflakes", ""],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def example_callers() -> dict[str, str]:
    return {m.group(1): m.group(2) for m in _CALLER.finditer(DOCS.read_text(encoding="utf-8"))}


def _fork(root: Path) -> Path:
    """A fork's repository: the workflow and the callers in .github/workflows, and chperf's
    checkout (for the action) where the workflow puts it."""
    workflows = root / ".github" / "workflows"
    workflows.mkdir(parents=True)
    shutil.copy(WORKFLOW, root / FORK_WORKFLOW)
    for path, text in example_callers().items():
        (root / path).write_text(f"# {path}\n{text}")
    shutil.copytree(ACTION_DIR, root / "chperf-src" / "ci" / "action")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def test_docs_have_an_example_caller_of_the_workflow() -> None:
    callers = example_callers()
    assert callers, "docs/ci.md: no ```yaml block starting with `# .github/workflows/...`"
    assert all(f"uses: ./{FORK_WORKFLOW}" in text for text in callers.values())


def test_actionlint_finds_nothing_in_the_workflow_the_action_and_the_callers(
    tmp_path: Path,
) -> None:
    done = _lint(_fork(tmp_path / "fork"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""


def test_actionlint_here_reports_a_mistake_in_a_workflow(tmp_path: Path) -> None:
    """The check above can fail: an unknown input and a shell mistake are findings."""
    root = _fork(tmp_path / "fork")
    text = (root / FORK_WORKFLOW).read_text()
    text = text.replace("${{ inputs.budget }}", "${{ inputs.budjet }}", 1)
    text = text.replace("cd repo\n", "cd $UNQUOTED_DIR\n", 1)
    (root / FORK_WORKFLOW).write_text(text)
    done = _lint(root)
    assert done.returncode == 1
    assert 'property "budjet" is not defined' in done.stdout
    assert "SC2086" in done.stdout  # shellcheck: double quote to prevent word splitting
