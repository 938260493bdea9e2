"""Two real shard runs merged equal one unsharded run's queries; bad merges are refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from artifacts.tables import QUERIES, RUNS, TESTS
from artifacts.tsv import read_table
from tests.conftest import DATA, run_chperf

pytestmark = pytest.mark.integration
SUITE = DATA / "shard_suite"
RUNS_PER_SIDE = 3


def _run(out: Path, server_binary: Path, *extra: str) -> None:
    result = run_chperf(
        ["run", "--tests", str(SUITE), "--runs", str(RUNS_PER_SIDE), "--out", str(out),
         "--reference", str(server_binary), "--patched", str(server_binary), *extra]
    )  # fmt: skip
    assert result.returncode in (1, 4), result.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, server_binary: Path) -> Path:
    root = tmp_path_factory.mktemp("merge")
    _run(root / "whole", server_binary)
    for k in (1, 2):
        _run(root / f"shard{k}", server_binary, "--shard", f"{k}/2")
    return root


def _queries(out: Path) -> set[tuple[str, int, str]]:
    return {(q.test, q.query_index, q.query) for q in read_table(out, QUERIES).rows}


def _verdict_keys(out: Path) -> set[tuple[str, int]]:
    summary = json.loads((out / "summary.json").read_text())
    return {(q["test"], q["query_index"]) for q in summary["queries"]}


def test_merge_of_two_real_shards_equals_the_query_set_of_an_unsharded_run(runs: Path) -> None:
    merged = runs / "merged"
    result = run_chperf(["merge", str(runs / "shard1"), str(runs / "shard2"), "--out", str(merged)])
    assert result.returncode in (1, 4), result.stderr
    assert _queries(runs / "shard1") and _queries(runs / "shard2")
    assert not _queries(runs / "shard1") & _queries(runs / "shard2")
    assert _queries(merged) == _queries(runs / "whole")
    assert _verdict_keys(merged) == _verdict_keys(runs / "whole")
    assert (merged / "report.html").exists()
    shard_runs = [read_table(runs / f"shard{k}", RUNS).rows for k in (1, 2)]
    assert read_table(merged, RUNS).rows == shard_runs[0] + shard_runs[1]
    assert {t.test for t in read_table(merged, TESTS).rows} == {
        t.test for t in read_table(runs / "whole", TESTS).rows
    }


def test_merged_manifest_lists_the_shards_and_takes_the_first_shards_servers(runs: Path) -> None:
    merged = runs / "merged"
    manifest = json.loads((merged / "run.json").read_text())
    first = json.loads((runs / "shard1" / "run.json").read_text())
    assert [s["shard"] for s in manifest["shards"]] == ["1/2", "2/2"]
    assert manifest["servers"] == first["servers"]
    assert manifest["options"]["shard"] is None
    assert first["options"]["shard"] == "1/2"
    again = runs / "merged_again"
    run_chperf(["merge", str(runs / "shard2"), str(runs / "shard1"), "--out", str(again)])
    assert json.loads((again / "run.json").read_text())["run_id"] == manifest["run_id"]


def test_merge_refuses_a_missing_shard(runs: Path, tmp_path: Path) -> None:
    result = run_chperf(["merge", str(runs / "shard1"), "--out", str(tmp_path / "m")])
    assert result.returncode == 2
    assert "shard 2/2 missing" in result.stderr
    assert not (tmp_path / "m").exists()


def test_merge_refuses_shards_of_different_binaries(runs: Path, tmp_path: Path) -> None:
    other = tmp_path / "shard2"
    shutil.copytree(runs / "shard2", other)
    manifest = json.loads((other / "run.json").read_text())
    manifest["servers"]["patched"]["sha256"] = "0" * 64
    (other / "run.json").write_text(json.dumps(manifest))
    result = run_chperf(["merge", str(runs / "shard1"), str(other), "--out", str(tmp_path / "m")])
    assert result.returncode == 2
    assert "different patched servers: sha256" in result.stderr


def test_shards_placed_on_different_cpus_merge_and_each_keeps_its_placement(
    runs: Path, tmp_path: Path
) -> None:
    """--pin-cpu resolves per shard (auto: against the shard's own tests and machine)."""
    other = tmp_path / "shard2"
    shutil.copytree(runs / "shard2", other)
    manifest = json.loads((other / "run.json").read_text())
    first = json.loads((runs / "shard1" / "run.json").read_text())["options"]
    assert first["pin_cpus"] != [0]
    manifest["options"]["pin_cpus"] = [0]
    manifest["options"]["pin"] = "pinned to CPU 0 (--pin-cpu 0)"
    (other / "run.json").write_text(json.dumps(manifest))
    merged = tmp_path / "m"
    result = run_chperf(["merge", str(runs / "shard1"), str(other), "--out", str(merged)])
    assert result.returncode in (1, 4), result.stderr
    written = json.loads((merged / "run.json").read_text())
    assert written["options"]["pin_cpus"] is None
    assert written["options"]["pin"] is None
    assert [s["pin"] for s in written["shards"]] == [first["pin"], manifest["options"]["pin"]]
    assert [s["pin_cpus"] for s in written["shards"]] == [first["pin_cpus"], [0]]


def test_merge_refuses_shards_run_with_different_options(runs: Path, tmp_path: Path) -> None:
    other = tmp_path / "shard2"
    shutil.copytree(runs / "shard2", other)
    manifest = json.loads((other / "run.json").read_text())
    manifest["options"]["runs"] = 7
    (other / "run.json").write_text(json.dumps(manifest))
    result = run_chperf(["merge", str(runs / "shard1"), str(other), "--out", str(tmp_path / "m")])
    assert result.returncode == 2
    assert "different options: runs = 3" in result.stderr


def test_shards_with_one_overlay_at_different_paths_merge_and_other_contents_do_not(
    runs: Path, tmp_path: Path
) -> None:
    """Runners that check out at different paths pass the overlay at different paths: the
    merge compares the overlays' content digest, not where they lay."""
    shards = []
    for k, checkout in ((1, "/runner-a/_work"), (2, "/runner-b/_work")):
        shard = tmp_path / f"shard{k}"
        shutil.copytree(runs / f"shard{k}", shard)
        manifest = json.loads((shard / "run.json").read_text())
        assert "overlays_sha256" in manifest["servers"]["patched"]
        manifest["servers"]["patched"]["overlays"] = [f"{checkout}/overlays/max_block_size_8192"]
        manifest["servers"]["patched"]["overlays_sha256"] = "ab" * 32
        (shard / "run.json").write_text(json.dumps(manifest))
        shards.append(shard)
    result = run_chperf(["merge", *map(str, shards), "--out", str(tmp_path / "m")])
    assert result.returncode in (1, 4), result.stderr
    manifest = json.loads((shards[1] / "run.json").read_text())
    manifest["servers"]["patched"]["overlays_sha256"] = "cd" * 32
    (shards[1] / "run.json").write_text(json.dumps(manifest))
    result = run_chperf(["merge", *map(str, shards), "--out", str(tmp_path / "m2")])
    assert result.returncode == 2
    assert "different patched servers: overlays_sha256" in result.stderr
