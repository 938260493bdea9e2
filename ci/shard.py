"""Which tests a shard `K/N` runs: deterministic, stable, balanced when timings are known.

Rendezvous hashing: a test goes to the shard that ranks best by sha256(name, shard), which
depends on its own name and N only, so adding or removing a test moves no other test and
machines that list the tests in a different order agree.

Hashing balances the number of tests, not their duration. Weights (a previous run's
tests.tsv) pack the tests they name heaviest first into their most preferred shard under
capacity; tests they lack are placed by hashing alone. The plan depends on the weights file
and N only, never on the tests on disk: keep that file in the repository and refresh it
deliberately, since new timings may move tests.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from artifacts.errors import ChperfError

# Load above the mean a shard may take before a weighted test goes elsewhere: fewer moves
# when timings change a little, without one shard running far longer than the others.
BALANCE_SLACK = 0.10
# Tests with zero recorded time (skipped or failed last time) still cost a setup: a floor
# keeps them from all landing on one shard for free.
MIN_WEIGHT_S = 0.001

_SHARD_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count`, 1-based as in the CI matrix (`--shard 2/4`)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = _SHARD_RE.match(text)
        if not match:
            raise ValueError(f"{text!r}: expected K/N, e.g. 2/4")
        index, count = int(match.group(1)), int(match.group(2))
        if count < 1 or not 1 <= index <= count:
            raise ValueError(f"{text!r}: expected 1 <= K <= N in K/N")
        return cls(index, count)


@dataclass(frozen=True)
class ShardWeights:
    source: str
    weights: tuple[tuple[str, float], ...]  # (test, seconds), sorted by test name

    def as_dict(self) -> dict[str, float]:
        return dict(self.weights)


def score(test: str, shard: int) -> bytes:
    """The rendezvous score of (test, shard); a stable hash, unlike Python's hash()."""
    return hashlib.sha256(f"{test}\x00{shard}".encode()).digest()


def preference(test: str, count: int) -> list[int]:
    return sorted(range(1, count + 1), key=lambda k: score(test, k), reverse=True)


def balanced_plan(weights: ShardWeights, count: int) -> dict[str, int]:
    """Pack the weighted tests into `count` shards; depends on the weights and count only."""
    items = sorted(
        ((name, max(weight, MIN_WEIGHT_S)) for name, weight in weights.weights),
        key=lambda item: (-item[1], item[0]),
    )
    capacity = sum(w for _, w in items) / count * (1 + BALANCE_SLACK)
    loads = dict.fromkeys(range(1, count + 1), 0.0)
    plan: dict[str, int] = {}
    for name, weight in items:
        order = preference(name, count)
        fitting = [k for k in order if loads[k] + weight <= capacity]
        chosen = fitting[0] if fitting else min(order, key=lambda k: loads[k])
        loads[chosen] += weight
        plan[name] = chosen
    return plan


def assign(tests: Iterable[str], count: int, weights: ShardWeights | None = None) -> dict[str, int]:
    plan = balanced_plan(weights, count) if weights else {}
    return {name: plan.get(name) or preference(name, count)[0] for name in tests}


def select_paths(
    paths: Sequence[Path], shard: Shard, weights: ShardWeights | None = None
) -> list[Path]:
    """The test files of `shard`; a test's name is its file stem, as everywhere in chperf."""
    shards = assign({p.stem for p in paths}, shard.count, weights)
    return [p for p in paths if shards[p.stem] == shard.index]


def read_weights(path: Path) -> ShardWeights:
    """Read a previous run's tests.tsv (test, wall_time) or a `test<TAB>weight` TSV."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ChperfError(f"shard weights {path}: cannot read: {e}") from e
    header = lines[0].split("\t") if lines else []
    column = "wall_time" if "wall_time" in header else "weight"
    if "test" not in header or column not in header:
        raise ChperfError(
            f"{path}:1: shard weights need a header with the columns test and weight "
            f"(or a chperf tests.tsv with test and wall_time); found {header!r}",
            hint="pass a previous run's tests.tsv, or a TSV file with the header test<TAB>weight",
        )
    name_at, weight_at = header.index("test"), header.index(column)
    weights: dict[str, float] = {}
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        values = line.split("\t")
        weight = _weight(path, number, values, weight_at)
        name = values[name_at] if name_at < len(values) else ""
        if not name:
            raise ChperfError(f"{path}:{number}: empty test name")
        # A merged tests.tsv may name a test twice (error, then ran): the larger time counts.
        weights[name] = max(weight, weights.get(name, 0.0))
    return ShardWeights(str(path), tuple(sorted(weights.items())))


def _weight(path: Path, number: int, values: list[str], at: int) -> float:
    text = values[at] if at < len(values) else ""
    try:
        weight = float(text)
    except ValueError:
        weight = math.nan
    if not math.isfinite(weight) or weight < 0:
        raise ChperfError(
            f"{path}:{number}: weight {text!r} is not a non-negative number of seconds"
        )
    return weight
