"""Tests written in the style of ClickHouse's tests/performance run unmodified: what the
server supports is measured, the rest becomes recorded errors with the server's message."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.conftest import DATA, engine_binary, run_chperf

pytestmark = pytest.mark.integration


def verdicts(out: Path) -> dict[tuple[str, int], dict[str, str]]:
    with (out / "verdicts.tsv").open() as f:
        rows = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        return {(r["test"], int(r["query_index"])): r for r in rows}


# What each engine lacks: 18.16 predates these functions; a modern server has them all.
UNSUPPORTED = {
    "18.16": {("numbers_mt", 1): "numbers_mt", ("numbers_mt", 2): "zeros"},
    "26.9": {},
}  # fmt: skip


@pytest.mark.parametrize("engine", sorted(UNSUPPORTED))
def test_clickhouse_style_tests_run_what_the_server_supports(tmp_path: Path, engine: str) -> None:
    server_binary = engine_binary(engine)
    out = tmp_path / "out"
    result = run_chperf(
        ["run", "--tests", str(DATA / "clickhouse_style"), "--runs", "3", "--no-profile",
         "--out", str(out), "--reference", str(server_binary), "--patched", str(server_binary)]
    )  # fmt: skip
    assert result.returncode in (1, 4), result.stderr
    assert "Traceback" not in result.stderr
    legacy = DATA / "clickhouse_style" / "legacy_loop.xml"
    # One line for all of a test's legacy elements, at the first of them.
    notes = [line for line in result.stderr.splitlines() if f"{legacy}:" in line]
    assert len(notes) == 1 and f"warning: {legacy}:2: legacy " in notes[0], notes
    for element in ("<type>", "<stop_conditions>", "<main_metric>"):
        assert element in notes[0]
    found = verdicts(out)
    assert len(found) == 8
    # Its <preconditions> name a dataset these servers do not have: skipped, with the reason.
    skipped = {k for k in found if k[0] == "legacy_loop"}
    for key in skipped:
        assert found[key]["verdict"] == "skipped"
        assert "table test.hits does not exist" in found[key]["reason"]
    unsupported = UNSUPPORTED[engine]
    for key, name in unsupported.items():
        assert found[key]["verdict"] == "error"
        assert f"Unknown table function {name}" in found[key]["reason"]
    measured = set(found) - set(unsupported) - skipped
    # 3 runs a side: too few for the paired test to decide anything.
    assert {found[k]["verdict"] for k in measured} == {"inconclusive"}
    assert all(int(found[k]["runs_reference"]) == 3 for k in measured)
