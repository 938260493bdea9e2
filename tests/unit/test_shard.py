"""Sharding: shards partition the suite, stay stable when tests come and go, and balance."""

from __future__ import annotations

from pathlib import Path

import pytest

from artifacts.errors import ChperfError
from ci.shard import Shard, ShardWeights, assign, read_weights, select_paths
from runner.options import RunOptions, ShardSelection
from runner.selection import load_tests
from runner.server import ServerSpec
from runner.testdef import discover
from tests.conftest import DATA

SUITE = [f"test_{n:03d}" for n in range(200)]


def _paths(names: list[str]) -> list[Path]:
    return [Path("perf_tests") / f"{n}.xml" for n in names]


def test_shards_one_two_three_of_three_partition_the_suite() -> None:
    paths = _paths(SUITE)
    shards = [select_paths(paths, Shard(k, 3)) for k in (1, 2, 3)]
    assert sorted(p for s in shards for p in s) == sorted(paths)
    assert sum(len(s) for s in shards) == len(paths)
    assert all(40 <= len(s) <= 95 for s in shards)  # hashing spreads the tests


def test_adding_a_test_file_moves_no_other_test() -> None:
    before = assign(SUITE, 3)
    after = assign([*SUITE, "new_test"], 3)
    assert {n: after[n] for n in SUITE} == before


def test_removing_a_test_file_moves_no_other_test() -> None:
    before = assign(SUITE, 4)
    after = assign(SUITE[1:], 4)
    assert {n: before[n] for n in SUITE[1:]} == after


def test_assignment_does_not_depend_on_the_order_of_tests() -> None:
    assert assign(SUITE, 5) == assign(list(reversed(SUITE)), 5)


def test_weights_balance_the_shards_where_hashing_alone_does_not() -> None:
    heavy = {f"heavy_{n}": 100.0 for n in range(6)}
    light = {f"light_{n}": 1.0 for n in range(30)}
    weights = ShardWeights("w.tsv", tuple(sorted({**heavy, **light}.items())))
    names = sorted({**heavy, **light})
    shards = assign(names, 3, weights)
    loads = [sum(weights.as_dict()[n] for n in names if shards[n] == k) for k in (1, 2, 3)]
    assert max(loads) <= sum(loads) / 3 * 1.1 + 1.0
    assert sorted(shards[n] for n in heavy) == [1, 1, 2, 2, 3, 3]


def test_with_fixed_weights_a_new_test_moves_no_other_test() -> None:
    weights = ShardWeights("w.tsv", tuple((n, float(i % 7 + 1)) for i, n in enumerate(SUITE)))
    before = assign(SUITE, 3, weights)
    after = assign([*SUITE, "new_test"], 3, weights)
    assert {n: after[n] for n in SUITE} == before
    assert after["new_test"] == assign(["new_test"], 3)["new_test"]  # placed by hash alone


@pytest.mark.parametrize(
    ("text", "expected"), [("1/3", Shard(1, 3)), ("3/3", Shard(3, 3)), (" 2 / 4 ", Shard(2, 4))]
)
def test_shard_parses_k_of_n(text: str, expected: Shard) -> None:
    assert Shard.parse(text) == expected
    assert str(expected) == f"{expected.index}/{expected.count}"


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "1", "a/b", "1/3/5"])
def test_shard_rejects_anything_but_k_of_n_with_k_in_range(text: str) -> None:
    with pytest.raises(ValueError, match="K/N"):
        Shard.parse(text)


def test_weights_are_read_from_a_previous_runs_tests_tsv(tmp_path: Path) -> None:
    path = tmp_path / "tests.tsv"
    path.write_text(
        "test\tfile\tstatus\treason\twall_time\n"
        "a\ta.xml\tran\t\t12.5\nb\tb.xml\tskipped\ttagged long\t0.0\n"
    )
    assert read_weights(path).as_dict() == {"a": 12.5, "b": 0.0}


def test_weights_are_read_from_a_test_weight_tsv(tmp_path: Path) -> None:
    path = tmp_path / "weights.tsv"
    path.write_text("test\tweight\na\t3\nb\t4.5\n")
    assert read_weights(path).as_dict() == {"a": 3.0, "b": 4.5}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name\tseconds\na\t1\n", ":1: shard weights need a header"),
        ("test\tweight\na\tfast\n", ":2: weight 'fast'"),
        ("test\tweight\na\t1\nb\t-2\n", ":3: weight '-2'"),
    ],
)
def test_bad_weights_file_names_the_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "weights.tsv"
    path.write_text(text)
    with pytest.raises(ChperfError, match=message):
        read_weights(path)


def test_load_tests_keeps_only_the_tests_of_the_shard() -> None:
    def options(shard: Shard | None) -> RunOptions:
        spec = ServerSpec("reference", Path("clickhouse"))
        tests = (DATA / "shard_suite",)
        selection = None
        if shard is not None:
            files = tuple(select_paths(discover(list(tests)), shard, None))
            selection = ShardSelection(str(shard), shard.count, files)
        return RunOptions(spec, spec, tests, Path("out"), shard=selection)

    everything = {t.name for t in load_tests(options(None)).tests}
    parts = [{t.name for t in load_tests(options(Shard(k, 2))).tests} for k in (1, 2)]
    assert parts[0] | parts[1] == everything and not parts[0] & parts[1]
    assert parts[0] and parts[1]  # the merge test needs two non-empty shards
