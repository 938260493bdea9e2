"""ClickHouse's run count, 7 a side, on real servers: the paired test decides there. A patch
that clearly slows queries (the max_block_size 8192 overlay roughly doubles these top-k sorts)
is called slower, and the same server against itself is not called anything. At 7 runs only
the most extreme arrangement of a query's runs reaches the 1% level, so one disturbed run can
leave a query unstable: the test asks for one of the two, and never the wrong direction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO, run_chperf

pytestmark = pytest.mark.integration
SLOWED = ["--test", "sort_limit", "--query-index", "3", "--query-index", "4"]


def verdicts(out: Path) -> dict[int, dict[str, object]]:
    summary = json.loads((out / "summary.json").read_text())
    return {q["query_index"]: q for q in summary["queries"]}


def test_seven_runs_call_a_clear_slowdown_slower_and_an_aa_nothing(tmp_path: Path) -> None:
    slow = run_chperf(
        ["run", "--runs", "7", "--no-profile", "--out", str(tmp_path / "slow"), *SLOWED,
         "--patched-config", str(REPO / "overlays" / "max_block_size_8192")]
    )  # fmt: skip
    assert slow.returncode == 1, slow.stderr
    found = verdicts(tmp_path / "slow")
    called = [q for q in found.values() if q["verdict"] == "slower"]
    assert called and {q["verdict"] for q in found.values()} <= {"slower", "unstable"}, found
    for q in called:
        diff, low = float(q["diff"]), float(q["ci_low"])  # type: ignore[arg-type]
        assert q["runs"] == 7 and diff > 0.3 and low > 1.0  # the interval excludes no change
    aa = run_chperf(["run", "--runs", "7", "--no-profile", "--out", str(tmp_path / "aa"), *SLOWED])
    assert aa.returncode == 0, aa.stderr
    assert {q["verdict"] for q in verdicts(tmp_path / "aa").values()} <= {"unchanged", "unstable"}
